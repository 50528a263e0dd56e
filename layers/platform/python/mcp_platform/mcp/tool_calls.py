"""tools/call: resolve the session, replay or run the tool, commit by its effect, emit the event.

Idempotency (ids: :mod:`mcp_platform.mcp.preparation`): a call whose id is already committed
returns the original result without running the tool again.

The commit follows the tool's declared effect (:mod:`mcp_platform.mcp.tools`):
``read_only`` commits nothing; ``append_only`` commits on "alive" alone, so parallel calls
never conflict; ``read_modify_write`` commits under the version condition and, on a lost
race, runs the tool again on the fresh state. Unexpected tool failures are never committed.

Critical path AWS calls for a session tool: one consistent BatchGetItem (session + marker),
plus one TransactWriteItems (record + marker + metadata) unless read-only; the Kinesis event
is flushed by the transport inside the same invocation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from mcp_platform.events.schema import STATUS_ERROR, STATUS_OK, ToolCallEvent
from mcp_platform.mcp.admission import Inadmissible, check_storable
from mcp_platform.mcp.context import Services, ToolContext
from mcp_platform.mcp.effects import RERUN_BACKOFF, SessionLocks, is_throttle, store_error, unavailable
from mcp_platform.mcp.jsonrpc import INVALID_PARAMS, TOOL_FAILED, JsonRpcError
from mcp_platform.mcp.preparation import PreparedCall, prepare_call
from mcp_platform.mcp.tools import APPEND_ONLY, READ_ONLY, ToolError, error_result, to_result
from mcp_platform.sessions import errors as session_errors
from mcp_platform.sessions.clock import iso_utc
from mcp_platform.sessions.model import ToolCall
from mcp_platform.sessions.retry import Backoff
from mcp_platform.table_schema import KIND_TRANSPORT

if TYPE_CHECKING:
    from mcp_platform.mcp.server import CallContext

logger = logging.getLogger(__name__)


class EventSink(Protocol):
    def add(self, event: Any) -> None: ...

    def flush(self) -> Any: ...


class TransportSessionNotFound(Exception):
    """The request's own Mcp-Session-Id is unknown/expired: the transport answers 404."""


class ToolCallRunner:
    def __init__(
        self,
        services: Services,
        events: EventSink | None = None,
        clock: Any = time.time,
        *,
        rerun_backoff: Backoff = RERUN_BACKOFF,
    ) -> None:
        self.services = services
        self.events = events
        self._clock = clock
        self._rerun = rerun_backoff
        self._locks = SessionLocks()
        self._pending: set[asyncio.Future[dict[str, Any]]] = set()

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
            raise store_error(exc) from exc
        except session_errors.SessionStoreError as exc:
            raise store_error(exc) from exc
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
        if session is None or prepared.spec.effect == READ_ONLY:
            # Nothing to commit: no transaction, no version bump, no conflict. The call is
            # recorded by ingest from its event (the record has no marker: a retry runs again).
            started = self._clock()
            result = await self._invoke(prepared, self._context(prepared, call, session))
            self._record_event(prepared, call, result, started, self._clock())
            return result
        if prepared.spec.effect == APPEND_ONLY:
            return await self._run_and_commit(prepared, call, session, append_only=True)
        async with self._locks.hold(session.id):
            return await self._run_read_modify_write(prepared, call, session)

    async def settle(self) -> None:
        """Wait for commits still running after their call was cancelled (their events are then
        in the producer's buffer): the transport calls this before flushing."""
        while self._pending:
            await asyncio.wait(list(self._pending))

    async def _run_read_modify_write(self, prepared: PreparedCall, call: CallContext, session: Any) -> dict[str, Any]:
        """D2: on a lost version race the *tool runs again* on the state that won, so no
        result computed from stale state is ever committed; bounded, then CONFLICT."""
        delays = self._rerun.delays()
        session = self._locks.newest(session)
        while True:
            try:
                return await self._run_and_commit(prepared, call, session, append_only=False)
            except session_errors.VersionConflict as exc:
                delay = next(delays, None)
                if delay is None or exc.current is None:
                    raise store_error(exc) from exc
                session = exc.current
                await asyncio.sleep(delay)

    async def _run_and_commit(
        self, prepared: PreparedCall, call: CallContext, session: Any, *, append_only: bool
    ) -> dict[str, Any]:
        started = self._clock()
        ctx = self._context(prepared, call, session)
        result = await self._invoke(prepared, ctx)
        finished = self._clock()
        # The commit and its event are one unit: a cancellation arriving now must not leave a
        # committed call without its event, so the pair runs shielded (``settle`` awaits it).
        commit = asyncio.ensure_future(
            self._commit(prepared, call, ctx, session, result, started, finished, append_only)
        )
        self._pending.add(commit)
        commit.add_done_callback(self._pending.discard)
        try:
            return await asyncio.shield(commit)
        except asyncio.CancelledError:
            commit.add_done_callback(_log_orphaned_failure)
            raise

    def _context(self, prepared: PreparedCall, call: CallContext, session: Any) -> ToolContext:
        return ToolContext(
            principal=call.principal,
            services=self.services,
            session=session,
            tool_call_id=prepared.tool_call_id,
            progress_token=prepared.progress_token,
            log_level=call.log_level,
            notify=call.notify,
            cancelled=call.cancelled,
            effect=prepared.spec.effect,
        )

    async def _invoke(self, prepared: PreparedCall, ctx: ToolContext) -> dict[str, Any]:
        try:
            return to_result(await prepared.spec.function(ctx, **prepared.arguments))
        except ToolError as exc:
            return error_result(str(exc))  # an expected failure: a result, committed as such
        except JsonRpcError:
            raise
        except Exception as exc:
            # Unexpected (a throttle, a timeout, a bug): logged with its trace and answered as a
            # retryable error. Never committed, so a retry runs the tool instead of replaying it.
            logger.exception("tool %s failed", prepared.spec.name)
            if is_throttle(exc):
                raise unavailable(f"Tool {prepared.spec.name} was throttled by AWS; retry the call shortly") from exc
            data = {"retryable": True}
            message = f"Tool {prepared.spec.name} failed with an internal error; nothing was committed, retry the call"
            raise JsonRpcError(TOOL_FAILED, message, data) from exc

    async def _commit(
        self,
        prepared: PreparedCall,
        call: CallContext,
        ctx: ToolContext,
        session: Any,
        result: dict[str, Any],
        started: float,
        finished: float,
        append_only: bool,
    ) -> dict[str, Any]:
        """Commit, then queue the event. VersionConflict propagates (the caller reruns the
        tool); every other store error is answered by its code (``effects.store_error``)."""
        try:
            check_storable(result, "result")
        except Inadmissible as exc:
            logger.error("tool %s returned a result that cannot be stored: %s", prepared.spec.name, exc)
            message = f"Tool {prepared.spec.name} returned a result that cannot be stored; nothing was committed"
            raise JsonRpcError(TOOL_FAILED, message) from exc
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
        try:
            done = await asyncio.to_thread(
                self.services.sessions.commit_tool_call,
                session,
                call_record,
                owner=call.principal,
                append_only=append_only,
                context_append=ctx.context_append,
                attributes=ctx.attributes,
                extra_puts=ctx.extra_puts,
                condition_checks=ctx.condition_checks,
            )
        except session_errors.DuplicateToolCall as exc:
            return dict(exc.original.result)  # a concurrent copy of this call committed (and reports) it
        except session_errors.VersionConflict:
            raise
        except session_errors.SessionStoreError as exc:
            raise store_error(exc) from exc
        if done.exact:
            self._locks.remember(done.session)
        self._record_event(prepared, call, result, started, finished)
        return result

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


def _log_orphaned_failure(commit: asyncio.Future[dict[str, Any]]) -> None:
    """The call was cancelled while its commit ran on: nobody awaits the outcome any more."""
    if not commit.cancelled() and commit.exception() is not None:
        logger.error("commit of a cancelled tool call failed", exc_info=commit.exception())
