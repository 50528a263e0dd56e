"""W3C Trace Context (protocol.trace_context): a request continues the trace its ``_meta`` names,
else the one its header names, else starts one; a bad value is ignored, never an error; the
current request's span is visible to its tasks and worker threads and to nothing after it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from mcp_platform.protocol import trace_context
from mcp_platform.protocol.trace_context import TraceContext

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
W3C_TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]")


def test_a_traceparent_in_meta_is_continued_by_a_span_of_the_request() -> None:
    # Given a request whose _meta names the caller's span, with a tracestate
    meta = {"traceparent": TRACEPARENT, "tracestate": "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"}
    # When the request's span is made
    trace = trace_context.request_trace(meta)
    # Then it is a new span of the caller's trace, called by the caller's span, sampled as the
    # caller said, and the tracestate is passed on (normal form)
    assert trace.trace_id == TRACE_ID
    assert trace.parent_id == PARENT_ID and re.fullmatch(r"[0-9a-f]{16}", trace.span_id)
    assert trace.span_id != PARENT_ID
    assert trace.sampled is True
    assert trace.state == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
    assert trace.traceparent == f"00-{TRACE_ID}-{trace.span_id}-01"


def test_two_requests_sent_with_one_traceparent_are_two_spans_of_one_trace() -> None:
    # Given two requests carrying the same traceparent (a client retrying, or calling twice)
    first = trace_context.request_trace({"traceparent": TRACEPARENT})
    second = trace_context.request_trace({"traceparent": TRACEPARENT})
    # Then they share the trace and differ by span: what tells their writes apart
    assert first.trace_id == second.trace_id == TRACE_ID
    assert first.span_id != second.span_id


def test_meta_wins_over_the_header_and_the_header_is_the_fallback() -> None:
    # Given a header naming one trace
    # When _meta names another / names none / names an invalid one
    from_meta = trace_context.request_trace({"traceparent": TRACEPARENT}, OTHER)
    from_header = trace_context.request_trace({}, OTHER)
    bad_meta = trace_context.request_trace({"traceparent": "00-bad"}, OTHER)
    # Then _meta's is taken first, the header's otherwise (an invalid _meta value is as if absent)
    assert from_meta.trace_id == TRACE_ID
    assert from_header.trace_id == bad_meta.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert from_header.parent_id == "b7ad6b7169203331"


def test_a_tracestate_is_never_taken_from_the_other_carrier() -> None:
    # Given a traceparent in _meta without a tracestate, and a tracestate header
    trace = trace_context.request_trace({"traceparent": TRACEPARENT}, OTHER, "rojo=1")
    # Then the header's tracestate does not ride on _meta's trace
    assert trace.trace_id == TRACE_ID and trace.state is None


@pytest.mark.parametrize(
    "value",
    [
        TRACEPARENT.upper(),  # upper-case hex
        f"00-{'0' * 32}-{PARENT_ID}-01",  # the invalid trace id
        f"00-{TRACE_ID}-{'0' * 16}-01",  # the invalid parent id
        f"ff-{TRACE_ID}-{PARENT_ID}-01",  # version ff is invalid
        f"00-{TRACE_ID}-{PARENT_ID}-01-extra",  # version 00 has exactly four fields
        f"00-{TRACE_ID}-{PARENT_ID}-1",
        f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{PARENT_ID}-01 ",
        f" 00-{TRACE_ID}-{PARENT_ID}-01",
        f"00_{TRACE_ID}_{PARENT_ID}_01",
        f"0g-{TRACE_ID}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{PARENT_ID}-01\n",
        "",
        None,
        12,
        ["00", TRACE_ID],
        {"traceparent": TRACEPARENT},
    ],
)
def test_an_invalid_traceparent_starts_a_new_trace_and_is_never_an_error(value: Any) -> None:
    # Given a _meta (and a header) whose traceparent is not exactly the W3C format
    # When the request's span is made
    trace = trace_context.request_trace(
        {"traceparent": value, "tracestate": "rojo=1"}, value if isinstance(value, str) else None
    )
    # Then it starts a new trace: valid ids, no parent, and no tracestate of the refused carrier
    assert trace_context.parse(value) is None
    assert trace.trace_id != TRACE_ID and trace.parent_id is None and trace.state is None
    assert W3C_TRACEPARENT.fullmatch(trace.traceparent)
    assert trace_context.is_trace_id(trace.trace_id) and trace_context.is_span_id(trace.span_id)


def test_a_later_version_is_read_by_its_four_known_fields() -> None:
    # Given a traceparent of a version after 00, with one more field (W3C: parse what is known)
    caller = trace_context.parse(f"cc-{TRACE_ID}-{PARENT_ID}-09-what-the-future-brings")
    # Then its trace is continued, and passed on as version 00 with the sampled flag only
    assert caller is not None and caller.trace_id == TRACE_ID and caller.sampled
    assert caller.child().traceparent.startswith(f"00-{TRACE_ID}-") and caller.child().traceparent.endswith("-01")


def test_the_sampled_flag_is_passed_on() -> None:
    # Given a caller that does not sample / When its trace is continued / Then neither does the request's span
    trace = trace_context.request_trace({"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"})
    assert trace.sampled is False and trace.traceparent.endswith("-00")


@pytest.mark.parametrize(
    "state",
    [
        "Rojo=1",  # upper-case key
        "rojo=1,rojo=2",  # a key twice
        "rojo",  # no value
        "rojo=a,b",  # a member without "="
        "rojo=a=b",  # "=" in a value
        ",".join(f"k{i}=v" for i in range(33)),  # over 32 members
        "k=" + "v" * 257,  # a value over 256 characters
        "k=" + "v" * 600,  # over what is passed on
        "",
        7,
    ],
)
def test_an_invalid_tracestate_is_dropped_and_the_trace_kept(state: Any) -> None:
    # Given a valid traceparent with an invalid tracestate
    trace = trace_context.request_trace({"traceparent": TRACEPARENT, "tracestate": state})
    # Then the trace is continued without it
    assert trace.trace_id == TRACE_ID and trace.state is None


def test_valid_tracestates_in_their_normal_form() -> None:
    # Multi-tenant keys, empty members and optional whitespace are W3C's grammar
    assert trace_context.parse_state("fw529a3039@dt=1, ,  rojo=00f067aa0ba902b7\t") == (
        "fw529a3039@dt=1,rojo=00f067aa0ba902b7"
    )
    assert trace_context.parse_state(",".join(f"k{i}=v" for i in range(32))) is not None


def test_a_new_trace_has_random_ids_in_the_w3c_format() -> None:
    # When two traces are started
    first, second = trace_context.start(), trace_context.start()
    # Then each has 16 random bytes of trace id and 8 of span id, and reads back as itself
    assert first.trace_id != second.trace_id and first.span_id != second.span_id
    assert W3C_TRACEPARENT.fullmatch(first.traceparent)
    assert trace_context.parse(first.traceparent) == TraceContext(trace_id=first.trace_id, span_id=first.span_id)


def test_a_span_is_the_parent_of_what_it_sends() -> None:
    # Given the request's span / When it sends a request (a 2025 server-to-client request, a task)
    trace = trace_context.request_trace({"traceparent": TRACEPARENT, "tracestate": "rojo=1"})
    meta = trace.to_meta()
    # Then the receiver's span continues this trace, called by this span
    received = trace_context.continue_trace(meta["traceparent"], meta["tracestate"])
    assert meta == {"traceparent": f"00-{TRACE_ID}-{trace.span_id}-01", "tracestate": "rojo=1"}
    assert (received.trace_id, received.parent_id, received.state) == (TRACE_ID, trace.span_id, "rojo=1")
    assert trace.fields() == {"trace_id": TRACE_ID, "span_id": trace.span_id}


def test_the_current_span_reaches_tasks_and_threads_and_ends_with_its_scope() -> None:
    # Given a request scope with its span active
    trace = trace_context.start()
    seen: dict[str, Any] = {}

    async def request() -> None:
        scope = trace_context.scope()
        try:
            trace_context.activate(trace)
            seen["task"] = await asyncio.create_task(_current())
            seen["thread"] = await asyncio.to_thread(trace_context.current)
        finally:
            trace_context.end_scope(scope)
        seen["after"] = trace_context.current()

    async def _current() -> TraceContext | None:
        return trace_context.current()

    asyncio.run(request())
    # Then a task it starts and a thread it hands work to see the span; nothing after the scope does
    assert seen == {"task": trace, "thread": trace, "after": None}
    assert trace_context.current_fields() == {}
