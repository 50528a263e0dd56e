"""Running one tool inside its request's time budget, and the event that reports the call.

The budget is the tool's declared ``max_seconds`` (:func:`mcp.tools.tool`), never past the
runner's cap (the stream cap, so a call answered as plain JSON is bounded too). One deadline per
request: the reruns of a read-modify-write tool share it. A call stopped at its limit is answered
like a ``ToolError``, and what the stopped run had queued for its commit is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_platform.application.auth.tenants import tenant_of
from mcp_platform.application.effects import is_store_throttle, unavailable
from mcp_platform.application.events.schema import STATUS_ERROR, STATUS_OK, ToolCallEvent
from mcp_platform.application.services import ToolContext
from mcp_platform.application.stored_form import check_storable
from mcp_platform.protocol import compact_json
from mcp_platform.protocol.clock import iso_utc
from mcp_platform.protocol.input_required import InputRequired
from mcp_platform.protocol.jsonrpc import FORBIDDEN, TOOL_FAILED, JSONObject, JsonRpcError
from mcp_platform.protocol.signature import ArgumentError
from mcp_platform.protocol.storability import Inadmissible
from mcp_platform.protocol.tools import ToolError, ToolSpec, error_result

if TYPE_CHECKING:
    from mcp_platform.protocol.preparation import PreparedCall
    from mcp_platform.protocol.request_context import RequestContext

logger = logging.getLogger(__name__)

# Matches the default stream cap (Settings.stream_max_seconds): a call answered as plain JSON,
# which no stream cap ends, is bounded all the same. The endpoint passes the configured cap.
DEFAULT_MAX_CALL_SECONDS = 840.0


def call_limit(spec: ToolSpec, cap: float) -> float:
    """Seconds one call of ``spec`` may run: its declared ``max_seconds``, never past ``cap``."""
    return min(spec.max_seconds or cap, cap)


def admit_result(spec: ToolSpec, result: dict[str, Any]) -> None:
    """A result the store cannot hold (or the audit could not read back) is a defect of the tool:
    answered -31007 before anything is written."""
    try:
        check_storable(result, "result")
    except Inadmissible as exc:
        logger.error("tool %s returned a result that cannot be stored: %s", spec.name, exc)
        message = f"Tool {spec.name} returned a result that cannot be stored; nothing was committed"
        raise JsonRpcError(TOOL_FAILED, message) from exc


async def invoke(
    spec: ToolSpec,
    ctx: ToolContext[object],
    arguments: dict[str, Any],
    deadline: float,
    cap: float,
    *,
    is_throttle: Callable[[BaseException], bool] = is_store_throttle,
) -> Any:
    """The tool's CallToolResult; a ``ToolError`` or the time limit (``deadline``, from
    :func:`call_limit` under ``cap``) give an isError result, any other failure a JsonRpcError
    (never committed, so a retry runs the tool again); ``is_throttle`` picks the failures
    answered as "throttled, retry shortly"."""
    budget = asyncio.timeout_at(deadline)
    try:
        async with budget:
            value = await spec.run(ctx, **arguments)
        return spec.to_result(value)
    except ToolError as exc:
        return error_result(str(exc))  # an expected failure: a result, committed as such
    except ArgumentError as exc:  # a conversion that refused when called (admitted ones do not)
        return error_result(f"Invalid arguments: {exc}")
    except (JsonRpcError, InputRequired):
        raise  # a protocol answer, or a round that needs input (2026): neither is a tool failure
    except Exception as exc:
        if isinstance(exc, TimeoutError) and budget.expired():
            # The request's budget, not a failure of the tool: only the outcome is recorded.
            if ctx.effects is not None:
                ctx.effects.discard()
            limit = call_limit(spec, cap)
            return error_result(f"Tool {spec.name} was stopped at its {limit:g} s limit (max_seconds)")
        # Unexpected (a throttle, a timeout, a bug): logged with its trace and answered as a
        # retryable error. Never committed, so a retry runs the tool instead of replaying it.
        logger.exception("tool %s failed", spec.name)
        if is_throttle(exc):
            raise unavailable(f"Tool {spec.name} was throttled by AWS; retry the call shortly") from exc
        data: JSONObject = {"retryable": True}
        message = f"Tool {spec.name} failed with an internal error; nothing was committed, retry the call"
        raise JsonRpcError(TOOL_FAILED, message, data) from exc


def call_event(
    prepared: PreparedCall, call: RequestContext, result: dict[str, Any], started: float, finished: float
) -> ToolCallEvent:
    """The tool-call event of a finished call (:class:`~mcp_platform.application.events.schema.ToolCallEvent`,
    the one writer of the stream's format), built from typed values and therefore not re-validated
    per call (ingest validates it).
    ``emitted_at`` is ``finished_at`` (one timestamp formatted less). A wall clock stepped back
    during the call gives a zero duration, never an event that ingest would refuse
    (``finished_at`` before ``started_at``). The request's trace and span ids ride along
    (``RequestContext.trace``). ``principal`` is the caller's owner (tenant-qualified for a tenant's
    caller), ``tenant`` its tenant: usage counts by both."""
    if finished < started:
        finished = started
    finished_at = iso_utc(finished)
    trace = call.trace
    return ToolCallEvent(
        event_id=prepared.tool_call_id,
        principal=call.principal,
        tool=prepared.spec.name,
        status=STATUS_ERROR if result.get("isError") else STATUS_OK,
        started_at=iso_utc(started),
        finished_at=finished_at,
        request_bytes=prepared.request_bytes,
        response_bytes=len(compact_json.dumps(result)),
        duration_ms=round((finished - started) * 1000, 3),  # to the microsecond
        session_id=prepared.session_id,
        tenant=tenant_of(call.principal),
        emitted_at=finished_at,
        trace_id=trace.trace_id if trace is not None else None,
        span_id=trace.span_id if trace is not None else None,
    )


POLICY_DENIED = "policy_denied"
"""The ``error_code`` of the event of a call the policies refused."""


def denial_event(prepared: PreparedCall, call: RequestContext, refusal: JsonRpcError, at: float) -> ToolCallEvent:
    """The event of a call the policies refused: nothing ran, so it starts and ends at ``at``.

    It has an id of its own, not the call's: the call id (an idempotency key's) stays free for the
    same call once a policy permits it, which ingest would otherwise count as this one's duplicate.
    And no session: nothing was written to the session, and ingest writes no record there either."""
    assert refusal.code == FORBIDDEN
    moment = iso_utc(at)
    trace = call.trace
    return ToolCallEvent(
        event_id=os.urandom(16).hex(),
        principal=call.principal,
        tool=prepared.spec.name,
        status=STATUS_ERROR,
        started_at=moment,
        finished_at=moment,
        request_bytes=prepared.request_bytes,
        response_bytes=len(compact_json.dumps(refusal.to_error())),
        duration_ms=0.0,
        tenant=tenant_of(call.principal),
        error_code=POLICY_DENIED,
        emitted_at=moment,
        trace_id=trace.trace_id if trace is not None else None,
        span_id=trace.span_id if trace is not None else None,
    )
