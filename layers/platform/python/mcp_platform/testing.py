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

``services`` are the tool's dependencies: pass fakes (``Services(extra={...})``, ``audit_trail=``);
``services.sessions`` defaults to :class:`InMemorySessions`, which holds the harness's sessions.
Asking the client (``ctx.elicit``...) is refused as on a request that cannot ask.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.sessions.model import KIND_APPLICATION, STATUS_ACTIVE, Session
from mcp_platform.protocol.catalog import spec_of
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock
from mcp_platform.protocol.context import ConditionCheck, ExtraPut, Services, ToolContext
from mcp_platform.protocol.conversion import jsonable
from mcp_platform.protocol.prompts import PromptSpec, messages
from mcp_platform.protocol.resources import ResourceSpec, ResourceTemplateSpec, contents, expand_template
from mcp_platform.protocol.signature import ArgumentError
from mcp_platform.protocol.tools import READ_ONLY, ToolError, ToolSpec, error_result, tool_spec
from mcp_platform.protocol.versions import SESSION_HANDLE_ARGUMENT

SESSION_SECONDS = 3600


class InMemorySessions:
    """The part of the session store a tool reaches through ``ctx.services.sessions``
    (``create_session``, ``get_session``), in memory: another principal's session, an unknown
    one and an expired one are all ``SessionNotFound``, as in the table (D6)."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.sessions: dict[str, Session] = {}
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


@dataclasses.dataclass
class ToolHarness:
    principal: str = "tester"
    attributes: dataclasses.InitVar[dict[str, Any] | None] = None
    """The seeded session's attributes."""
    context: dataclasses.InitVar[list[Any] | None] = None
    """The seeded session's context entries."""
    services: Services = dataclasses.field(default_factory=Services)
    client_capabilities: dict[str, Any] | None = None
    """What the client declared (None: unknown, nothing refused)."""
    log_level: str | None = "debug"
    notifications: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The notifications the features sent (progress, log messages), in order."""
    extra_puts: list[ExtraPut] = dataclasses.field(default_factory=list)
    """Items committed beside the tool calls' records (D10)."""
    condition_checks: list[ConditionCheck] = dataclasses.field(default_factory=list)
    session_id: str = dataclasses.field(init=False)

    def __post_init__(self, attributes: dict[str, Any] | None, context: list[Any] | None) -> None:
        if self.services.sessions is None:
            self.services = dataclasses.replace(self.services, sessions=InMemorySessions())
        self.session_id = self._store.create_session(self.principal, attributes=attributes, context=context).id

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
        ctx = self._context(spec, session)
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
            self._commit(session, ctx)
        return result

    async def value(self, tool: Callable[..., Any], /, **arguments: Any) -> Any:
        """What the tool returned (a model, a dataclass...), its arguments checked and converted
        as for :meth:`call`: a refusal is a ValueError, a ToolError is raised as it is."""
        spec = tool_spec(tool)
        wire = jsonable(arguments)
        spec.validate_arguments(wire)
        session = self._session_of(spec, wire)
        ctx = self._context(spec, session)
        try:
            return await spec.run(ctx, **wire)
        finally:
            if session is not None and spec.effect != READ_ONLY:
                self._commit(session, ctx)

    # -- resources and prompts ------------------------------------------------------------------

    async def read(self, resource: Callable[..., Any], /, uri: str | None = None, **variables: str) -> list[Any]:
        """The ``resources/read`` contents of a resource, or of a template at ``uri`` (or with
        its ``variables`` given as the strings a URI holds)."""
        spec = spec_of(resource)
        ctx = self._context(None, None)
        if isinstance(spec, ResourceSpec):
            return contents(spec.uri, await spec.run(ctx), spec.mime_type)
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
        return messages(await spec.run(self._context(None, None), **spec.bind(arguments)))

    # -- the endpoint's part --------------------------------------------------------------------

    def _context(self, spec: ToolSpec | None, session: Session | None) -> ToolContext:
        return ToolContext(
            principal=self.principal,
            services=self.services,
            loaded_session=session,
            tool_call_id=uuid.uuid4().hex,
            progress_token="harness",  # noqa: S106 (not a secret: every progress report is recorded)
            log_level=self.log_level,
            notify=self._record,
            effect=spec.effect if spec is not None else None,
            client_capabilities=self.client_capabilities,
        )

    async def _record(self, message: dict[str, Any]) -> None:
        self.notifications.append(message)

    def _session_of(self, spec: ToolSpec, arguments: dict[str, Any]) -> Session | None:
        """A session tool's session: the one the call names (``session``), else the seeded one."""
        if spec.session != "required":
            return None
        return self._session(arguments.pop(SESSION_HANDLE_ARGUMENT, self.session_id))

    def _session(self, session_id: str) -> Session:
        found: Session = self.services.sessions.get_session(session_id, owner=self.principal)
        return found

    @property
    def _store(self) -> InMemorySessions:
        store = self.services.sessions
        if not isinstance(store, InMemorySessions):
            raise TypeError("the harness keeps its sessions in InMemorySessions; services.sessions is another store")
        return store

    def _commit(self, session: Session, ctx: ToolContext) -> None:
        """What the endpoint's transaction writes: the context appended (D3), the attributes a
        read-modify-write tool set (the whole map, or attribute by attribute), the version and
        call count incremented (D2)."""
        whole, by_attribute = ctx.attribute_commit()
        attributes = dict(session.attributes)
        if whole is not None:
            attributes = dict(whole)
        elif by_attribute is not None:
            attributes.update(by_attribute.changes(session.attributes))
        self._store.sessions[session.id] = dataclasses.replace(
            session,
            context=[*session.context, *ctx.context_append],
            attributes=attributes,
            version=session.version + 1,
            tool_calls=session.tool_calls + 1,
        )
        self.extra_puts.extend(ctx.extra_puts)
        self.condition_checks.extend(ctx.condition_checks)
