"""What a tool call changes in its session: one immutable value, :class:`SessionChanges`, made
of the intents a tool states (:class:`ExtraPut`, :class:`ConditionCheck`, :class:`AttributeWrites`),
and :class:`PendingChanges`, the unit of work one run of a tool fills through its context.

A tool never says how a store tests a condition: an intent says what must hold ("this item is
absent", "that item has these values"), and the commit's rules (``commit_plan``) turn the
changes into the writes and checks every store applies alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from mcp_platform.application.sessions.model import Session
from mcp_platform.protocol.context import ToolEffectViolation
from mcp_platform.protocol.tools import EFFECTS, READ_MODIFY_WRITE, READ_ONLY, Effect


@dataclass(frozen=True)
class ExtraPut:
    """An item a tool writes inside the commit transaction (D10), in plain values.

    What must hold for the write is said as intent, never as a condition expression (the store
    builds that): ``if_absent`` writes only when no item with its key exists; ``expect`` only
    when the stored item has each of these attribute values. ``label`` names it in
    PreconditionFailed; ``table`` defaults to the session table, and ``partition_key`` (which
    ``if_absent`` tests) to that table's partition key.
    """

    item: Mapping[str, Any]
    if_absent: bool = False
    expect: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    table: str | None = None
    partition_key: str | None = None

    def __post_init__(self) -> None:
        if self.if_absent and self.expect:
            raise ValueError("an item written only if absent has no attributes to expect")

    def holds(self, stored: Mapping[str, Any] | None) -> bool:
        """Whether the write may replace ``stored`` (the item at its key; None: no item)."""
        if self.if_absent:
            return stored is None
        return not self.expect or _has(stored, self.expect)


@dataclass(frozen=True)
class ConditionCheck:
    """A precondition on an item the transaction does not otherwise touch (D10): the item at
    ``key`` must exist (``exists=True``) or must not (``exists=False``), and when it exists, have
    each attribute value of ``expect``. ``label`` names it in PreconditionFailed; ``table``
    defaults to the session table."""

    key: Mapping[str, Any]
    exists: bool = True
    expect: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    table: str | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("a condition check needs the key of the item it checks")
        if not self.exists and self.expect:
            raise ValueError("an item that must not exist has no attributes to expect")

    def holds(self, stored: Mapping[str, Any] | None) -> bool:
        """Whether the check passes on ``stored`` (the item at its key; None: no item)."""
        if not self.exists:
            return stored is None
        return _has(stored, self.expect)


def _has(stored: Mapping[str, Any] | None, expect: Mapping[str, Any]) -> bool:
    """Whether ``stored`` has each attribute value of ``expect``, compared as DynamoDB compares
    them (a boolean is never equal to a number)."""
    return stored is not None and all(name in stored and _same(stored[name], value) for name, value in expect.items())


def _same(stored: Any, expected: Any) -> bool:
    if isinstance(stored, bool) or isinstance(expected, bool):
        return type(stored) is type(expected) and stored == expected
    if isinstance(stored, Mapping) and isinstance(expected, Mapping):
        return stored.keys() == expected.keys() and all(_same(stored[k], expected[k]) for k in stored)
    if isinstance(stored, list | tuple) and isinstance(expected, list | tuple):
        return len(stored) == len(expected) and all(_same(a, b) for a, b in zip(stored, expected, strict=True))
    return bool(stored == expected)


@dataclass(frozen=True)
class AttributeWrites:
    """A read-modify-write commit conditioned attribute by attribute instead of on the session's
    version: ``seen`` is the version of each attribute the run read or writes (0: never
    changed), ``values`` the new value of each attribute it writes (the store's arithmetic)."""

    seen: Mapping[str, int]
    values: Mapping[str, Any] = field(default_factory=dict)

    def changes(self, held: Mapping[str, Any]) -> dict[str, Any]:
        """The written values that differ from ``held`` (the attributes the run read): only these
        are stored and counted; an unchanged value is still conditioned on, not written."""
        return {name: value for name, value in self.values.items() if name not in held or held[name] != value}


@dataclass(frozen=True)
class SessionChanges:
    """Everything one tool call changes in its session, committed atomically with its record.

    ``effect`` is the tool's declared effect, and says what the commit is conditioned on:

    * ``append_only``: "alive" alone, so parallel calls never conflict; no attributes;
    * ``read_modify_write`` with ``by_attribute``: the version of each attribute the run read
      (only writes to those conflict with it);
    * ``read_modify_write`` without: the session's version (D2), any other commit conflicts;
      ``attributes`` is then the whole new map (None: the attributes stay as they are).

    ``context_append`` grows the context (D3), ``extra_puts`` and ``condition_checks`` are the
    tool's own items (D10). A ``read_only`` call changes nothing and is never committed.
    """

    effect: Effect = READ_MODIFY_WRITE
    context_append: Sequence[Any] = ()
    attributes: Mapping[str, Any] | None = None
    by_attribute: AttributeWrites | None = None
    extra_puts: Sequence[ExtraPut] = ()
    condition_checks: Sequence[ConditionCheck] = ()

    def __post_init__(self) -> None:
        for name in ("context_append", "extra_puts", "condition_checks"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.attributes is not None:
            object.__setattr__(self, "attributes", dict(self.attributes))
        if self.effect not in EFFECTS:
            raise ValueError(f"effect must be one of {', '.join(EFFECTS)}, got {self.effect!r}")
        if self.effect == READ_ONLY and (self.context_append or self.extra_puts or self.condition_checks):
            raise ValueError("a read_only call changes nothing in its session")
        if self.effect != READ_MODIFY_WRITE and (self.attributes is not None or self.by_attribute is not None):
            raise ValueError("attributes are written only under the version condition (read-modify-write)")
        if self.attributes is not None and self.by_attribute is not None:
            raise ValueError("a commit is conditioned on the session's version or on attributes, not both")
        if self.by_attribute is not None:
            unconditioned = self.by_attribute.values.keys() - self.by_attribute.seen.keys()
            if unconditioned:
                raise ValueError(f"written attributes must be conditioned on the version read: {sorted(unconditioned)}")

    @property
    def on_version(self) -> bool:
        """Whether the commit is conditioned on the session's version (D2)."""
        return self.effect == READ_MODIFY_WRITE and self.by_attribute is None


class PendingChanges:
    """The unit of work of one run of a tool: what it queued for its session through its
    context (``append_to_session``, ``set_attributes``, ``set_attribute``, ``extra_puts``,
    ``condition_checks``) and what it read (``session``, ``attribute``), which a read-modify-write
    commit is conditioned on. :meth:`changes` is the commit's :class:`SessionChanges`.

    It is what the protocol's ``ToolContext`` writes through (the ``SessionEffects`` port): the
    context is the tool's API, this is the unit of work. ``effect`` is the tool's declared effect
    (None: a tool without a session), ``session`` the session as loaded for this run."""

    def __init__(self, effect: Effect | None = None, session: Session | None = None) -> None:
        self.effect = effect
        self.session = session
        self.context_append: list[Any] = []
        self.extra_puts: list[ExtraPut] = []
        """Items written in the same transaction as the call record (D10)."""
        self.condition_checks: list[ConditionCheck] = []
        """Conditions on items the transaction does not otherwise touch (D10)."""
        self.attributes: dict[str, Any] | None = None
        """The whole new attribute map (``set_attributes``)."""
        self.read_whole_session = False
        """The run read ``session``: its commit is conditioned on the session's version (D2)."""
        self.attribute_reads: dict[str, int] = {}
        """Attributes read or written one by one: the version seen."""
        self.attribute_writes: dict[str, Any] = {}
        """Attributes written one by one: the new value."""

    # -- what the context forwards (protocol.context.SessionEffects) ----------------------------
    def append(self, messages: Sequence[dict[str, Any]]) -> None:
        if self.effect == READ_ONLY:
            raise ToolEffectViolation("a read_only tool cannot append to its session")
        self.context_append.extend(messages)

    def replace_attributes(self, attributes: Mapping[str, Any]) -> None:
        self._require_read_modify_write("set_attributes")
        self.attributes = dict(attributes)

    def read_session(self) -> None:
        self.read_whole_session = True

    def read_attribute(self, name: str, default: Any) -> Any:
        session = self._held()
        self.attribute_reads.setdefault(name, session.attribute_version(name))
        if name in self.attribute_writes:
            return self.attribute_writes[name]
        return session.attributes.get(name, default)

    def write_attribute(self, name: str, value: Any) -> None:
        self._require_read_modify_write("set_attribute")
        self.attribute_reads.setdefault(name, self._held().attribute_version(name))
        self.attribute_writes[name] = value

    def fork(self) -> PendingChanges:
        """Changes of their own for a sync tool's worker thread, seeing what this run wrote so
        far; they become this run's only through :meth:`adopt` (never after a stop)."""
        worker = PendingChanges(self.effect, self.session)
        worker.attribute_reads = dict(self.attribute_reads)
        worker.attribute_writes = dict(self.attribute_writes)
        return worker

    def adopt(self, worker: Self) -> None:
        self.context_append.extend(worker.context_append)
        self.extra_puts.extend(worker.extra_puts)
        self.condition_checks.extend(worker.condition_checks)
        if worker.attributes is not None:
            self.attributes = worker.attributes
        self.read_whole_session = self.read_whole_session or worker.read_whole_session
        self.attribute_reads = worker.attribute_reads
        self.attribute_writes = worker.attribute_writes

    def discard(self) -> None:
        """Forget everything queued and read: a run stopped at its limit commits its outcome
        alone, conditioned on nothing it read."""
        self.context_append.clear()
        self.extra_puts.clear()
        self.condition_checks.clear()
        self.attributes = None
        self.read_whole_session = False
        self.attribute_reads.clear()
        self.attribute_writes.clear()

    # -- the commit ----------------------------------------------------------------------------
    def changes(self) -> SessionChanges:
        """What this run commits. A read-modify-write run that read the session as a whole or
        replaced its attributes commits the whole map under the session's version, with its
        ``set_attribute`` writes on top; one that read attributes one by one commits under the
        versions of those attributes alone (``sessions.store`` describes the arithmetic)."""
        if self.effect is None:
            raise ValueError("a tool without a session commits no session changes")
        common: dict[str, Any] = {
            "context_append": self.context_append,
            "extra_puts": self.extra_puts,
            "condition_checks": self.condition_checks,
        }
        if self.effect != READ_MODIFY_WRITE:
            return SessionChanges(self.effect, **common)
        if self.read_whole_session or self.attributes is not None:
            if self.attributes is None and not self.attribute_writes:
                return SessionChanges(READ_MODIFY_WRITE, **common)
            base = self.attributes if self.attributes is not None else self._held().attributes
            return SessionChanges(READ_MODIFY_WRITE, attributes={**base, **self.attribute_writes}, **common)
        writes = AttributeWrites(seen=dict(self.attribute_reads), values=dict(self.attribute_writes))
        return SessionChanges(READ_MODIFY_WRITE, by_attribute=writes, **common)

    def _require_read_modify_write(self, what: str) -> None:
        if self.effect != READ_MODIFY_WRITE:
            raise ToolEffectViolation(f"{what} needs effect 'read_modify_write', not {self.effect!r}")

    def _held(self) -> Session:
        if self.session is None:
            raise ToolEffectViolation("session attributes need a tool declared with session='required'")
        return self.session
