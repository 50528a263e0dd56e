"""Calling a tool, resource or prompt in a unit test, as the endpoint calls it, without AWS::

    harness = ToolHarness(principal="alice", attributes={"counters": {"hits": 2}})
    result = await harness.call(increment_counter, name="hits")  # the CallToolResult
    assert result["structuredContent"] == {"name": "hits", "value": 3}
    assert harness.session.attributes["counters"] == {"hits": 3}  # committed

Arguments go the way a client's would: to JSON (an Enum member, a model instance are accepted),
checked against the tool's input schema (a refusal is the endpoint's ``Invalid arguments``
isError result), converted to the declared types. The tool gets a real
:class:`~mcp_platform.protocol.context.ToolContext`; what it queues for its session (context entries,
attributes, extra items) is applied to an in-memory session as the endpoint's commit would. A
:class:`ToolError`, or the ``max_seconds`` limit, is an isError result; any other exception is
raised as it is (the endpoint would answer -31007), so the test shows its traceback.

A tool's dependencies are fakes the test passes: the app's own (``deps=``, the tool's
``ctx.services.deps``) and the platform's read sides (``audit_trail=``, ``recent_events=``);
``ctx.services.store`` is an :class:`InMemorySessions`, which holds the harness's sessions.
Asking the client (``ctx.elicit``...) is refused as on a request that cannot ask.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from mcp_platform.application.audit.trail import AuditTrailReader
from mcp_platform.application.events.ports import RecentToolEvents
from mcp_platform.application.services import Services, ToolContext
from mcp_platform.application.sessions.changes import ConditionCheck, ExtraPut, PendingChanges, SessionChanges
from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.sessions.model import (
    KIND_APPLICATION,
    STATUS_ACTIVE,
    STATUS_ENDED,
    CommitResult,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallRecord,
    ToolCallResult,
)
from mcp_platform.protocol.catalog import spec_of
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock, iso_utc
from mcp_platform.protocol.conversion import jsonable
from mcp_platform.protocol.prompts import PromptSpec, messages
from mcp_platform.protocol.resources import ResourceSpec, ResourceTemplateSpec, contents, expand_template
from mcp_platform.protocol.signature import ArgumentError
from mcp_platform.protocol.tools import READ_ONLY, ToolError, ToolSpec, error_result, tool_spec
from mcp_platform.protocol.versions import SESSION_HANDLE_ARGUMENT

SESSION_SECONDS = 3600


class InMemorySessions:
    """The session store (``application.sessions.ports.SessionRepository``) in memory, for unit
    tests: another principal's session, an unknown one and an expired one are all
    ``SessionNotFound``, as in the table (D6); a commit applies the call's effects as the
    table's transaction does (context appended, attributes, version and call count, D2/D3),
    without its conditions: one test runs one call at a time."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.sessions: dict[str, Session] = {}
        self.tool_calls: dict[str, list[ToolCallRecord]] = {}
        self._results: dict[tuple[str, str], ToolCallResult] = {}
        self._clock = clock

    def create_session(
        self,
        owner: str,
        *,
        session_id: str | None = None,
        kind: str = KIND_APPLICATION,
        attributes: dict[str, Any] | None = None,
        context: list[Any] | None = None,
    ) -> Session:
        session = Session(
            id=session_id or uuid.uuid4().hex,
            owner=owner,
            status=STATUS_ACTIVE,
            version=1,
            ttl=int(self._clock.now()) + SESSION_SECONDS,
            context=list(context or []),
            kind=kind,
            attributes=dict(attributes or {}),
        )
        self.sessions[session.id] = session
        return session

    def get_session(self, session_id: str, *, owner: str | None = None, consistent: bool = True) -> Session:
        found = self.sessions.get(session_id)
        if found is None or (owner is not None and found.owner != owner) or not found.is_alive(self._clock.now()):
            raise SessionNotFound(session_id)
        return found

    def end_session(self, session_id: str, *, owner: str | None = None) -> None:
        session = self.get_session(session_id, owner=owner)
        self.sessions[session_id] = dataclasses.replace(session, status=STATUS_ENDED)

    def list_tool_calls(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        consistent: bool = True,
    ) -> ToolCallPage:
        self.get_session(session_id, owner=owner)
        start = int(cursor or 0)
        records = self.tool_calls.get(session_id, [])[start : start + limit]
        after = start + len(records)
        more = after < len(self.tool_calls.get(session_id, []))
        return ToolCallPage(records=records, next_cursor=str(after) if more else None)

    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        return self.get_session(session_id, owner=owner), self._results.get((session_id, tool_call_id))

    def slide_expiry(self, session: Session, *, owner: str | None = None) -> Session:
        return session

    def update_metadata(
        self,
        session_id: str,
        mutate: Callable[[Session], Session],
        *,
        owner: str | None = None,
        current: Session | None = None,
    ) -> Session:
        updated = mutate(self.get_session(session_id, owner=owner))
        self.sessions[session_id] = dataclasses.replace(updated, version=updated.version + 1)
        return self.sessions[session_id]

    def commit(self, session: Session, record: ToolCall, changes: SessionChanges) -> CommitResult:
        call = record
        context_append, attributes, by_attribute = changes.context_append, changes.attributes, changes.by_attribute
        held = self.get_session(session.id, owner=session.owner)
        changed = dict(held.attributes)
        if attributes is not None:
            changed = dict(attributes)
        elif by_attribute is not None:
            changed.update(by_attribute.changes(held.attributes))
        committed = dataclasses.replace(
            held,
            context=[*held.context, *context_append],
            attributes=changed,
            version=held.version + 1,
            tool_calls=held.tool_calls + 1,
        )
        self.sessions[held.id] = committed
        at = iso_utc(call.started_at if call.started_at is not None else self._clock.now())
        stored = ToolCallRecord(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            is_error=call.is_error,
            started_at=at,
            finished_at=at,
            sk=f"tool#{at}#{call.id}",
        )
        self.tool_calls.setdefault(held.id, []).append(stored)
        result = ToolCallResult(
            tool_call_id=call.id,
            tool_name=call.name,
            result=call.result,
            is_error=call.is_error,
            record_sk=stored.sk,
            committed_at=at,
            request_hash=call.request_hash,
        )
        self._results[(held.id, call.id)] = result
        return CommitResult(session=committed, result=result)


@dataclasses.dataclass
class ToolHarness:
    principal: str = "tester"
    attributes: dataclasses.InitVar[dict[str, Any] | None] = None
    """The seeded session's attributes."""
    context: dataclasses.InitVar[list[Any] | None] = None
    """The seeded session's context entries."""
    deps: object = None
    """The feature modules' own dependencies (``ctx.services.deps``): pass fakes."""
    audit_trail: AuditTrailReader | None = None
    recent_events: RecentToolEvents | None = None
    store: InMemorySessions = dataclasses.field(default_factory=InMemorySessions)
    """The sessions (``ctx.services.store``, awaited through ``ctx.services.sessions``): the
    seeded one, and any a tool opens."""
    client_capabilities: dict[str, Any] | None = None
    """What the client declared (None: unknown, nothing refused)."""
    log_level: str | None = "debug"
    notifications: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The notifications the features sent (progress, log messages), in order."""
    extra_puts: list[ExtraPut] = dataclasses.field(default_factory=list)
    """Items committed beside the tool calls' records (D10)."""
    condition_checks: list[ConditionCheck] = dataclasses.field(default_factory=list)
    session_id: str = dataclasses.field(init=False)

    services: Services = dataclasses.field(init=False)

    def __post_init__(self, attributes: dict[str, Any] | None, context: list[Any] | None) -> None:
        self.services = Services(
            store=self.store, audit_trail=self.audit_trail, recent_events=self.recent_events, deps=self.deps
        )
        self.session_id = self.store.create_session(self.principal, attributes=attributes, context=context).id

    @property
    def session(self) -> Session:
        """The seeded session as committed so far (a session tool runs against it unless the
        call names another with the ``session`` argument)."""
        return self._session(self.session_id)

    # -- tools ----------------------------------------------------------------------------------

    async def call(self, tool: Callable[..., Any], /, **arguments: Any) -> dict[str, Any]:
        """The CallToolResult the endpoint would answer (effects committed to the session)."""
        spec = tool_spec(tool)
        wire = jsonable(arguments)
        try:
            spec.validate_arguments(wire)
        except ValueError as exc:
            return error_result(f"Invalid arguments: {exc}")
        session = self._session_of(spec, wire)
        pending = PendingChanges(spec.effect, session)
        ctx = self._context(spec, session, pending)
        limit = asyncio.timeout(spec.max_seconds)
        try:
            async with limit:
                result = spec.to_result(await spec.run(ctx, **wire))
        except ToolError as exc:
            result = error_result(str(exc))
        except ArgumentError as exc:
            result = error_result(f"Invalid arguments: {exc}")
        except TimeoutError:
            if not limit.expired():
                raise  # the tool's own timeout (a slow dependency): not the limit
            return error_result(f"Tool {spec.name} was stopped at its {spec.max_seconds:g} s limit (max_seconds)")
        if session is not None and spec.effect != READ_ONLY:
            self._commit(session, ctx, pending, spec, wire, result)
        return result

    async def value(self, tool: Callable[..., Any], /, **arguments: Any) -> Any:
        """What the tool returned (a model, a dataclass...), its arguments checked and converted
        as for :meth:`call`: a refusal is a ValueError, a ToolError is raised as it is."""
        spec = tool_spec(tool)
        wire = jsonable(arguments)
        spec.validate_arguments(wire)
        session = self._session_of(spec, wire)
        pending = PendingChanges(spec.effect, session)
        ctx = self._context(spec, session, pending)
        try:
            return await spec.run(ctx, **wire)
        finally:
            if session is not None and spec.effect != READ_ONLY:
                self._commit(session, ctx, pending, spec, wire, None)

    # -- resources and prompts ------------------------------------------------------------------

    async def read(self, resource: Callable[..., Any], /, uri: str | None = None, **variables: str) -> list[Any]:
        """The ``resources/read`` contents of a resource, or of a template at ``uri`` (or with
        its ``variables`` given as the strings a URI holds)."""
        spec = spec_of(resource)
        ctx = self._context(None, None, None)
        if isinstance(spec, ResourceSpec):
            return spec.contents(await spec.run(ctx))
        if not isinstance(spec, ResourceTemplateSpec):
            raise TypeError(f"{resource!r} is not a resource: decorate it with @resource or @resource_template")
        if uri is not None:
            matched = spec.match(uri)
            if matched is None:
                raise ValueError(f"{uri} does not match {spec.uri_template}")
            variables = matched
        else:
            uri = expand_template(spec.uri_template, variables)
        return contents(uri, await spec.run(ctx, **spec.arguments(variables)), spec.mime_type)

    async def get_prompt(self, prompt: Callable[..., Any], /, **arguments: str) -> list[dict[str, Any]]:
        """The ``prompts/get`` messages (arguments are strings, as on the wire)."""
        spec = spec_of(prompt)
        if not isinstance(spec, PromptSpec):
            raise TypeError(f"{prompt!r} is not a prompt: decorate it with @prompt")
        return messages(await spec.run(self._context(None, None, None), **spec.bind(arguments)))

    # -- the endpoint's part --------------------------------------------------------------------

    def _context(self, spec: ToolSpec | None, session: Session | None, effects: PendingChanges | None) -> ToolContext:
        return ToolContext(
            principal=self.principal,
            services=self.services,
            loaded_session=session,
            tool_call_id=uuid.uuid4().hex,
            progress_token="harness",  # noqa: S106 (not a secret: every progress report is recorded)
            log_level=self.log_level,
            notify=self._record,
            client_capabilities=self.client_capabilities,
            effects=effects,
        )

    async def _record(self, message: dict[str, Any]) -> None:
        self.notifications.append(message)

    def _session_of(self, spec: ToolSpec, arguments: dict[str, Any]) -> Session | None:
        """A session tool's session: the one the call names (``session``), else the seeded one."""
        if spec.session != "required":
            return None
        return self._session(arguments.pop(SESSION_HANDLE_ARGUMENT, self.session_id))

    def _session(self, session_id: str) -> Session:
        return self.store.get_session(session_id, owner=self.principal)

    def _commit(
        self,
        session: Session,
        ctx: ToolContext,
        pending: PendingChanges,
        spec: ToolSpec,
        arguments: dict[str, Any],
        result: dict[str, Any] | None,
    ) -> None:
        """What the endpoint's transaction writes (the store's commit): the call's record, the
        context appended (D3), the attributes a read-modify-write tool set (the whole map, or
        attribute by attribute), the version and call count incremented (D2)."""
        changes = pending.changes()
        call = ToolCall(
            id=ctx.tool_call_id,
            name=spec.name,
            arguments=arguments,
            result=result,
            is_error=bool(result and result.get("isError")),
        )
        self.store.commit(session, call, changes)
        self.extra_puts.extend(changes.extra_puts)
        self.condition_checks.extend(changes.condition_checks)
