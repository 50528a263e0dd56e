"""tools/call: resolve the session, replay or run the tool, commit atomically, emit the event.

Idempotency (ids: :mod:`mcp_platform.mcp.preparation`): a call whose id is already committed
returns the original result without running the tool again.
Critical path AWS calls for a session tool: one consistent BatchGetItem (session + marker)
and one TransactWriteItems (record + marker + metadata); the Kinesis event is flushed by the
transport after the result has been sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from mcp_platform.events.schema import STATUS_ERROR, STATUS_OK, ToolCallEvent
from mcp_platform.mcp.context import Services, ToolContext
from mcp_platform.mcp.jsonrpc import (
    CONFLICT,
    INVALID_PARAMS,
    PRECONDITION_FAILED,
    SESSION_NOT_FOUND,
    JsonRpcError,
)
from mcp_platform.mcp.preparation import PreparedCall, prepare_call
from mcp_platform.mcp.tools import ToolError, error_result, to_result
from mcp_platform.sessions import errors as session_errors
from mcp_platform.sessions.clock import iso_utc
from mcp_platform.sessions.model import ToolCall
from mcp_platform.table_schema import KIND_TRANSPORT

if TYPE_CHECKING:
    from mcp_platform.mcp.server import CallContext

logger = logging.getLogger(__name__)

COMMIT_ATTEMPTS = 3


class EventSink(Protocol):
    def add(self, event: Any) -> None: ...

    def flush(self) -> Any: ...


class TransportSessionNotFound(Exception):
    """The request's own Mcp-Session-Id is unknown/expired: the transport answers 404."""


class ToolCallRunner:
    def __init__(self, services: Services, events: EventSink | None = None, clock: Any = time.time) -> None:
        self.services = services
        self.events = events
        self._clock = clock

    prepare = staticmethod(prepare_call)

    async def set_log_level(self, session: Any, level: str, principal: str) -> None:
        def apply(current: Any) -> Any:
            return dataclasses.replace(current, attributes={**current.attributes, "log_level": level})

        # D2 optimistic lock; the session read by this request is the starting version.
        await asyncio.to_thread(
            self.services.sessions.update_metadata, session.id, apply, owner=principal, current=session
        )

    async def load(self, prepared: PreparedCall, call: CallContext) -> None:
        """One consistent BatchGetItem (X4): the session and the call's idempotency marker."""
        if prepared.session_id is None or prepared.invalid_arguments is not None:
            return
        try:
            session, prior = await asyncio.to_thread(
                self.services.sessions.load_for_tool_call,
                prepared.session_id,
                prepared.tool_call_id,
                owner=call.principal,
            )
        except session_errors.SessionNotFound as exc:
            if prepared.session_id == call.transport_session_id:
                raise TransportSessionNotFound(prepared.session_id) from exc
            raise JsonRpcError(SESSION_NOT_FOUND, "Session not found or expired") from exc
        if prior is not None and prior.request_hash != prepared.request_hash:
            raise JsonRpcError(INVALID_PARAMS, "This idempotency key was already used for a different request")
        if prepared.session_id == call.transport_session_id:
            if session.kind != KIND_TRANSPORT:
                raise TransportSessionNotFound(prepared.session_id)  # a handle is not an Mcp-Session-Id
            call.transport_session = session
            call.log_level = str(session.attributes.get("log_level", call.log_level))
        prepared.session = session
        prepared.prior_result = dict(prior.result) if prior is not None else None

    async def run(self, prepared: PreparedCall, call: CallContext) -> dict[str, Any]:
        if prepared.invalid_arguments is not None:
            return error_result(f"Invalid arguments: {prepared.invalid_arguments}")
        if prepared.prior_result is not None:
            return prepared.prior_result  # replay: the tool does not run again (D4)
        session = prepared.session
        started = self._clock()
        ctx = ToolContext(
            principal=call.principal,
            services=self.services,
            session=session,
            tool_call_id=prepared.tool_call_id,
            progress_token=prepared.progress_token,
            log_level=call.log_level,
            notify=call.notify,
            cancelled=call.cancelled,
        )
        result = await self._invoke(prepared, ctx)
        finished = self._clock()
        if session is not None:
            result, committed = await self._commit(prepared, ctx, session, result, started, finished, call.principal)
            if not committed:
                return result  # a concurrent copy of this call committed (and reports) it
        self._record_event(prepared, call, result, started, finished)
        return result

    async def _invoke(self, prepared: PreparedCall, ctx: ToolContext) -> dict[str, Any]:
        try:
            return to_result(await prepared.spec.function(ctx, **prepared.arguments))
        except ToolError as exc:
            return error_result(str(exc))
        except JsonRpcError:
            raise
        except Exception:
            # The failure is logged with its trace and answered as a tool error: the caller
            # learns the call failed, the server stays up, internals are not leaked.
            logger.exception("tool %s failed", prepared.spec.name)
            return error_result(f"Tool {prepared.spec.name} failed with an internal error")

    async def _commit(
        self,
        prepared: PreparedCall,
        ctx: ToolContext,
        session: Any,
        result: dict[str, Any],
        started: float,
        finished: float,
        principal: str,
    ) -> tuple[dict[str, Any], bool]:
        """The result to answer and whether this run committed it (False: a duplicate won)."""
        store = self.services.sessions
        call_record = ToolCall(
            id=prepared.tool_call_id,
            name=prepared.spec.name,
            arguments=prepared.arguments,
            result=result,
            is_error=bool(result.get("isError")),
            started_at=started,
            finished_at=finished,
            request_hash=prepared.request_hash,
        )
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                await asyncio.to_thread(
                    store.commit_tool_call,
                    session,
                    call_record,
                    owner=principal,
                    context_append=ctx.context_append,
                    extra_puts=ctx.extra_puts,
                    condition_checks=ctx.condition_checks,
                )
                return result, True
            except session_errors.DuplicateToolCall as exc:
                return dict(exc.original.result), False  # a concurrent retry of this call won
            except session_errors.SessionNotFound as exc:
                raise JsonRpcError(SESSION_NOT_FOUND, "Session not found or expired") from exc
            except session_errors.VersionConflict as exc:
                # Another call committed first: commit on top of the state the store saw
                # (carried by the error, no extra read). The tool does not run again.
                if attempt == COMMIT_ATTEMPTS - 1 or exc.current is None:
                    raise JsonRpcError(CONFLICT, "Session changed concurrently; retry the call") from exc
                session = exc.current
            except session_errors.IdempotencyTokenReused as exc:
                raise JsonRpcError(CONFLICT, "This call's id is in use by another request; retry the call") from exc
            except session_errors.PreconditionFailed as exc:
                raise JsonRpcError(PRECONDITION_FAILED, f"Precondition failed: {exc}", {"label": exc.label}) from exc
        raise AssertionError("unreachable")

    def _record_event(
        self, prepared: PreparedCall, call: CallContext, result: dict[str, Any], started: float, finished: float
    ) -> None:
        if self.events is None:
            return
        self.events.add(
            ToolCallEvent(
                event_id=prepared.tool_call_id,
                session_id=prepared.session_id,
                principal=call.principal,
                tool=prepared.spec.name,
                status=STATUS_ERROR if result.get("isError") else STATUS_OK,
                started_at=iso_utc(started),
                finished_at=iso_utc(finished),
                duration_ms=round((finished - started) * 1000, 3),
                request_bytes=prepared.request_bytes,
                response_bytes=len(json.dumps(result, separators=(",", ":"), default=str)),
            )
        )
