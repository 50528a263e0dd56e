"""A long-lived SSE response read on a thread: the test reads its messages as they arrive.

Verdicts never depend on timing: a test reads until a *marker* message it published itself, and
then looks at what came before it (the reader's order guarantees, see
``mcp_platform.application.notifications.reader``). The timeout only keeps a broken stream from hanging the
run; it fails the test, never passes it.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

HANG_GUARD_S = 30.0
_END = object()


@dataclass
class Event:
    data: dict[str, Any]
    id: str | None = None


@dataclass
class EventStream:
    method: str
    url: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    _events: queue.Queue[Any] = field(default_factory=queue.Queue)
    _opened: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    error: BaseException | None = None

    def __enter__(self) -> EventStream:
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._opened.wait(HANG_GUARD_S), "the stream never answered"
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading: the thread leaves at the next line (keep-alives come every second)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(HANG_GUARD_S)

    def until(self, found: Callable[[dict[str, Any]], bool]) -> list[Event]:
        """Every event up to and including the first whose message satisfies ``found``."""
        seen: list[Event] = []
        while True:
            try:
                event = self._events.get(timeout=HANG_GUARD_S)
            except queue.Empty as exc:
                raise AssertionError(f"no matching message in {HANG_GUARD_S:.0f} s; got {seen}") from exc
            if event is _END:
                raise AssertionError(f"the stream ended before a matching message; got {seen} ({self.error!r})")
            seen.append(event)
            if found(event.data):
                return seen

    def rest(self) -> list[Event]:
        """Every event until the server ends the stream."""
        seen: list[Event] = []
        while (event := self._events.get(timeout=HANG_GUARD_S)) is not _END:
            seen.append(event)
        return seen

    def _read(self) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(HANG_GUARD_S)) as http,
                http.stream(self.method, self.url, headers=self.headers, json=self.body) as response,
            ):
                self.status, self.response_headers = response.status_code, dict(response.headers)
                self._opened.set()
                self._parse(response)
        except httpx.HTTPError as exc:
            self.error = exc  # reported by until() with what arrived before
        finally:
            self._opened.set()
            self._events.put(_END)

    def _parse(self, response: httpx.Response) -> None:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            body = response.read()  # a refusal or a plain answer: one JSON body
            if body:
                self._events.put(Event(json.loads(body)))
            return
        event_id: str | None = None
        data: list[str] = []
        for line in response.iter_lines():
            if self._stop.is_set():
                return
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                self._events.put(Event(json.loads("\n".join(data)), event_id))
                event_id, data = None, []
