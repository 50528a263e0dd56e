"""The local DAX cluster: one item cache, served by the emulator at ``/dax``, for every local
instance (`make dev`'s endpoint and task worker, every `make dev-second`).

On AWS every endpoint and worker instance reads and writes through one DAX cluster, so a note
appended through one instance is what an eventually consistent read through any other returns.
A cache per process would instead let each instance serve its own copy for a whole item TTL,
which no deployment does. So the cache lives where every local instance already connects: the
emulator's process. A client reaches it as DynamoDB at ``<emulator>/dax`` (the DynamoDB wire
protocol: botocore keeps the endpoint's path), and it applies :class:`ItemCacheStandIn`'s rules
to the wire requests, reading and writing the emulator's table in process.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.test import Client
from werkzeug.wrappers import Request, Response

from local.atomic_moto import WsgiApp
from local.bootstrap import DUMMY_SECRET
from local.dax_standin import DEFAULT_ITEM_TTL_S, ItemCacheStandIn

PATH = "/dax"
TARGET_PREFIX = "DynamoDB_20120810."
JSON_CONTENT = "application/x-amz-json-1.0"
# The operations the item cache decides (the stand-in's methods); any other passes through as sent.
CACHED_OPERATIONS = {
    "GetItem": "get_item",
    "BatchGetItem": "batch_get_item",
    "PutItem": "put_item",
    "UpdateItem": "update_item",
    "DeleteItem": "delete_item",
    "BatchWriteItem": "batch_write_item",
    "TransactWriteItems": "transact_write_items",
}


class TableAnswered(Exception):
    """The table refused a request (a failed condition, a cancelled transaction...): its answer
    goes back to the caller byte for byte, whatever the cache did."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


class WireTable:
    """The emulator's DynamoDB, called in process in the wire format (``get_item(**request)``
    posts ``request`` as JSON), for the stand-in to read and write through."""

    def __init__(self, emulator: WsgiApp, region: str) -> None:
        self._client = Client(emulator)
        # moto picks the backend (service and region) from the credential scope of the signature.
        self._headers = {
            "Content-Type": JSON_CONTENT,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={DUMMY_SECRET}/20200101/{region}/dynamodb/aws4_request",
        }

    def __getattr__(self, operation: str) -> Callable[..., dict[str, Any]]:
        target = next(name for name, method in CACHED_OPERATIONS.items() if method == operation)

        def call(**request: Any) -> dict[str, Any]:
            answer = self._client.post(
                "/", data=json.dumps(request), headers={**self._headers, "X-Amz-Target": TARGET_PREFIX + target}
            )
            if answer.status_code != 200:
                raise TableAnswered(Response(answer.get_data(), answer.status, answer.headers))
            found: dict[str, Any] = json.loads(answer.get_data())
            return found

        return call


class DaxCluster:
    """The WSGI app at ``/dax``: the item-cache operations through the shared stand-in, anything
    else (queries, scans) straight to the emulator."""

    def __init__(self, emulator: WsgiApp, region: str, item_ttl_s: float = DEFAULT_ITEM_TTL_S) -> None:
        self._emulator = emulator
        self.cache = ItemCacheStandIn(WireTable(emulator, region), item_ttl_s=item_ttl_s)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        request = Request(environ)
        operation = CACHED_OPERATIONS.get(request.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX))
        if operation is None:
            return self._emulator(environ, start_response)
        try:
            answer = getattr(self.cache, operation)(**json.loads(request.get_data()))
        except TableAnswered as refused:
            return refused.response(environ, start_response)
        return Response(json.dumps(answer), 200, content_type=JSON_CONTENT)(environ, start_response)


def with_dax_cluster(emulator: WsgiApp, region: str, item_ttl_s: float = DEFAULT_ITEM_TTL_S) -> WsgiApp:
    """The emulator's app, with the DAX cluster at :data:`PATH` beside it."""
    cluster = DaxCluster(emulator, region, item_ttl_s)

    def dispatch(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        if path == PATH or path.startswith(PATH + "/"):
            # What passes through reaches moto at its own path, as the DAX cluster's would the table.
            return cluster({**environ, "PATH_INFO": path.removeprefix(PATH) or "/"}, start_response)
        return emulator(environ, start_response)

    return dispatch


def endpoint_url(aws_endpoint: str) -> str:
    """The DAX cluster's endpoint on the emulator at ``aws_endpoint``."""
    return aws_endpoint + PATH
