"""tools/call: resolve the session, replay or run the tool, commit by its effect, emit the event.

Idempotency (ids: :mod:`mcp_platform.protocol.preparation`): a call whose id is already committed
returns the original result without running the tool again, when it is the same request (tool
and arguments); another request under that id is -32602, whether the store finds the id taken
before the run, at the commit (a concurrent request won the race) or on a token replay.

The commit follows the tool's declared effect (:mod:`mcp_platform.protocol.tools`):
``read_only`` commits nothing; ``append_only`` commits on "alive" alone, so parallel calls
never conflict; ``read_modify_write`` commits under the version condition (or, when the tool
read attributes one by one, ``ctx.attribute``, under the versions of those attributes alone)
and, on a lost race, runs the tool again on the state read again. Unexpected tool failures are
never committed, nor is a 2026 round that stopped for input (``InputRequired`` leaves the run
before commit and event).

Critical path AWS calls for a session tool: one consistent BatchGetItem (session + marker),
plus one TransactWriteItems (record + marker + metadata) unless read-only (a read-only call
writes only a ttl-only UpdateItem, once less than half of the session's lifetime remains: D7);
the Kinesis event is flushed by the transport inside the same invocation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.effects import (
    RERUN_BACKOFF,
    SessionLocks,
    is_store_throttle,
    store_counter,
    store_error,
)
from mcp_platform.application.events.ports import EventSink
from mcp_platform.application.invocation import (
    DEFAULT_MAX_CALL_SECONDS,
    admit_result,
    call_event,
    call_limit,
    denial_event,
    invoke,
)
from mcp_platform.application.metrics import ERROR_TYPE, STORE_THROTTLES, TOOL, MetricsWriter
from mcp_platform.application.services import Services, ToolContext
from mcp_platform.application.sessions import errors as session_errors
from mcp_platform.application.sessions.changes import PendingChanges
from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES
from mcp_platform.application.sessions.model import KIND_TRANSPORT, Session, ToolCall
from mcp_platform.application.sessions.ports import SessionRepository
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.protocol import context
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock
from mcp_platform.protocol.jsonrpc import JsonRpcError, Request
from mcp_platform.protocol.preparation import PreparedCall, prepare_call
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.tools import APPEND_ONLY, READ_ONLY, ToolCatalog, ToolSpec, error_result

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedCall:
    """A prepared tools/call with what its load read: its session (None without one) and, when
    the call id is committed already, its stored result (answered again, never rerun: D4)."""

    prepared: PreparedCall
    session: Session | None = None
    prior_result: dict[str, Any] | None = None


class TransportSessionNotFound(Exception):
    """The request's own Mcp-Session-Id is unknown/expired: the transport answers 404."""


class ToolCallRunner:
    def __init__(
        self,
        services: Services[object],
        events: EventSink | None = None,
        clock: Clock = SYSTEM_CLOCK,
        *,
        rerun_backoff: Backoff = RERUN_BACKOFF,
        max_call_seconds: float = DEFAULT_MAX_CALL_SECONDS,
        blocking: Blocking = IN_THREAD,
        is_throttle: Callable[[BaseException], bool] = is_store_throttle,
        metrics: MetricsWriter | None = None,
    ) -> None:
        """``is_throttle`` tells a throttled AWS call from other failures of a tool (the
        composition root passes the adapters' reading of SDK errors): answered as retryable.
        ``metrics`` counts the store's conflicts and throttles, per tool (EMF lines)."""
        self.services = services
        self.blocking = blocking
        self.events = events
        self._clock = clock
        self._rerun = rerun_backoff
        self.max_call_seconds = max_call_seconds
        self.is_throttle = is_throttle
        self.metrics = metrics
        self._locks = SessionLocks()
        self._pending: set[asyncio.Future[dict[str, Any]]] = set()

    @staticmethod
    def prepare(request: Request, call: RequestContext, catalog: ToolCatalog) -> PreparedCall:
        """The call's I/O-free preparation, what it keeps admitted by the platform's stored form."""
        return prepare_call(request, call, catalog, storability=STORED_FORM, arguments_budget=CALL_RECORD_BUDGET_BYTES)

    @property
    def store(self) -> SessionRepository:
        """The session store (``Services.store``; tools reach it as ``Services.sessions``)."""
        return self.services.store

    async def set_log_level(self, session: Session, level: str, principal: str) -> None:
        def apply(current: Session) -> Session:
            return dataclasses.replace(current, attributes={**current.attributes, "log_level": level})

        # D2 optimistic lock; the session read by this request is the starting version.
        await self.blocking(self.store.update_metadata, session.id, apply, owner=principal, current=session)

    async def load(self, prepared: PreparedCall, call: RequestContext) -> LoadedCall:
        """One consistent BatchGetItem (X4): the session and the call's idempotency marker."""
        if prepared.session_id is None or prepared.invalid_arguments is not None:
            return LoadedCall(prepared)
        try:
            session, prior = await self.blocking(
                self.store.load_for_tool_call,
                prepared.session_id,
                # A fresh id has nothing to replay: the marker is not looked for.
                prepared.tool_call_id if prepared.replayable else None,
                owner=call.principal,
                request_hash=prepared.request_hash,
                consistent=prepared.spec.consistency == "consistent",
                # An append-only call (what it appends never depends on the context before it)
                # and a tool declared reads_context=False do not read the context: a session's
                # size does not weigh on their calls.
                with_context=prepared.spec.reads_context,
            )
        except session_errors.SessionNotFound as exc:
            if prepared.session_id == call.transport_session_id:
                raise TransportSessionNotFound(prepared.session_id) from exc
            raise store_error(exc) from exc
        except session_errors.SessionStoreError as exc:
            raise self._store_error(prepared, exc) from exc  # IdempotencyKeyReused: -32602
        if prepared.session_id == call.transport_session_id:
            if session.kind != KIND_TRANSPORT:
                raise TransportSessionNotFound(prepared.session_id)  # a handle is not an Mcp-Session-Id
            call.attach_transport_session(session)
        return LoadedCall(prepared, session, dict(prior.result) if prior is not None else None)

    async def run(self, loaded: LoadedCall, call: RequestContext) -> dict[str, Any]:
        prepared = loaded.prepared
        if prepared.invalid_arguments is not None:
            return error_result(f"Invalid arguments: {prepared.invalid_arguments}")
        if loaded.prior_result is not None:
            return loaded.prior_result  # replay: the tool does not run again (D4)
        # One budget per request, whatever the path: reruns after a lost race share it.
        deadline = self._deadline(prepared)
        session = loaded.session
        if session is None or prepared.spec.effect == READ_ONLY:
            # Nothing to commit: no transaction, no version bump, no conflict. The call is
            # recorded by ingest from its event (the record has no marker: a retry runs again).
            if session is not None:
                session = await self._slide_expiry(prepared, session, call)
            started = self._clock.now()
            ctx = self._context(prepared, call, session, PendingChanges(prepared.spec.effect, session))
            result = await self._invoke(prepared, ctx, deadline)
            self._record_event(prepared, call, result, started, self._clock.now())
            return result
        if prepared.spec.effect == APPEND_ONLY:
            return await self._run_and_commit(prepared, call, session, deadline)
        async with self._locks.hold(session.id):
            return await self._run_read_modify_write(prepared, call, session, deadline)

    async def _slide_expiry(self, prepared: PreparedCall, session: Session, call: RequestContext) -> Session:
        """D7 for a read-only call: the session's ttl slides too (a ttl-only write, made only when
        less than half of the lifetime remains; ``SessionStore.slide_expiry``), so a session that
        is only read does not expire while in use. The tool sees the extended ttl. A failed slide
        never fails the read (the session was alive when loaded): it is logged, and the next
        read past half the lifetime tries again."""
        try:
            slid: Session = await self.blocking(self.store.slide_expiry, session, owner=call.principal)
        except session_errors.SessionStoreError as exc:
            logger.warning("sliding the expiry of a read session failed: %s", type(exc).__name__)
            self._count_store_error(prepared, exc)
            return session
        return slid

    @property
    def committing(self) -> bool:
        """Some commit is still running after its call was cancelled (see :meth:`settle`)."""
        return bool(self._pending)

    async def settle(self) -> None:
        """Wait for commits still running after their call was cancelled (their events are then
        in the producer's buffer): the transport calls this before flushing."""
        while self._pending:
            await asyncio.wait(list(self._pending))

    async def _run_read_modify_write(
        self, prepared: PreparedCall, call: RequestContext, session: Session, deadline: float
    ) -> dict[str, Any]:
        """D2: on a lost race the *tool runs again* on the state that won, so no result computed
        from stale state is ever committed; bounded, then CONFLICT. After the backoff the state
        is read again (one consistent GetItem): the state the failed commit returned is older
        than the pause, and a run on it would lose again to any commit made meanwhile (a call
        that lost once lost every rerun while other instances kept committing)."""
        delays = self._rerun.delays()
        session = self._locks.newest(session)
        while True:
            try:
                return await self._run_and_commit(prepared, call, session, deadline)
            except session_errors.VersionConflict as exc:
                delay = next(delays, None)
                if delay is None or exc.current is None:
                    raise self._store_error(prepared, exc) from exc
                self._count_store_error(prepared, exc)  # the tool runs again
                await asyncio.sleep(delay)
                session = await self._reread(prepared, exc.current, call)

    async def _reread(self, prepared: PreparedCall, session: Session, call: RequestContext) -> Session:
        """The session as stored now (X4: a consistent read decides the next commit's condition)."""
        try:
            return await self.blocking(self.store.get_session, session.id, owner=call.principal, consistent=True)
        except session_errors.SessionStoreError as exc:
            raise self._store_error(prepared, exc) from exc

    async def _run_and_commit(
        self, prepared: PreparedCall, call: RequestContext, session: Session, deadline: float
    ) -> dict[str, Any]:
        started = self._clock.now()
        pending = PendingChanges(prepared.spec.effect, session)
        result = await self._invoke(prepared, self._context(prepared, call, session, pending), deadline)
        finished = self._clock.now()
        # The commit and its event are one unit: a cancellation arriving now must not leave a
        # committed call without its event, so the pair runs shielded (``settle`` awaits it).
        commit = asyncio.ensure_future(self._commit(prepared, call, pending, session, result, started, finished))
        self._pending.add(commit)
        commit.add_done_callback(self._pending.discard)
        try:
            return await asyncio.shield(commit)
        except asyncio.CancelledError:
            commit.add_done_callback(_log_orphaned_failure)
            raise

    def _context(
        self, prepared: PreparedCall, call: RequestContext, session: Session | None, effects: PendingChanges
    ) -> ToolContext[object]:
        return context.ToolContext.for_request(
            call,
            self.services,
            loaded_session=context.session_as_seen(session, reads_context=prepared.spec.reads_context),
            tool_call_id=prepared.tool_call_id,
            progress_token=prepared.progress_token,
            effects=effects,
        )

    def call_limit(self, spec: ToolSpec) -> float:
        return call_limit(spec, self.max_call_seconds)

    def _deadline(self, prepared: PreparedCall) -> float:
        """Event-loop time by which a call starting now must have returned."""
        return asyncio.get_running_loop().time() + self.call_limit(prepared.spec)

    async def _invoke(
        self, prepared: PreparedCall, ctx: ToolContext[object], deadline: float | None = None
    ) -> dict[str, Any]:
        """``deadline``: the request's (``run``), shared by the reruns; else from now."""
        if deadline is None:
            deadline = self._deadline(prepared)
        try:
            result: dict[str, Any] = await invoke(
                prepared.spec, ctx, prepared.arguments, deadline, self.max_call_seconds, is_throttle=self.is_throttle
            )
        except JsonRpcError as exc:
            # A failure the classifier read as a throttle (the tool's own AWS calls, or the
            # store's through ToolContext) is answered "retry shortly", and counted.
            cause = exc.__cause__
            if self.metrics is not None and cause is not None and self.is_throttle(cause):
                self._count(prepared, STORE_THROTTLES, cause)
            raise
        return result

    async def _commit(
        self,
        prepared: PreparedCall,
        call: RequestContext,
        pending: PendingChanges,
        session: Session,
        result: dict[str, Any],
        started: float,
        finished: float,
    ) -> dict[str, Any]:
        """Commit, then queue the event. VersionConflict propagates (the caller reruns the
        tool); every other store error is answered by its code (``effects.store_error``)."""
        admit_result(prepared.spec, result)
        # The event is committed with the record (K10): the table stream's relay emits it should
        # this process die before its flush; emitted here too, for the stream within milliseconds.
        event = call_event(prepared, call, result, started, finished) if self.events is not None else None
        if event is not None:
            event.recorded = True  # the commit writes the record: ingest only counts the call
        call_record = ToolCall(
            id=prepared.tool_call_id,
            name=prepared.spec.name,
            arguments=prepared.arguments,
            result=result,
            is_error=bool(result.get("isError")),
            started_at=started,
            finished_at=finished,
            request_hash=prepared.request_hash,
            trace_id=call.trace.trace_id if call.trace is not None else None,
            span_id=call.trace.span_id if call.trace is not None else None,
            event=event,
            replayable=prepared.replayable,
        )
        # Read-modify-write: under the session's version when the run read the session as a
        # whole, else under the versions of the attributes it read (appends never conflict).
        changes = pending.changes()
        try:
            # Always in a worker thread: a cancellation posted while the commit runs must be
            # read meanwhile (the call then ends without a response, its event still flushed).
            done = await asyncio.to_thread(self.store.commit, session, call_record, changes)
        except session_errors.DuplicateToolCall as exc:
            # A concurrent copy of this same request committed (and reports) it; a different
            # request under the id is IdempotencyKeyReused, answered -32602 below.
            return dict(exc.original.result)
        except session_errors.VersionConflict:
            raise  # counted by the caller, which reruns the tool or gives up
        except session_errors.SessionStoreError as exc:
            raise self._store_error(prepared, exc) from exc
        if changes.effect != APPEND_ONLY:  # exact, or exact attribute by attribute (SessionLocks.newest)
            self._locks.remember(done.session)
        if self.events is not None and event is not None:
            self.events.emit(event)
        return result

    def _store_error(self, prepared: PreparedCall, exc: session_errors.SessionStoreError) -> JsonRpcError:
        """The answer to a store error, counted first when it is a conflict or a throttle."""
        self._count_store_error(prepared, exc)
        return store_error(exc)

    def _count_store_error(self, prepared: PreparedCall, exc: session_errors.SessionStoreError) -> None:
        counter = store_counter(exc)
        if counter is not None:
            self._count(prepared, counter, exc)

    def _count(self, prepared: PreparedCall, counter: str, exc: BaseException) -> None:
        """One EMF line per occurrence, per tool (a name the catalog resolved: a bounded dimension)."""
        if self.metrics is not None:
            self.metrics.count(counter, per=(TOOL, prepared.spec.name), properties={ERROR_TYPE: type(exc).__name__})

    def record_refusal(self, prepared: PreparedCall, call: RequestContext, refusal: JsonRpcError) -> None:
        """The event of a call the policies refused before anything ran (``invocation.denial_event``)."""
        if self.events is not None:
            self.events.emit(denial_event(prepared, call, refusal, self._clock.now()))

    def _record_event(
        self, prepared: PreparedCall, call: RequestContext, result: dict[str, Any], started: float, finished: float
    ) -> None:
        if self.events is not None:
            self.events.emit(call_event(prepared, call, result, started, finished))


def _log_orphaned_failure(commit: asyncio.Future[dict[str, Any]]) -> None:
    """The call was cancelled while its commit ran on: nobody awaits the outcome any more."""
    if not commit.cancelled() and commit.exception() is not None:
        logger.error("commit of a cancelled tool call failed", exc_info=commit.exception())
