"""W3C Trace Context for one request: the only module that reads or writes ``traceparent`` and
``tracestate`` (https://www.w3.org/TR/trace-context/).

Where a trace comes from (:func:`request_trace`): the request's ``params._meta`` first (SEP-414
reserves ``traceparent``, ``tracestate`` and ``baggage`` there, in both protocol eras), the HTTP
``traceparent`` header second, else a new trace. Parsing is strict and never fails a request: a
value that is not exactly the W3C format is ignored, as if it were absent.

A request is a span of its own: its ``span_id`` is new (8 random bytes), its ``parent_id`` is
the caller's span when the trace came in. Two calls sent with the same ``traceparent`` therefore
share the trace id and differ by span id, which is what lets a store tell which write a request
made (the audit does: ``adapters.dynamodb.stream_images``).

The current request's context lives in a :class:`~contextvars.ContextVar` (:func:`current`), so
every log and metric line written while it is handled carries its ids without being handed
them; asyncio tasks and ``asyncio.to_thread`` copy it. The values the request writes (the
tool-call event, its records, a task) take it explicitly from ``RequestContext.trace``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACE_ID = "trace_id"
"""The field name of the trace id wherever it is written (log lines, events, items)."""
SPAN_ID = "span_id"

_VERSION_00 = "00"
_INVALID_VERSION = "ff"
_SAMPLED = 0x01
_HEX = re.compile(r"[0-9a-f]+")  # lower-case only, as W3C requires; lengths are checked apart
_INVALID_TRACE_ID = "0" * 32
_INVALID_SPAN_ID = "0" * 16
_TRACEPARENT_00_LENGTH = 55  # "00-" 32 "-" 16 "-" 2
MAX_STATE_MEMBERS = 32
MAX_STATE_CHARS = 512
"""What is passed on of a ``tracestate`` (W3C asks to propagate at least 512 characters); a
longer one is dropped whole rather than cut."""


@dataclass(frozen=True, slots=True)
class TraceContext:
    """One span of a trace: ``trace_id`` (32 hex digits), this span's ``span_id`` (16), the
    ``parent_id`` of the span that called (None: this span started the trace), whether the
    caller samples it, and the ``state`` (tracestate) passed on unchanged."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    sampled: bool = True
    state: str | None = None

    @property
    def traceparent(self) -> str:
        """This span as the parent of whatever it calls (version 00)."""
        return f"{_VERSION_00}-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    def child(self) -> TraceContext:
        """A new span of the same trace, called by this one."""
        return TraceContext(
            trace_id=self.trace_id,
            span_id=new_span_id(),
            parent_id=self.span_id,
            sampled=self.sampled,
            state=self.state,
        )

    def to_meta(self) -> dict[str, str]:
        """The ``_meta`` entries that make this span the parent of a request sent from it."""
        meta = {TRACEPARENT: self.traceparent}
        if self.state:
            meta[TRACESTATE] = self.state
        return meta

    def fields(self) -> dict[str, str]:
        """``trace_id`` and ``span_id``, as log and metric lines carry them."""
        return {TRACE_ID: self.trace_id, SPAN_ID: self.span_id}


def new_span_id() -> str:
    return os.urandom(8).hex()  # 8 random bytes; all zeros (invalid) has probability 2**-64


def start() -> TraceContext:
    """The first span of a new trace: 16 random bytes of trace id, 8 of span id."""
    return TraceContext(trace_id=os.urandom(16).hex(), span_id=new_span_id())


def parse(traceparent: object, tracestate: object = None) -> TraceContext | None:
    """The calling span a ``traceparent`` names (its span id is the header's parent-id), with the
    ``tracestate`` when that is valid too; None when ``traceparent`` is not a valid value:
    ``version-traceid-parentid-flags`` in lower-case hex of 2, 32, 16 and 2 digits, version ff
    invalid, no all-zero id; a version after 00 may append fields after one more ``-``."""
    if not isinstance(traceparent, str) or len(traceparent) < _TRACEPARENT_00_LENGTH:
        return None
    fields = traceparent.split("-", 4)
    if len(fields) < 4:
        return None
    version, trace_id, parent_id, flags, *rest = fields
    if version == _VERSION_00 and (rest or len(traceparent) != _TRACEPARENT_00_LENGTH):
        return None  # version 00 has exactly four fields
    if version == _INVALID_VERSION or len(version) != 2 or len(flags) != 2 or not _is_hex(version + flags):
        return None
    if not (is_trace_id(trace_id) and is_span_id(parent_id)):
        return None
    sampled = bool(int(flags, 16) & _SAMPLED)  # the one flag of version 00; others are not passed on
    return TraceContext(trace_id=trace_id, span_id=parent_id, sampled=sampled, state=parse_state(tracestate))


def _is_hex(text: str) -> bool:
    return _HEX.fullmatch(text) is not None


def parse_state(tracestate: object) -> str | None:
    """A valid ``tracestate`` in its normal form (members joined by ","), else None: at most 32
    members, each ``key=value`` of the W3C grammar, no key twice, empty members skipped."""
    if not isinstance(tracestate, str) or not tracestate or len(tracestate) > MAX_STATE_CHARS:
        return None
    members: list[str] = []
    keys: set[str] = set()
    for raw in tracestate.split(","):
        member = raw.strip(" \t")
        if not member:
            continue
        key, equals, value = member.partition("=")
        state_key, state_value = _state_grammar()
        if not equals or key in keys or not state_key.fullmatch(key) or not state_value.fullmatch(value):
            return None
        keys.add(key)
        members.append(member)
    if not members or len(members) > MAX_STATE_MEMBERS:
        return None
    return ",".join(members)


@functools.cache
def _state_grammar() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A list member's key and value (W3C section 3.3.1), compiled on the first tracestate: few
    requests carry one, and every cold start would pay for the compilation otherwise."""
    key = re.compile(r"[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}")
    value = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
    return key, value


def continue_trace(traceparent: object, tracestate: object = None) -> TraceContext:
    """This side's span of the trace a carrier names, or of a new trace when it names none."""
    caller = parse(traceparent, tracestate)
    return caller.child() if caller is not None else start()


def request_trace(
    meta: Mapping[str, Any], header_traceparent: str | None = None, header_tracestate: str | None = None
) -> TraceContext:
    """The span of one request: continuing the trace its ``_meta`` names, else the one its HTTP
    header names, else a new trace. A ``tracestate`` is taken from the carrier whose
    ``traceparent`` is taken, never mixed."""
    caller = parse(meta.get(TRACEPARENT), meta.get(TRACESTATE)) if meta else None
    if caller is None:
        caller = parse(header_traceparent, header_tracestate)
    return caller.child() if caller is not None else start()


def is_trace_id(value: object) -> bool:
    """A valid trace id (32 lower-case hex digits, not all zeros)."""
    return isinstance(value, str) and len(value) == 32 and value != _INVALID_TRACE_ID and _is_hex(value)


def is_span_id(value: object) -> bool:
    """A valid span id (16 lower-case hex digits, not all zeros)."""
    return isinstance(value, str) and len(value) == 16 and value != _INVALID_SPAN_ID and _is_hex(value)


# -- the request being handled -----------------------------------------------------------------
_CURRENT: ContextVar[TraceContext | None] = ContextVar("mcp_trace_context", default=None)


def current() -> TraceContext | None:
    """The span of the request this code runs for (None outside one)."""
    return _CURRENT.get()


def scope() -> Token[TraceContext | None]:
    """Opens a request's scope with no span yet; hand the token to :func:`end_scope` when the
    request is over (whoever received the request does both, ``activate`` sets its span)."""
    return _CURRENT.set(None)


def activate(trace: TraceContext) -> None:
    """Makes ``trace`` the current span until the enclosing :func:`scope` ends."""
    _CURRENT.set(trace)


def end_scope(token: Token[TraceContext | None]) -> None:
    _CURRENT.reset(token)


def current_fields() -> dict[str, str]:
    """The current span's log fields (empty outside a request)."""
    trace = _CURRENT.get()
    return trace.fields() if trace is not None else {}
