"""Cedar policies evaluated in Python, for the plain subset argument policies are written in.

One call into cedarpy costs more CPU than the 20 % a tool call may spend on its policies (the
request, entities and context cross into Rust as JSON each time; decisions: *Argument policies
evaluated in Python*). The policies that read a call's arguments are evaluated on every call, so
they are compiled here, from Cedar's own JSON form of each policy (its parser's output, after the
schema has validated them), into Python functions over the request.

The subset is what such policies use: literals, sets and records; the request's variables and
the attributes of its principal, action and resource; ``has``, ``.``, ``==``, ``!=``, ``<``,
``<=``, ``>``, ``>=``, ``&&``, ``||``, ``!``, ``if``-``then``-``else``, ``+``, ``-``, ``*``,
negation, ``like``, ``in``, ``is``, ``contains``, ``containsAll``, ``containsAny``, ``isEmpty``.
A policy with anything else (an extension function, tags, a template slot) is
:class:`Unsupported` and its tool's policies stay with Cedar.

Evaluation follows Cedar's semantics on well-typed values, and gives up wherever Cedar would
raise an error or where a value is outside the plain types (a decimal, a record compared whole):
:class:`Undecided`, and Cedar decides that call. So this module never decides differently from
Cedar; at worst it hands a call over. The property test
``tests/unit/adapters/cedar/test_cedar_split.py`` compares the engine with Cedar over generated
policies, callers and arguments, and fails against a wrong evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class Unsupported(ValueError):
    """A policy uses Cedar outside the subset: Cedar evaluates its tool's policies."""


class Undecided(Exception):
    """Cedar would raise an error here, or a value is outside the plain types: Cedar decides."""


@dataclass(frozen=True, slots=True)
class EntityUid:
    type: str
    id: str


@dataclass(frozen=True)
class Entity:
    """An entity of the request: its attributes (Cedar values as Python: str, int, bool, sets as
    frozenset or list, records as dict) and every entity it is in, transitively."""

    uid: EntityUid
    attrs: Mapping[str, object]
    ancestors: frozenset[EntityUid]


@dataclass(frozen=True)
class Request:
    principal: Entity
    action: Entity
    resource: Entity
    context: Mapping[str, object]

    def entity(self, uid: object) -> Entity:
        """The request's own entity with this uid: others are not known here."""
        for known in (self.principal, self.resource, self.action):
            if known.uid == uid:
                return known
        raise Undecided


Expression = Callable[[Request], object]
Scope = Callable[[Entity], bool]


@dataclass(frozen=True)
class CompiledPolicy:
    """A policy on one tool's calls: its action and resource scopes were decided when compiled."""

    policy_id: str
    forbid: bool
    principal: Scope | None
    """The principal scope, None when it is ``principal`` (any)."""
    conditions: tuple[tuple[Expression, bool], ...]
    """Each ``when`` (to hold: True) and ``unless`` (False) in the order written: Cedar evaluates
    them so, stopping at the first that fails, and an error after it is never met."""

    def satisfied(self, request: Request) -> bool:
        """Cedar's conjunction of the scope and the conditions, left to right, short-circuit."""
        if self.principal is not None and not self.principal(request.principal):
            return False
        return all(_boolean(condition(request)) is holds for condition, holds in self.conditions)


@dataclass(frozen=True)
class Evaluation:
    """What Cedar answers over a policy set when no policy errors."""

    allowed: bool
    reasons: frozenset[str]


NOTHING_SATISFIED = Evaluation(False, frozenset())


@dataclass(frozen=True)
class CompiledPolicies:
    """Policies on the calls of one action on one resource (a tool's)."""

    action: Entity
    resource: Entity
    policies: tuple[CompiledPolicy, ...]

    def evaluate(self, principal: Entity, context: Mapping[str, object]) -> Evaluation:
        """Cedar's decision: a satisfied forbid denies (its ids the reasons), else a satisfied permit
        permits; raises :class:`Undecided` where Cedar would meet an error."""
        request = Request(principal, self.action, self.resource, context)
        satisfied = [policy for policy in self.policies if policy.satisfied(request)]
        if not satisfied:
            return NOTHING_SATISFIED  # the usual call: no argument limit is reached
        forbids = frozenset(policy.policy_id for policy in satisfied if policy.forbid)
        if forbids:
            return Evaluation(False, forbids)
        permits = frozenset(policy.policy_id for policy in satisfied)
        return Evaluation(bool(permits), permits)


def compile_policies(
    policies: Mapping[str, Mapping[str, Any]], *, action: Entity, resource: Entity
) -> CompiledPolicies:
    """Policies in Cedar's JSON form, by id, for the calls whose action and resource are these (a
    tool's): a policy whose action or resource scope excludes them is left out. Raises
    :class:`Unsupported`."""
    compiled = []
    for policy_id, body in policies.items():
        if body.get("effect") not in ("permit", "forbid"):
            raise Unsupported(f"effect {body.get('effect')!r}")
        conditions = tuple(
            (_expression(condition["body"]), condition.get("kind") == "when")
            for condition in body.get("conditions", ())
        )
        if not (_action_scope(body.get("action"))(action) and _scope(body.get("resource"))(resource)):
            continue
        principal = body.get("principal")
        compiled.append(
            CompiledPolicy(
                policy_id,
                forbid=body["effect"] == "forbid",
                principal=None if principal == {"op": "All"} else _scope(principal),
                conditions=conditions,
            )
        )
    return CompiledPolicies(action, resource, tuple(compiled))


def _uid(node: Any) -> EntityUid:
    if not isinstance(node, Mapping) or set(node) != {"type", "id"}:
        raise Unsupported(f"entity {node!r}")
    return EntityUid(node["type"], node["id"])


def _is_in(entity: Entity, uid: EntityUid) -> bool:
    return entity.uid == uid or uid in entity.ancestors


def _scope(node: Any) -> Scope:
    """A principal or resource scope: ``All``, ``==``, ``in`` or ``is`` (optionally ``in``)."""
    op = node.get("op") if isinstance(node, Mapping) else None
    if op == "All":
        return lambda entity: True
    if op == "==" and "entity" in node:
        uid = _uid(node["entity"])
        return lambda entity: entity.uid == uid
    if op == "in" and "entity" in node:
        uid = _uid(node["entity"])
        return lambda entity: _is_in(entity, uid)
    if op == "is":
        kind = node["entity_type"]
        inside = _uid(node["in"]["entity"]) if "in" in node else None
        return lambda entity: entity.uid.type == kind and (inside is None or _is_in(entity, inside))
    raise Unsupported(f"scope {node!r}")


def _action_scope(node: Any) -> Scope:
    if isinstance(node, Mapping) and node.get("op") == "in" and "entities" in node:
        uids = tuple(_uid(entity) for entity in node["entities"])
        return lambda entity: any(_is_in(entity, uid) for uid in uids)
    return _scope(node)


# -- values ------------------------------------------------------------------------------------


def _boolean(value: object) -> bool:
    if type(value) is not bool:
        raise Undecided  # Cedar: a type error
    return value


def _long(value: object) -> int:
    if type(value) is not int:
        raise Undecided
    return value


def _checked(value: int) -> int:
    if not LONG_MIN <= value <= LONG_MAX:
        raise Undecided  # Cedar: an overflow
    return value


def _string(value: object) -> str:
    if type(value) is not str:
        raise Undecided
    return value


def _set(value: object) -> list[object] | frozenset[object]:
    if not isinstance(value, list | frozenset):
        raise Undecided
    return value


PLAIN = (str, int, bool, EntityUid)


def _equal(left: object, right: object) -> bool:
    """Cedar's ``==``: values of different types are unequal; sets compare as sets."""
    if isinstance(left, list | frozenset) and isinstance(right, list | frozenset):
        return _members(left) == _members(right)
    if type(left) is not type(right):
        if isinstance(left, dict) or isinstance(right, dict):
            raise Undecided  # a record, or a decimal in Cedar's JSON: leave it to Cedar
        return False
    if type(left) in PLAIN:
        return left == right
    raise Undecided


def _members(values: list[object] | frozenset[object]) -> frozenset[tuple[type, object]]:
    """A set's members, typed (Python's ``1 == True`` is not Cedar's)."""
    if not all(type(value) in PLAIN for value in values):
        raise Undecided
    return frozenset((type(value), value) for value in values)


def _is_record(value: object) -> TypeGuard[dict[str, object]]:
    """A Cedar record (a dict that is not an extension value, such as a decimal, in Cedar's JSON)."""
    return isinstance(value, dict) and "__extn" not in value


def _attribute_holder(value: object, request: Request) -> Mapping[str, object]:
    if isinstance(value, EntityUid):
        return request.entity(value).attrs
    if _is_record(value):
        return value
    raise Undecided


def _literal(value: Any) -> object:
    if type(value) in (str, int, bool):
        return value
    if isinstance(value, Mapping) and set(value) == {"__entity"}:
        return _uid(value["__entity"])
    raise Unsupported(f"literal {value!r}")


def _like(pattern: Sequence[Any]) -> re.Pattern[str]:
    parts = []
    for part in pattern:
        if part == "Wildcard":
            parts.append(".*")
        elif isinstance(part, Mapping) and isinstance(part.get("Literal"), str):
            parts.append(re.escape(part["Literal"]))
        else:
            raise Unsupported(f"pattern {part!r}")
    return re.compile("".join(parts), re.DOTALL)


# -- expressions -------------------------------------------------------------------------------


def _expression(node: Any) -> Expression:
    if not isinstance(node, Mapping) or len(node) != 1:
        raise Unsupported(f"expression {node!r}")
    ((op, arg),) = node.items()
    build = _BUILDERS.get(op)
    if build is None:
        raise Unsupported(f"operator {op!r}")
    return build(arg)


def _value(arg: Any) -> Expression:
    value = _literal(arg)
    return lambda request: value


def _variable(name: Any) -> Expression:
    if name == "principal":
        return lambda request: request.principal.uid
    if name == "action":
        return lambda request: request.action.uid
    if name == "resource":
        return lambda request: request.resource.uid
    if name == "context":
        return lambda request: request.context
    raise Unsupported(f"variable {name!r}")


def _get(arg: Mapping[str, Any]) -> Expression:
    path = _context_path(arg)
    if path is not None:
        return _context_value(path)
    left, name = _expression(arg["left"]), arg["attr"]

    def get(request: Request) -> object:
        holder = _attribute_holder(left(request), request)
        if name not in holder:
            raise Undecided  # Cedar: no such attribute
        return holder[name]

    return get


def _context_path(arg: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The attribute names of ``context.a.b...`` (what argument conditions read), or None when the
    chain does not start at ``context``."""
    names = [arg["attr"]]
    node = arg["left"]
    while isinstance(node, Mapping) and set(node) == {"."}:
        names.append(node["."]["attr"])
        node = node["."]["left"]
    return tuple(reversed(names)) if node == {"Var": "context"} else None


def _context_value(path: tuple[str, ...]) -> Expression:
    """``context.a.b...`` read in one walk of the context's records (what ``.`` does at each step)."""

    def walk(request: Request) -> object:
        value: object = request.context
        for name in path:
            if not _is_record(value) or name not in value:
                raise Undecided  # Cedar: not a record, or no such attribute
            value = value[name]
        return value

    return walk


def _has(arg: Mapping[str, Any]) -> Expression:
    left, name = _expression(arg["left"]), arg["attr"]
    return lambda request: name in _attribute_holder(left(request), request)


def _binary(combine: Callable[[object, object], object]) -> Callable[[Mapping[str, Any]], Expression]:
    def build(arg: Mapping[str, Any]) -> Expression:
        left, right = _expression(arg["left"]), _expression(arg["right"])
        return lambda request: combine(left(request), right(request))

    return build


def _unary(apply: Callable[[object], object]) -> Callable[[Mapping[str, Any]], Expression]:
    def build(arg: Mapping[str, Any]) -> Expression:
        inner = _expression(arg["arg"])
        return lambda request: apply(inner(request))

    return build


def _and(arg: Mapping[str, Any]) -> Expression:
    left, right = _expression(arg["left"]), _expression(arg["right"])
    return lambda request: _boolean(left(request)) and _boolean(right(request))


def _or(arg: Mapping[str, Any]) -> Expression:
    left, right = _expression(arg["left"]), _expression(arg["right"])
    return lambda request: _boolean(left(request)) or _boolean(right(request))


def _if(arg: Mapping[str, Any]) -> Expression:
    test, then, otherwise = _expression(arg["if"]), _expression(arg["then"]), _expression(arg["else"])
    return lambda request: then(request) if _boolean(test(request)) else otherwise(request)


def _like_expression(arg: Mapping[str, Any]) -> Expression:
    left, pattern = _expression(arg["left"]), _like(arg["pattern"])
    return lambda request: pattern.fullmatch(_string(left(request))) is not None


def _in(arg: Mapping[str, Any]) -> Expression:
    left, right = _expression(arg["left"]), _expression(arg["right"])

    def is_in(request: Request) -> bool:
        entity = request.entity(left(request))
        target = right(request)
        targets = [target] if isinstance(target, EntityUid) else list(_set(target))
        if not all(isinstance(uid, EntityUid) for uid in targets):
            raise Undecided  # Cedar: a type error
        return any(_is_in(entity, uid) for uid in targets if isinstance(uid, EntityUid))

    return is_in


def _is(arg: Mapping[str, Any]) -> Expression:
    left, kind = _expression(arg["left"]), arg["entity_type"]
    inside = _expression(arg["in"]) if "in" in arg else None

    def is_kind(request: Request) -> bool:
        value = left(request)
        if not isinstance(value, EntityUid):
            raise Undecided
        if value.type != kind:
            return False
        if inside is None:
            return True
        target = inside(request)
        if not isinstance(target, EntityUid):
            raise Undecided
        return _is_in(request.entity(value), target)

    return is_kind


def _set_literal(arg: Sequence[Any]) -> Expression:
    items = tuple(_expression(item) for item in arg)
    return lambda request: [item(request) for item in items]


def _record_literal(arg: Mapping[str, Any]) -> Expression:
    fields = {name: _expression(item) for name, item in arg.items()}
    return lambda request: {name: field(request) for name, field in fields.items()}


def _compare(test: Callable[[int, int], bool]) -> Callable[[object, object], bool]:
    return lambda left, right: test(_long(left), _long(right))


def _arithmetic(apply: Callable[[int, int], int]) -> Callable[[object, object], int]:
    return lambda left, right: _checked(apply(_long(left), _long(right)))


def _contains_all(left: object, right: object) -> bool:
    return _members(_set(right)) <= _members(_set(left))


def _contains_any(left: object, right: object) -> bool:
    return not _members(_set(right)).isdisjoint(_members(_set(left)))


_BUILDERS: dict[str, Callable[[Any], Expression]] = {
    "Value": _value,
    "Var": _variable,
    "Set": _set_literal,
    "Record": _record_literal,
    ".": _get,
    "has": _has,
    "==": _binary(_equal),
    "!=": _binary(lambda left, right: not _equal(left, right)),
    "<": _binary(_compare(lambda left, right: left < right)),
    "<=": _binary(_compare(lambda left, right: left <= right)),
    ">": _binary(_compare(lambda left, right: left > right)),
    ">=": _binary(_compare(lambda left, right: left >= right)),
    "+": _binary(_arithmetic(lambda left, right: left + right)),
    "-": _binary(_arithmetic(lambda left, right: left - right)),
    "*": _binary(_arithmetic(lambda left, right: left * right)),
    "neg": _unary(lambda value: _checked(-_long(value))),
    "!": _unary(lambda value: not _boolean(value)),
    "&&": _and,
    "||": _or,
    "if-then-else": _if,
    "like": _like_expression,
    "in": _in,
    "is": _is,
    "contains": _binary(lambda left, right: any(_equal(member, right) for member in _set(left))),
    "containsAll": _binary(_contains_all),
    "containsAny": _binary(_contains_any),
    "isEmpty": _unary(lambda value: len(_set(value)) == 0),
}


def entities_of(entities: Sequence[Mapping[str, Any]]) -> dict[EntityUid, Entity]:
    """Entities in Cedar's JSON form (uid, attrs, parents), each with its ancestors within them."""
    parents = {_uid(item["uid"]): tuple(_uid(parent) for parent in item.get("parents", ())) for item in entities}

    def ancestors(uid: EntityUid) -> frozenset[EntityUid]:
        found: set[EntityUid] = set()
        pending = list(parents.get(uid, ()))
        while pending:
            parent = pending.pop()
            if parent not in found:
                found.add(parent)
                pending.extend(parents.get(parent, ()))
        return frozenset(found)

    known = {}
    for item in entities:
        uid = _uid(item["uid"])
        known[uid] = Entity(uid, dict(item.get("attrs", {})), ancestors(uid))
    return known
