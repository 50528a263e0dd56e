"""Calling a tool, resource or prompt in a unit test, as the endpoint calls it, without AWS::

    harness = ToolHarness(principal="alice", attributes={"counters": {"hits": 2}})
    result = await harness.call(increment_counter, name="hits")  # the CallToolResult
    assert result["structuredContent"] == {"name": "hits", "value": 3}
    assert harness.session.attributes["counters"] == {"hits": 3}  # committed

Arguments go the way a client's would: to JSON (an Enum member, a model instance are accepted),
checked against the tool's input schema (a refusal is the endpoint's ``Invalid arguments``
isError result), converted to the declared types. The tool gets a real
:class:`~mcp_platform.protocol.context.ToolContext`; what it queues for its session (context entries,
attributes, extra items, condition checks) is committed to an in-memory store by the rules of the
endpoint's commit (:class:`InMemorySessions`). A :class:`ToolError`, or the ``max_seconds`` limit,
is an isError result; any other exception is raised as it is (the endpoint would answer -31007),
so the test shows its traceback. A commit the store refuses raises the store's error as it is
(``PreconditionFailed`` naming the label of the tool's condition that failed,
``SessionCapacityExceeded``...), which the endpoint answers with its error code.

A tool's dependencies are fakes the test passes: the app's own (``deps=``, the tool's
``ctx.services.deps``) and the platform's read sides (``audit_trail=``, ``recent_events=``);
``ctx.services.store`` is an :class:`InMemorySessions`, which holds the harness's sessions.
Asking the client (``ctx.elicit``...) is refused as on a request that cannot ask.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp_platform.application.audit.trail import AuditTrailReader
from mcp_platform.application.auth.base import Principal
from mcp_platform.application.events.ports import RecentToolEvents
from mcp_platform.application.policies.ports import Decision
from mcp_platform.application.services import Services, ToolContext
from mcp_platform.application.sessions.changes import ConditionCheck, ExtraPut, PendingChanges, SessionChanges
from mcp_platform.application.sessions.commit_plan import Budgets, CommitPlan, MetadataWrite, plan_commit
from mcp_platform.application.sessions.cursors import decode_cursor, encode_cursor
from mcp_platform.application.sessions.errors import (
    IdempotencyKeyReused,
    SessionAlreadyExists,
    SessionNotFound,
    SessionStoreError,
    require_alive,
)
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
from mcp_platform.application.stored_form import check_storable
from mcp_platform.config import CONTEXT_IN_ITEMS
from mcp_platform.protocol import context as protocol_context
from mcp_platform.protocol.access import CALL_TOOL, GET_PROMPT, READ_RESOURCE
from mcp_platform.protocol.catalog import Catalog, spec_of
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock, iso_utc
from mcp_platform.protocol.conversion import jsonable
from mcp_platform.protocol.prompts import PromptSpec, messages
from mcp_platform.protocol.request_context import ClientChannel, RequestContext
from mcp_platform.protocol.resources import ResourceSpec, ResourceTemplateSpec, contents, expand_template
from mcp_platform.protocol.signature import ArgumentError
from mcp_platform.protocol.tools import READ_ONLY, ToolError, ToolSpec, error_result, tool_spec
from mcp_platform.protocol.versions import MODERN_VERSIONS, SESSION_HANDLE_ARGUMENT

SESSION_SECONDS = 3600


class InMemorySessions:
    """The session store (``application.sessions.ports.SessionRepository``) in memory, for unit
    tests, with the table's semantics: another principal's session, an unknown one and an
    expired one are all ``SessionNotFound`` (D6), and a commit follows the same rules as the
    DynamoDB store's, because it is the same plan (``application.sessions.commit_plan``), applied
    here all at once or not at all, under a lock: a read-modify-write commit from a stale state is
    VersionConflict, a tool's extra puts and condition checks hold or fail with
    PreconditionFailed, a committed call id is DuplicateToolCall or IdempotencyKeyReused, the
    budgets apply, and the records list in the order of their sort keys.

    The tool's own items (``ExtraPut``) are kept in :attr:`items`, keyed by their table (None:
    the session table) and key attributes: ``pk`` and ``sk`` unless ``key_attributes`` names
    another table's (an ``ExtraPut``'s ``partition_key`` replaces ``pk``)."""

    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        *,
        budgets: Budgets | None = None,
        ttl_seconds: int = SESSION_SECONDS,
        key_attributes: Mapping[str, Sequence[str]] | None = None,
        context_layout: str = CONTEXT_IN_ITEMS,
    ) -> None:
        """``context_layout``: where a commit puts the entries it appends, as the table's
        (``mcp_platform.config.CONTEXT_IN_ITEMS`` or ``CONTEXT_IN_LIST``)."""
        self.sessions: dict[str, Session] = {}
        self.items: dict[tuple[str | None, tuple[tuple[str, Any], ...]], dict[str, Any]] = {}
        """The tools' extra items (``ExtraPut``), by table and key."""
        self.budgets = budgets or Budgets()
        self.ttl_seconds = ttl_seconds
        self._key_attributes = dict(key_attributes or {})
        self._records: dict[str, dict[str, ToolCallRecord]] = {}
        self._results: dict[tuple[str, str], ToolCallResult] = {}
        self._context_items: dict[str, dict[str, list[Any]]] = {}
        """Per session, the context items commits wrote (sort key -> entries), as the table's."""
        self.context_layout = context_layout
        self._clock = clock
        self._lock = threading.RLock()

    def create_session(
        self,
        owner: str,
        *,
        session_id: str | None = None,
        kind: str = KIND_APPLICATION,
        attributes: dict[str, Any] | None = None,
        context: list[Any] | None = None,
    ) -> Session:
        now = self._clock.now()
        session = Session(
            id=session_id or uuid.uuid4().hex,
            owner=owner,
            status=STATUS_ACTIVE,
            version=1,
            ttl=math.floor(now) + self.ttl_seconds,
            context=list(context or []),
            kind=kind,
            attributes=dict(attributes or {}),
            created_at=iso_utc(now),
            updated_at=iso_utc(now),
            context_bytes=check_storable(list(context)) if context else None,
            attribute_versions={},
        )
        with self._lock:
            if session.id in self.sessions:
                raise SessionAlreadyExists(session.id)
            self.sessions[session.id] = session
        return session

    def get_session(
        self, session_id: str, *, owner: str | None = None, consistent: bool = True, with_context: bool = True
    ) -> Session:
        """The live session; ``with_context=False``: without the entries of its context items
        (what the table's metadata item holds alone: the context of a session seeded with one)."""
        found = self.sessions.get(session_id)
        if found is None or (owner is not None and found.owner != owner):
            raise SessionNotFound(session_id)
        require_alive(found, self._clock.now())
        if not with_context and self._context_items.get(session_id):
            return dataclasses.replace(found, context=self._inline_context(found))
        return found

    def _item_entries(self, session_id: str) -> list[Any]:
        """The entries of the session's context items in the order of their keys (the time of the
        write that appended them, then its id), as the table's Query reads them."""
        items = self._context_items.get(session_id, {})
        return [entry for key in sorted(items) for entry in items[key]]

    def _inline_context(self, session: Session) -> list[Any]:
        """The part of a held context that is not in context items (its metadata's own list)."""
        return list(session.context[: len(session.context) - len(self._item_entries(session.id))])

    def _add_inline(self, session: Session, entries: Sequence[Any]) -> Session:
        """``session`` with ``entries`` appended to its metadata's own list (the list layout),
        which is read before the context items."""
        context = [*self._inline_context(session), *entries, *self._item_entries(session.id)]
        return dataclasses.replace(session, context=context)

    def _add_context_item(self, session: Session, sk: str, entries: Sequence[Any]) -> Session:
        """``session`` with a context item of ``entries`` added under ``sk``."""
        inline = self._inline_context(session)
        self._context_items.setdefault(session.id, {})[sk] = list(entries)
        return dataclasses.replace(session, context=[*inline, *self._item_entries(session.id)])

    def end_session(self, session_id: str, *, owner: str | None = None) -> None:
        with self._lock:
            session = self.get_session(session_id, owner=owner)
            ended = dataclasses.replace(
                session, status=STATUS_ENDED, version=session.version + 1, updated_at=iso_utc(self._clock.now())
            )
            self.sessions[session_id] = ended

    def list_tool_calls(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        consistent: bool = True,
    ) -> ToolCallPage:
        """A page of the session's records in the order of their sort keys (start time, then id),
        as the table's Query returns them; the cursor is the table store's."""
        if not 1 <= limit <= 1000:
            raise ValueError(f"limit must be 1..1000, got {limit}")
        after = decode_cursor(cursor) if cursor else None
        self.get_session(session_id, owner=owner)
        records = sorted(self._records.get(session_id, {}).values(), key=lambda record: record.sk)
        if after is not None:
            records = [record for record in records if record.sk > after]
        page = records[:limit]
        more = len(records) > limit
        return ToolCallPage(records=page, next_cursor=encode_cursor(page[-1].sk) if more else None)

    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str | None,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
        with_context: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        session = self.get_session(session_id, owner=owner, with_context=with_context)
        prior = self._results.get((session_id, tool_call_id)) if tool_call_id is not None else None
        if prior is not None and request_hash is not None and not prior.answers(request_hash):
            raise IdempotencyKeyReused(prior.tool_call_id)
        return session, prior

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
        with self._lock:
            stored = self.get_session(session_id, owner=owner)
            updated = mutate(stored)
            if updated.context != stored.context:
                raise ValueError("mutate may not change the context: append to it (a commit)")
            self.sessions[session_id] = dataclasses.replace(
                updated,
                version=stored.version + 1,
                attribute_versions=stored.versions_after(updated.attributes),
                updated_at=iso_utc(self._clock.now()),
            )
            return self.sessions[session_id]

    def commit(self, session: Session, record: ToolCall, changes: SessionChanges) -> CommitResult:
        """The plan of the commit (what the DynamoDB store sends as one transaction), applied
        whole under the lock, or refused by the same rules with nothing applied."""
        now = self._clock.now()
        plan = plan_commit(
            session, record, changes, now=now, ttl=math.floor(now) + self.ttl_seconds, budgets=self.budgets
        )
        with self._lock:
            refusal = plan.refusal(_Held(self, plan))
            if refusal is not None:
                raise refusal
            stored = self.sessions[session.id]
            applied = dataclasses.replace(plan.metadata.apply(stored), context=stored.context)
            if plan.metadata.context_append and self.context_layout == CONTEXT_IN_ITEMS:
                applied = self._add_context_item(applied, plan.metadata.context_sk, plan.metadata.context_append)
            elif plan.metadata.context_append:
                applied = self._add_inline(applied, plan.metadata.context_append)
            self.sessions[session.id] = applied
            self._records.setdefault(session.id, {})[plan.record.record.sk] = plan.record.record
            if plan.record.has_marker:  # a replay finds it; a fresh id has none to find
                self._results[(session.id, record.id)] = plan.record.marker
            for put in plan.extra_puts:
                self.items[self.key_of(put)] = dict(put.item)
        return plan.outcome()

    def key_of(self, intent: ExtraPut | ConditionCheck) -> tuple[str | None, tuple[tuple[str, Any], ...]]:
        """Where an extra put writes, or a condition check looks: its table and key."""
        if isinstance(intent, ConditionCheck):
            return intent.table, tuple(sorted(intent.key.items()))
        names = list(self._key_attributes.get(intent.table or "", ("pk", "sk")))
        if intent.partition_key is not None:
            names[0] = intent.partition_key
        return intent.table, tuple(sorted((name, intent.item[name]) for name in names if name in intent.item))


class _Held:
    """What an in-memory store holds where a plan writes (``commit_plan.Found``)."""

    def __init__(self, store: InMemorySessions, plan: CommitPlan) -> None:
        self.store, self.plan = store, plan

    def committed(self) -> ToolCallResult | None:
        return self.store._results.get((self.plan.session.id, self.plan.record.call.id))

    def metadata_failure(self, metadata: MetadataWrite) -> SessionStoreError | None:
        return metadata.failure(self.store.sessions.get(metadata.session_id))

    def refused(self, index: int, intent: ExtraPut | ConditionCheck) -> bool:
        return not intent.holds(self.store.items.get(self.store.key_of(intent)))


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
        request = RequestContext(
            self.principal,
            MODERN_VERSIONS[0],
            modern=True,
            declared_log_level=self.log_level,
            declared_capabilities=self.client_capabilities,
            channel=ClientChannel(notify=self._record),
        )
        return protocol_context.ToolContext.for_request(
            request,
            self.services,
            loaded_session=protocol_context.session_as_seen(session, reads_context=spec is None or spec.reads_context),
            tool_call_id=uuid.uuid4().hex,
            progress_token="harness",  # noqa: S106 (not a secret: every progress report is recorded)
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
        """The endpoint's commit: the run's changes (``PendingChanges.changes``) with the call's
        record, through the store's ``commit``: the context appended (D3), the attributes a
        read-modify-write tool set (the whole map, or attribute by attribute), the tool's own
        items and checks (D10), the version and call count incremented (D2)."""
        changes = pending.changes()
        call = ToolCall(
            id=ctx.tool_call_id,
            name=spec.name,
            arguments=arguments,
            result=result,
            is_error=bool(result and result.get("isError")),
            replayable=False,  # a fresh id, as a 2026 call without an idempotency key has
        )
        self.store.commit(session, call, changes)
        self.extra_puts.extend(changes.extra_puts)
        self.condition_checks.extend(changes.condition_checks)


class PolicyCheck:
    """A features package's policies, decided as the endpoint decides them, without a server::

        check = PolicyCheck(mcp_tools, Path("functions/endpoint/policies"))
        assert check.may_call("refund", {"amount": 50}, groups={"support"})
        assert not check.may_call("refund", {"amount": 500}, groups={"support"})
        assert "refund" not in check.tools(tenant="acme")

    ``policies``: the folder of ``*.cedar`` files, or the files' texts by name. The policies are
    validated against the schema generated from the packages' catalog as at the endpoint's start:
    a policy naming an unknown tool or argument raises
    :class:`~mcp_platform.application.policies.ports.PolicyError` naming it. The caller is described
    by keyword (``caller_id``, ``kind``, ``groups``, ``tenant``, ``scopes``, ``client_id``), as a
    token or an API key would present it.
    """

    def __init__(self, *features: ModuleType, policies: Path | Mapping[str, str]) -> None:
        """``features``: features packages (every module of each, as the endpoint discovers them)
        or single feature modules."""
        from mcp_platform.adapters.cedar.engine import CedarPolicies
        from mcp_platform.bootstrap.policies import policy_files

        files = policy_files(policies) if isinstance(policies, Path) else dict(policies)
        if not files:
            raise ValueError(f"no *.cedar policy file in {policies}")
        self.catalog = Catalog.discover(*(m for m in features if hasattr(m, "__path__")))
        for module in (m for m in features if not hasattr(m, "__path__")):
            for value in vars(module).values():
                if spec_of(value) is not None:
                    self.catalog.add(value)
        self.engine = CedarPolicies(files, self.catalog)

    def decide(self, action: str, name: str, arguments: Mapping[str, Any] | None = None, **caller: Any) -> Decision:
        """The decision on one use (``action``: ``call_tool``, ``read_resource`` or ``get_prompt``)."""
        return self.engine.decide(policy_caller(**caller), action, name, arguments)

    def may_call(self, tool: str, arguments: Mapping[str, Any] | None = None, **caller: Any) -> bool:
        return self.decide(CALL_TOOL, tool, arguments or {}, **caller).permitted

    def may_read(self, uri: str, **caller: Any) -> bool:
        return self.decide(READ_RESOURCE, uri, **caller).permitted

    def may_get(self, prompt: str, **caller: Any) -> bool:
        return self.decide(GET_PROMPT, prompt, **caller).permitted

    def tools(self, **caller: Any) -> list[str]:
        """The tool names ``tools/list`` shows the caller."""
        names = self.catalog.tools.names()
        usable = self.engine.usable(policy_caller(**caller), CALL_TOOL, names)
        return [name for name, shown in zip(names, usable, strict=True) if shown]


def policy_caller(
    caller_id: str = "alice",
    *,
    kind: str = "api_key",
    groups: Iterable[str] = (),
    tenant: str | None = None,
    scopes: Iterable[str] | None = None,
    client_id: str | None = None,
) -> Principal:
    """A caller as policies see it (the principal an API key or a token would give)."""
    return Principal(
        id=caller_id,
        kind=kind,
        scopes=frozenset(scopes) if scopes is not None else None,
        client_id=client_id,
        tenant=tenant,
        groups=frozenset(groups),
    )
