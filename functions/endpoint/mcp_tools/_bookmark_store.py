"""The bookmarks table of the starter app (not a feature module: no spec here).

One item per saved link: partition key ``owner`` (the caller's principal), sort key ``url``.
The table is the app's own (functions/endpoint/app_resources.py creates it and names it in
``BOOKMARKS_TABLE``); the tools reach it through ``ctx.services.deps`` (``mcp_tools.Deps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # boto3-stubs are a development dependency, not shipped with the function
    from mypy_boto3_dynamodb.client import DynamoDBClient

MAX_URL_CHARS = 2048
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class Bookmark:
    url: str
    title: str
    saved_at: str


class Bookmarks:
    def __init__(self, dynamodb: DynamoDBClient, table: str) -> None:
        self.dynamodb = dynamodb
        self.table = table

    def save(self, owner: str, url: str, title: str) -> Bookmark:
        """Save ``url`` for ``owner`` (saving it again replaces its title)."""
        bookmark = Bookmark(url=url, title=title, saved_at=datetime.now(UTC).isoformat(timespec="seconds"))
        item = {"owner": {"S": owner}, "url": {"S": url}, "title": {"S": title}, "saved_at": {"S": bookmark.saved_at}}
        self.dynamodb.put_item(TableName=self.table, Item=item)
        return bookmark

    def page(self, owner: str, *, limit: int, after: str | None = None) -> tuple[list[Bookmark], str | None]:
        """Up to ``limit`` of ``owner``'s bookmarks in URL order, from the one after ``after``;
        and the URL to continue after (None: that was the last page)."""
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#owner = :owner",
            "ExpressionAttributeNames": {"#owner": "owner"},
            "ExpressionAttributeValues": {":owner": {"S": owner}},
            "Limit": limit,
        }
        if after is not None:
            query["ExclusiveStartKey"] = {"owner": {"S": owner}, "url": {"S": after}}
        answer = self.dynamodb.query(**query)
        found = [
            Bookmark(url=item["url"]["S"], title=item["title"]["S"], saved_at=item["saved_at"]["S"])
            for item in answer.get("Items", [])
        ]
        last = answer.get("LastEvaluatedKey")
        return found, last["url"]["S"] if last else None
