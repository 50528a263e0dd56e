"""One ordered log of what an ASGI app sent and what reached AWS, to prove "X before Y".

``Timeline.app(inner)`` wraps the endpoint (HTTP and lifespan messages are logged in the order
the app sends them); ``watch_kinesis``/``watch_sqs`` log every PutRecords / SendMessageBatch
that AWS (moto) answered, with the event bodies it carried. Hooks run in the producer's
worker thread, the ASGI messages on the event loop: one lock orders them.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    kind: str  # "send" | "lifespan" | "PutRecords" | "SendMessageBatch"
    request: int = 0  # which HTTP request (1-based, in arrival order) for "send"
    message_type: str = ""
    more_body: bool = False
    events: tuple[dict[str, Any], ...] = ()  # tool-call events carried by an AWS call


@dataclass
class Timeline:
    entries: list[Entry] = field(default_factory=list)
    bodies: dict[int, bytes] = field(default_factory=dict)  # request number -> request body
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _requests: int = 0

    def _log(self, entry: Entry) -> None:
        with self._lock:
            self.entries.append(entry)

    def app(self, inner: Any) -> Any:
        async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":

                async def lifespan_send(message: dict[str, Any]) -> None:
                    self._log(Entry("lifespan", message_type=message["type"]))
                    await send(message)

                await inner(scope, receive, lifespan_send)
                return
            if scope["type"] != "http" or scope["path"] != "/mcp":
                await inner(scope, receive, send)
                return
            with self._lock:
                self._requests += 1
                number = self._requests
            self.bodies[number] = b""

            async def recording_receive() -> dict[str, Any]:
                message: dict[str, Any] = await receive()
                if message["type"] == "http.request":
                    self.bodies[number] += message.get("body", b"")
                return message

            async def recording_send(message: dict[str, Any]) -> None:
                more = bool(message.get("more_body", False))
                self._log(Entry("send", number, message["type"], more))
                await send(message)

            await inner(scope, recording_receive, recording_send)

        return wrapped

    def watch_kinesis(self, kinesis: Any) -> None:
        """Log each PutRecords with the events Kinesis accepted (a SequenceNumber each)."""

        def after(parsed: dict[str, Any], context: dict[str, Any], **kwargs: Any) -> None:
            records = context.get("timeline_params", {}).get("Records", [])
            results = parsed.get("Records", [])
            accepted = [
                json.loads(r["Data"]) for r, res in zip(records, results, strict=False) if "SequenceNumber" in res
            ]
            if accepted:
                self._log(Entry("PutRecords", events=tuple(accepted)))

        kinesis.meta.events.register("before-parameter-build.kinesis.PutRecords", _keep_params)
        kinesis.meta.events.register("after-call.kinesis.PutRecords", after)

    def watch_sqs(self, sqs: Any) -> None:
        """Log each SendMessageBatch with the dead-lettered events SQS accepted."""

        def after(parsed: dict[str, Any], context: dict[str, Any], **kwargs: Any) -> None:
            entries = {e["Id"]: e for e in context.get("timeline_params", {}).get("Entries", [])}
            accepted = [json.loads(entries[ok["Id"]]["MessageBody"]) for ok in parsed.get("Successful", [])]
            if accepted:
                self._log(Entry("SendMessageBatch", events=tuple(accepted)))

        sqs.meta.events.register("before-parameter-build.sqs.SendMessageBatch", _keep_params)
        sqs.meta.events.register("after-call.sqs.SendMessageBatch", after)

    # -- questions ---------------------------------------------------------------------------
    def request_number(self, needle: bytes) -> int:
        """The number of the (single) request whose body contains ``needle``."""
        found = [n for n, body in self.bodies.items() if needle in body]
        assert len(found) == 1, f"{len(found)} requests contain {needle!r}"
        return found[0]

    def index_of_last_byte(self, request: int, timeout_s: float = 10.0) -> int:
        """Position of the request's final ASGI message (``more_body: False``). Waits for it: a
        client reading a Content-Length body has its answer before the server ends the response."""
        deadline = time.monotonic() + timeout_s
        while True:
            for i, entry in enumerate(list(self.entries)):
                is_body = entry.kind == "send" and entry.message_type == "http.response.body"
                if is_body and entry.request == request and not entry.more_body:
                    return i
            if time.monotonic() > deadline:
                raise AssertionError(f"request {request} never sent its last byte: {self.entries}")
            time.sleep(0.02)

    def index_of_delivery(self, timeout_s: float = 10.0, **match: Any) -> int:
        """Position of the first PutRecords or SendMessageBatch that carried a matching event.
        Waits for one, so that a late delivery shows up as late rather than as missing."""
        deadline = time.monotonic() + timeout_s
        while True:
            for i, entry in enumerate(list(self.entries)):
                if entry.kind in ("PutRecords", "SendMessageBatch") and any(
                    all(event.get(k) == v for k, v in match.items()) for event in entry.events
                ):
                    return i
            if time.monotonic() >= deadline:
                raise AssertionError(f"no delivered event matches {match}: {self.entries}")
            time.sleep(0.02)

    def index_of(self, kind: str, message_type: str) -> int:
        for i, entry in enumerate(self.entries):
            if entry.kind == kind and entry.message_type == message_type:
                return i
        raise AssertionError(f"no {kind} {message_type}: {self.entries}")


def _keep_params(params: dict[str, Any], context: dict[str, Any], **kwargs: Any) -> None:
    context["timeline_params"] = params  # the same context reaches the after-call hook
