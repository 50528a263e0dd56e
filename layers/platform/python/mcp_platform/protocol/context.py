"""What a running tool can see and do: caller, session, progress, logs, cancellation, effects,
and asking its client for input (``elicit``, ``sample``, ``list_roots``, ``ask_all``; the API in
:mod:`mcp_platform.protocol.interactive`, loaded on a tool's first question)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

from mcp_platform.protocol.jsonrpc import (
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    JSONObject,
    JsonRpcError,
    JSONValue,
    notification_message,
)
from mcp_platform.protocol.request_context import Notify, RequestContext, discard_notification

if TYPE_CHECKING:  # the interactive API loads on a tool's first question, not at start
    from mcp_platform.protocol.input_required import InputRequest
    from mcp_platform.protocol.interactive import Elicited, Interaction, Sampled

# DynamoDB allows longer attribute names; a tool's attribute is a short key.
MAX_ATTRIBUTE_NAME = 255
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class ChangeNotifier(Protocol):
    """Tells listening clients that a resource or a list changed (``notify_resource_updated``,
    ``notify_list_changed``); the application's notifications when subscriptions are on."""

    async def resource_updated(self, uri: str, *, principal: str) -> object: ...

    async def list_changed(self, kind: str) -> object: ...


class ToolServices(Protocol):
    """What the protocol itself needs of the services a context carries; the application's
    ``Services`` (typed by its ports) is the record every running context holds."""

    @property
    def notifications(self) -> ChangeNotifier | None: ...


class SessionState(Protocol):
    """A session as a tool reads it (the application's ``Session``): its handle, owner, expiry,
    version, context entries and attributes."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def ttl(self) -> int: ...

    @property
    def version(self) -> int: ...

    @property
    def tool_calls(self) -> int: ...

    @property
    def context(self) -> list[Any]: ...

    @property
    def attributes(self) -> dict[str, Any]: ...

    def attribute_version(self, name: str) -> int: ...


@dataclass(frozen=True)
class SessionWithoutContext:
    """A session as an append-only tool, or one declared ``reads_context=False``, sees it: all of
    it but its context, which is not read for such a call (reading it would make the call's cost
    grow with the session). Reading ``context`` raises, rather than show none."""

    held: SessionState

    @property
    def id(self) -> str:
        return self.held.id

    @property
    def owner(self) -> str:
        return self.held.owner

    @property
    def status(self) -> str:
        return self.held.status

    @property
    def kind(self) -> str:
        return self.held.kind

    @property
    def ttl(self) -> int:
        return self.held.ttl

    @property
    def version(self) -> int:
        return self.held.version

    @property
    def tool_calls(self) -> int:
        return self.held.tool_calls

    @property
    def context(self) -> list[Any]:
        raise ToolEffectViolation(
            "the session's context is not loaded for this tool (an append-only tool, or one declared "
            "reads_context=False): declare it effect='read_only' or 'read_modify_write', with "
            "reads_context=True (the default), to read it"
        )

    @property
    def attributes(self) -> dict[str, Any]:
        return self.held.attributes

    def attribute_version(self, name: str) -> int:
        return self.held.attribute_version(name)


def session_as_seen(session: SessionState | None, *, reads_context: bool) -> SessionState | None:
    """The session a tool is handed: without its context when the tool does not read it
    (``ToolSpec.reads_context``), so that reading it raises instead of showing none."""
    return session if session is None or reads_context else SessionWithoutContext(session)


class SessionEffects(Protocol):
    """The unit of work a context's tool-facing effects go to: what one run queues for its
    session's commit and what it read (the application's ``sessions.changes.PendingChanges``,
    which turns them into the commit's changes). The context is the tool's API; this is the
    unit of work behind it."""

    @property
    def extra_puts(self) -> list[Any]:
        """``ExtraPut`` intents: items written in the same transaction as the call record."""
        ...

    @property
    def condition_checks(self) -> list[Any]:
        """``ConditionCheck`` intents: conditions on items the transaction does not touch."""
        ...

    def append(self, messages: Sequence[dict[str, Any]]) -> None: ...

    def replace_attributes(self, attributes: Mapping[str, Any]) -> None: ...

    def read_session(self) -> None: ...

    def read_attribute(self, name: str, default: Any) -> Any: ...

    def write_attribute(self, name: str, value: Any) -> None: ...

    def fork(self) -> Self: ...

    def adopt(self, worker: Self) -> None: ...

    def discard(self) -> None: ...


@dataclass
class QuestionCounter:
    """The questions one run of a tool has asked so far: an unnamed question's key is
    ``<kind>-<n>`` (the n-th question of the run, named or not), so a deterministic tool asks
    the same keys whenever it runs again."""

    asked: int = 0

    def count_one(self) -> int:
        """Counts a question; returns its number in the run."""
        self.asked += 1
        return self.asked


ServicesT = TypeVar("ServicesT", bound=ToolServices, covariant=True)
_Services = TypeVar("_Services", bound=ToolServices)


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[ServicesT]):
    """Per-call context handed to a tool as its ``ctx`` argument. ``services`` is the
    application's record of what tools may use; feature modules import the context typed with
    it from the facade (``from mcp_platform import ToolContext``).

    Frozen: it is the tool's API. What a run changes lives in named objects behind it: the unit
    of work (``effects``), the run's questions (``questions``) and the request's ``cancelled``."""

    principal: str
    services: ServicesT
    loaded_session: SessionState | None = None
    """The application session (``sessions.Session``) as loaded for this run, for tools declared
    with session="required"; tools read it through ``session`` or ``attribute``."""
    tool_call_id: str = ""
    progress_token: str | int | None = None
    log_level: str | None = "info"
    """Minimum level of log notifications; None = the caller did not opt in (2026), send none."""
    notify: Notify = discard_notification
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    interaction: Interaction | None = None
    """How this request's questions reach the client; None: this request cannot ask."""
    client_capabilities: dict[str, Any] | None = None
    """What the client declared (None: unknown, nothing refused); see ``supports``."""
    effects: SessionEffects | None = None
    """Where this run's session effects go: the tools/call's unit of work (None: a context that
    changes no session, as a resource's or a prompt's)."""
    questions: QuestionCounter = field(default_factory=QuestionCounter)
    """This run's questions so far (a rerun gets a context, and a counter, of its own)."""

    @classmethod
    def for_request(
        cls,
        request: RequestContext,
        services: _Services,
        *,
        loaded_session: SessionState | None = None,
        tool_call_id: str = "",
        progress_token: str | int | None = None,
        effects: SessionEffects | None = None,
    ) -> ToolContext[_Services]:
        """The one way a feature's context is made: the caller and the channel back to the
        client are the request's; what a tools/call adds (its session, id, progress token and
        unit of work) is given here."""
        return ToolContext(
            principal=request.principal,
            services=services,
            loaded_session=loaded_session,
            tool_call_id=tool_call_id,
            progress_token=progress_token,
            log_level=request.log_level,
            notify=request.channel.notify,
            cancelled=request.cancelled,
            interaction=request.channel.interaction,  # 2026: a rerun after a lost race reuses its answers
            client_capabilities=request.client_capabilities,
            effects=effects,
        )

    @property
    def session(self) -> SessionState:
        """The application session, fresh on every run (tools declared with
        ``session="required"``; any other tool has none: ToolEffectViolation). Reading it counts
        as reading all of it: a read-modify-write commit is then conditioned on the session's
        version (D2), so any other commit in between, an append too, makes the tool run again.
        A tool that needs a few attributes reads them with :meth:`attribute` instead and
        conflicts only with writes to those."""
        if self.loaded_session is None:
            raise ToolEffectViolation("only a tool declared with session='required' has a session")
        if self.effects is not None:
            self.effects.read_session()
        return self.loaded_session

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send notifications/progress when the caller asked for it (a progressToken)."""
        if self.progress_token is None:
            return
        params: JSONObject = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify(notification_message("notifications/progress", params))

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message at or above the caller's log level."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if self.log_level is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: JSONObject = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self.notify(notification_message("notifications/message", params))

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the subscribers of ``uri``, on whichever instance their stream is, that it changed
        (call it once the change is durable). A no-op when subscriptions are off. Only the
        caller's own subscribers hear of it, unless the resource is declared with cache scope
        ``public`` (it reads the same for everyone): then every subscriber does."""
        if self.services.notifications is not None:
            await self.services.notifications.resource_updated(uri, principal=self.principal)

    async def notify_list_changed(self, kind: str) -> None:
        """Tell every listening client that the list of ``kind`` (tools, prompts, resources)
        changed. A no-op when subscriptions are off."""
        if self.services.notifications is not None:
            await self.services.notifications.list_changed(kind)

    # -- asking the client (interactive.api: the same code on both protocol eras) ----------------
    @property
    def round(self) -> int:
        """2026-07-28: 1, or n+1 once the request came back with n verified requestStates."""
        return self.interaction.round if self.interaction is not None else 1

    def supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (elicitation, sampling, roots)."""
        return self.client_capabilities is None or capability in self.client_capabilities

    async def elicit(self, message: str, requested_schema: JSONObject, *, key: str | None = None) -> Elicited:
        """Ask the user to fill in a form; needs the client's ``elicitation`` capability (-32021)."""
        from mcp_platform.protocol.interactive import Elicited, elicitation

        answer = await self._ask_one(key, elicitation(message, requested_schema))
        action, content = str(answer["action"]), answer.get("content")  # check_answer: one of its actions
        return Elicited(action, dict(content) if action == "accept" and isinstance(content, Mapping) else {})

    async def sample(
        self, messages: str | Sequence[JSONObject], *, max_tokens: int, key: str | None = None, **options: JSONValue
    ) -> Sampled:
        """Ask the client's model (``sampling``); ``options`` are further params by wire name."""
        from mcp_platform.protocol.interactive import Sampled, sampling

        answer = await self._ask_one(key, sampling(messages, max_tokens=max_tokens, **options))
        stop_reason = answer.get("stopReason")
        # check_answer: role is user or assistant, model a string
        return Sampled(
            str(answer["role"]),
            answer["content"],
            str(answer["model"]),
            stop_reason if isinstance(stop_reason, str) else None,
        )

    async def list_roots(self, *, key: str | None = None) -> list[JSONObject]:
        """The client's roots (``roots``)."""
        from mcp_platform.protocol.interactive import roots

        answer = await self._ask_one(key, roots())
        found = answer["roots"]  # check_answer: a list of objects, each with a uri
        return [root for root in found if isinstance(root, dict)] if isinstance(found, list) else []

    async def ask_all(self, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        """Several questions in one round (2026: one InputRequiredResult; 2025: sent together);
        raw answers, each checked against its request's result shape."""
        from mcp_platform.protocol.interactive import CAPABILITY

        missing = {CAPABILITY[r.method] for r in requests.values() if not self.supports(CAPABILITY[r.method])}
        if missing:
            raise JsonRpcError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"This request needs client capabilities it did not declare: {', '.join(sorted(missing))}",
                {"requiredCapabilities": {name: {} for name in sorted(missing)}},
            )
        if not requests:
            return {}
        if self.interaction is None:
            raise JsonRpcError(INVALID_REQUEST, "This request cannot ask the client for input")
        return await self.interaction.ask(requests)

    async def _ask_one(self, key: str | None, request: InputRequest) -> JSONObject:
        """One question, keyed ``key`` or ``<kind>-<n>`` (the n-th question of this run)."""
        from mcp_platform.protocol.interactive import SHORT_NAMES

        number = self.questions.count_one()
        name = key or f"{SHORT_NAMES[request.method]}-{number}"
        return (await self.ask_all({name: request}))[name]

    def for_worker_thread(self) -> ToolContext[ServicesT]:
        """This context with effects of its own, for a sync tool's worker thread: a stop at
        ``max_seconds`` cannot interrupt a thread, so what the tool queues reaches this context
        only when it returns in time (:meth:`adopt_effects`), never after the stop."""
        return dataclasses.replace(self, effects=self.effects.fork() if self.effects is not None else None)

    def adopt_effects(self, worker: ToolContext[ServicesT]) -> None:
        if self.effects is not None and worker.effects is not None:
            self.effects.adopt(worker.effects)

    # -- effects on the session (committed with the call, by its declared effect) ---------------
    @property
    def extra_puts(self) -> list[Any]:
        """``ExtraPut`` items written in the same transaction as the call record (D10): append
        to this list."""
        return self._effects().extra_puts

    @property
    def condition_checks(self) -> list[Any]:
        """``ConditionCheck`` conditions on items the transaction does not otherwise touch (D10):
        append to this list."""
        return self._effects().condition_checks

    def append_to_session(self, *messages: dict[str, Any]) -> None:
        """Queue context messages, committed atomically with the tool-call record (D3, D10)."""
        self._effects().append(messages)

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        """Replace the session's attributes, committed under the version condition (D2): the
        value must be computed from ``self.session``, which is fresh on every run of the tool."""
        self._effects().replace_attributes(attributes)

    def attribute(self, name: str, default: Any = None) -> Any:
        """One session attribute (this run's own write of it, if any), its read recorded: a
        read-modify-write commit is conditioned on the version of each attribute read this way,
        so appends and writes to other attributes never make the tool run again. Build new
        values from what it returns; never change it in place."""
        session = self._session_for(name)
        if self.effects is None:
            return session.attributes.get(name, default)
        return self.effects.read_attribute(name, default)

    def set_attribute(self, name: str, value: Any) -> None:
        """Set one session attribute, committed with the call (read-modify-write tools only),
        conditioned on its version as loaded and on those of the attributes read: the value
        must be computed from what :meth:`attribute` returned in this run."""
        effects = self._effects()
        self._session_for(name)
        effects.write_attribute(name, value)

    def _effects(self) -> SessionEffects:
        if self.effects is None:
            raise ToolEffectViolation("only a tools/call changes a session: this context commits nothing")
        return self.effects

    def _session_for(self, name: str) -> SessionState:
        if self.loaded_session is None:
            raise ToolEffectViolation("session attributes need a tool declared with session='required'")
        if not isinstance(name, str) or not 0 < len(name) <= MAX_ATTRIBUTE_NAME:
            raise ToolEffectViolation(f"an attribute name is a string of 1-{MAX_ATTRIBUTE_NAME} characters")
        return self.loaded_session


class ToolEffectViolation(RuntimeError):
    """A tool did what its declared effect excludes: a defect in the tool, never committed."""
