"""save_bookmark and list_bookmarks: links a caller keeps for later, in the app's own table.

The worked example of a tool with its own AWS resource: the table is created by the app's CDK
hook (functions/endpoint/app_resources.py), built into a typed dependency once per process
(``build_deps`` in this package's ``__init__``), and reached as ``ctx.services.deps``. The tools
are plain functions: the platform runs them in a worker thread, so the blocking DynamoDB calls
never hold the event loop. Bookmarks belong to the caller's principal, not to a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from mcp_platform import ToolContext, ToolError, tool
from mcp_tools import Deps
from mcp_tools._bookmark_store import MAX_TITLE_CHARS, MAX_URL_CHARS, Bookmark, Bookmarks


@dataclass(frozen=True)
class BookmarkPage:
    bookmarks: list[Bookmark]
    next_cursor: str | None
    """Pass it back as ``cursor`` for the next page; None on the last page."""


@tool(annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False})
def save_bookmark(
    ctx: ToolContext[Deps],
    url: Annotated[str, "The link (http or https)"],
    title: Annotated[str, "A few words to find it by"] = "",
) -> Bookmark:
    """Save a link for later; saving the same link again replaces its title."""
    if not url.startswith(("https://", "http://")) or len(url) > MAX_URL_CHARS:
        raise ToolError(f"url must be an http(s) link of at most {MAX_URL_CHARS} characters")
    if len(title) > MAX_TITLE_CHARS:
        raise ToolError(f"title must be at most {MAX_TITLE_CHARS} characters")
    return bookmarks(ctx).save(ctx.principal, url, title)


@tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def list_bookmarks(
    ctx: ToolContext[Deps],
    limit: Annotated[int, "At most this many (1-100)"] = 20,
    cursor: Annotated[str | None, "next_cursor of the previous page"] = None,
) -> BookmarkPage:
    """The links you saved, in URL order, a page at a time."""
    if not 1 <= limit <= 100:
        raise ToolError("limit must be 1-100")
    found, after = bookmarks(ctx).page(ctx.principal, limit=limit, after=cursor)
    return BookmarkPage(bookmarks=found, next_cursor=after)


def bookmarks(ctx: ToolContext[Deps]) -> Bookmarks:
    if ctx.services.deps.bookmarks is None:
        raise ToolError("Bookmarks are not configured on this deployment (no BOOKMARKS_TABLE)")
    return ctx.services.deps.bookmarks
