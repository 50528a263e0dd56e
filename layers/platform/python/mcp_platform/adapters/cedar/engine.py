"""The policy engine on ``cedarpy`` (Cedar's Rust engine): policies parsed once, validated against
the catalog's schema (:mod:`.schema`), then one evaluation per call at most.

Decisions are Cedar's (``is_authorized``), over the static entities (actions, tools, fixed
resources, prompts) plus the caller's entity, which is built once per principal and kept (a
principal is immutable; API-key and token principals repeat across requests), except the per-call
evaluation of argument policies, which :mod:`.evaluator` runs in Python where it decides exactly
as Cedar does, and hands to Cedar elsewhere.

A tool call is decided in two parts. At load the policies are split: those whose conditions read
``context`` (the call's arguments) and the rest. The rest are decided once per caller and tool, by
Cedar, and kept (:data:`FIXED_KEPT` pairs): the caller's entity is a function of the principal's
attributes, which are the key, and the policies and static entities do not change for the engine's
life, so the kept outcome is what Cedar would answer again. Per call, only the argument policies
that may apply to the tool (their action scope names it, its group or any action) are evaluated,
with the call's arguments (by :mod:`.evaluator`, else by Cedar); :func:`combine` joins the two
outcomes as Cedar joins policies (a forbid satisfied in either part denies, else a permit
satisfied in either permits). A tool no argument
policy applies to costs a dictionary look-up per call. The property test
``tests/unit/adapters/cedar/test_cedar_split.py`` compares the result with Cedar's over the whole
set.

Lists use Cedar's partial evaluation with the arguments unknown (once per caller and tool, then
kept): a tool is listed unless every call of it is certainly forbidden (a policy on argument
values neither hides it nor shows it to a caller its other conditions refuse). Partial evaluation
is experimental in Cedar: it decides what a list shows, never whether a call runs.

A resource read or a prompt get has no context: its decision is kept per caller, action and name
(a resources/list or prompts/list asks one per item).

A decision that meets an evaluation error is a refusal: Cedar skips a policy that errors, which for
a ``forbid`` would let the call through.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import cedarpy

from mcp_platform.adapters.cedar.evaluator import (
    CompiledPolicies,
    Entity,
    EntityUid,
    Undecided,
    Unsupported,
    compile_policies,
    entities_of,
)
from mcp_platform.adapters.cedar.schema import (
    ARGUMENTS,
    GROUP,
    PROMPT,
    RESOURCE,
    TOOL,
    USER,
    CatalogNames,
    CatalogSchema,
    Unrepresentable,
    entity,
    resource_entity,
)
from mcp_platform.application.auth.base import Principal
from mcp_platform.application.policies.ports import Decision, PolicyError
from mcp_platform.protocol.access import CALL_TOOL, GET_PROMPT, READ_RESOURCE
from mcp_platform.protocol.catalog import Catalog

CALLERS_KEPT = 1024
FIXED_KEPT = 8192
LISTED_KEPT = 8192
RESOURCE_TYPES = {CALL_TOOL: TOOL, READ_RESOURCE: RESOURCE, GET_PROMPT: PROMPT}
NO_POLICIES = frozenset[str]()
GROUP_ACTION = {"type": "Action", "id": CALL_TOOL}


@dataclass(frozen=True)
class Outcome:
    """Cedar's answer on one request over one policy set."""

    allowed: bool
    reasons: frozenset[str]
    """Cedar's reasons (policy ids): the satisfied forbids when one is, else the satisfied permits
    (empty when denied because none is)."""
    errors: tuple[str, ...] = ()
    """The policies that failed on the request (Cedar skipped them)."""


def combine(fixed: Outcome, per_call: Outcome) -> Outcome:
    """Cedar's answer over the union of two disjoint policy sets, from its answer over each: a
    forbid satisfied in either denies, naming every satisfied forbid; else a permit satisfied in
    either permits, naming every satisfied permit; else denied, naming none. Exact, because each
    policy's satisfaction depends on the request alone, not on the other policies: a denied part's
    reasons are its satisfied forbids, and a part with none has its satisfied permits as reasons."""
    if not (per_call.allowed or per_call.reasons or per_call.errors):
        return fixed  # the per-call part satisfied nothing (the usual call): the fixed part decides
    forbids = _forbids(fixed) | _forbids(per_call)
    errors = fixed.errors + per_call.errors
    if forbids:
        return Outcome(False, forbids, errors)
    permits = fixed.reasons | per_call.reasons  # no forbid in either: their reasons are permits
    return Outcome(bool(permits), permits, errors)


def _forbids(outcome: Outcome) -> frozenset[str]:
    """The forbids satisfied in a part: its reasons when it denies (none when it permits)."""
    return NO_POLICIES if outcome.allowed else outcome.reasons


@dataclass(frozen=True)
class _Fixed:
    """One caller's use of one tool, decided by the policies that do not read the arguments."""

    outcome: Outcome
    decision: Decision
    """Every call's decision when no argument policy applies to the tool."""


class CedarPolicies:
    """A :class:`~mcp_platform.application.policies.ports.PolicyEngine` over Cedar policy files."""

    def __init__(self, files: Mapping[str, str], catalog: Catalog) -> None:
        """``files``: each policy file's name and text. Raises PolicyError naming every file and
        policy that does not parse or that the catalog's schema refuses."""
        try:
            self.schema = CatalogSchema.of(catalog)
        except CatalogNames as exc:
            raise PolicyError(str(exc)) from exc
        self.names = _policy_names(files)
        text = "\n".join(files.values())
        problems = [
            f"{self.names.get(error.policy_id, error.policy_id or 'policies')}: {error.error}"
            for error in cedarpy.validate_policies(text, json.dumps(self.schema.json)).errors
        ]
        if problems:
            raise PolicyError("; ".join(dict.fromkeys(problems)))
        self.policy_set = cedarpy.PolicySet.from_str(text)
        self.count = len(self.policy_set)
        self.static = cedarpy.Entities.from_json_str(json.dumps(self.schema.entities))
        self.fixed_resources = frozenset(catalog.resources) | {t.uri_template for t in catalog.templates.values()}
        policies = _static_policies(text)
        self._rank = {policy: index for index, policy in enumerate(policies)}
        reading = {policy: body for policy, body in policies.items() if _reads_context(body)}
        self.fixed_policies = _policy_set({p: body for p, body in policies.items() if p not in reading})
        """The policies that do not read ``context``: decided once per caller and tool."""
        self.argument_policies: dict[str, cedarpy.PolicySet] = {}
        """Per tool, the policies that read ``context`` and may apply to it: decided per call."""
        self.compiled: dict[str, CompiledPolicies] = {}
        """The same, evaluated in Python (:mod:`.evaluator`), for the tools whose policies it can."""
        static = entities_of(self.schema.entities)
        for tool in self.schema.arguments:
            applying = {p: body for p, body in reading.items() if _may_apply(body.get("action"), tool)}
            if applying:
                self.argument_policies[tool] = _policy_set(applying)
                with contextlib.suppress(Unsupported):  # then Cedar evaluates them on each call
                    self.compiled[tool] = compile_policies(
                        applying, action=static[EntityUid("Action", tool)], resource=static[EntityUid(TOOL, tool)]
                    )
        self._callers: OrderedDict[Principal, tuple[cedarpy.Entities, Entity]] = OrderedDict()
        self._fixed: dict[tuple[Principal, str], _Fixed] = {}
        self._listed: dict[tuple[Principal, str], bool] = {}
        self._reads: dict[tuple[Principal, str, str], Decision] = {}

    def decide(self, caller: Principal, action: str, name: str, arguments: Mapping[str, Any] | None) -> Decision:
        if action == CALL_TOOL:
            return self._call(caller, name, arguments)
        # A read or a get has no context: its decision is the caller's, the action's and the
        # name's alone, kept like a tool call's argument-free part (a list asks it per item).
        key = (caller, action, name)
        kept = self._reads.get(key)
        if kept is not None:
            return kept
        entities = self._entities(caller)
        if action == READ_RESOURCE and name not in self.fixed_resources:
            # A URI a template serves: the resource entity is this read's own.
            entities = entities.with_added_json_str(json.dumps([resource_entity(name)]))
        decision = self._decision(_authorize(self.policy_set, _request(caller, action, name, {}), entities))
        if len(self._reads) >= FIXED_KEPT:
            self._reads.clear()  # callers and URIs come and go: start over rather than grow
        self._reads[key] = decision
        return decision

    def usable(self, caller: Principal, action: str, names: Sequence[str]) -> list[bool]:
        if action != CALL_TOOL:  # no arguments: the lists' decisions are the reads' and gets' own
            return [self.decide(caller, action, name, None).permitted for name in names]
        return [self._may_list(caller, name) for name in names]

    def _call(self, caller: Principal, tool: str, arguments: Mapping[str, Any] | None) -> Decision:
        convert = self.schema.arguments.get(tool)
        if convert is None:
            return Decision(False, errors=(f"{tool} is not a tool of this server",))
        fixed = self._fixed_part(caller, tool)
        per_tool = self.argument_policies.get(tool)
        if per_tool is None:
            return fixed.decision
        try:
            context = {ARGUMENTS: convert(dict(arguments or {}), ARGUMENTS)}
        except Unrepresentable as exc:
            return Decision(False, errors=(str(exc),))
        per_call = self._per_call(caller, tool, context, per_tool)
        outcome = combine(fixed.outcome, per_call)
        return fixed.decision if outcome is fixed.outcome else self._decision(outcome)

    def _per_call(self, caller: Principal, tool: str, context: dict[str, Any], policies: cedarpy.PolicySet) -> Outcome:
        """The tool's argument policies on this call: evaluated in Python where they can be, by
        Cedar where not, or where the evaluation would meet an error (Cedar names it)."""
        compiled = self.compiled.get(tool)
        if compiled is not None:
            try:
                evaluation = compiled.evaluate(self._caller(caller)[1], context)
            except Undecided:
                pass
            else:
                return Outcome(evaluation.allowed, evaluation.reasons)
        return _authorize(policies, _request(caller, CALL_TOOL, tool, context), self._entities(caller))

    def _fixed_part(self, caller: Principal, tool: str) -> _Fixed:
        key = (caller, tool)
        kept = self._fixed.get(key)
        if kept is not None:
            return kept
        outcome = _authorize(self.fixed_policies, _request(caller, CALL_TOOL, tool, {}), self._entities(caller))
        fixed = _Fixed(outcome, self._decision(outcome))
        if len(self._fixed) >= FIXED_KEPT:
            self._fixed.clear()  # callers come and go: start over rather than grow
        self._fixed[key] = fixed
        return fixed

    def _decision(self, outcome: Outcome) -> Decision:
        decided = tuple(self.names.get(p, p) for p in sorted(outcome.reasons, key=lambda p: self._rank.get(p, -1)))
        if outcome.errors:
            return Decision(False, decided, outcome.errors)
        return Decision(outcome.allowed, decided)

    def _may_list(self, caller: Principal, tool: str) -> bool:
        key = (caller, tool)
        kept = self._listed.get(key)
        if kept is not None:
            return kept
        request = {
            "principal": _uid(USER, caller.id),
            "action": _uid("Action", tool),
            "resource": _uid(TOOL, tool),
            "context": None,  # unknown: whatever arguments a call may bring
        }
        result = cedarpy.is_authorized_partial(request, self.policy_set, self._entities(caller))
        listed = result.decision is not cedarpy.Decision.Deny
        if len(self._listed) >= LISTED_KEPT:
            self._listed.clear()
        self._listed[key] = listed
        return listed

    def _entities(self, caller: Principal) -> cedarpy.Entities:
        return self._caller(caller)[0]

    def _caller(self, caller: Principal) -> tuple[cedarpy.Entities, Entity]:
        """The static entities with the caller's, for Cedar; the caller's entity, for the evaluator."""
        kept = self._callers.get(caller)
        if kept is not None:
            return kept
        attrs: dict[str, Any] = {"subject": caller.id, "kind": caller.kind, "scopes": sorted(caller.scopes or ())}
        if caller.tenant is not None:
            attrs["tenant"] = caller.tenant
        if caller.client_id is not None:
            attrs["clientId"] = caller.client_id
        parents = [{"type": GROUP, "id": group} for group in sorted(caller.groups)]
        own = entity(USER, caller.id, attrs, parents)
        built = (self.static.with_added_json_str(json.dumps([own])), entities_of([own])[EntityUid(USER, caller.id)])
        self._callers[caller] = built
        if len(self._callers) > CALLERS_KEPT:
            self._callers.popitem(last=False)
        return built


def _request(caller: Principal, action: str, name: str, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "principal": {"type": USER, "id": caller.id},
        "action": {"type": "Action", "id": _action_id(action, name)},
        "resource": {"type": RESOURCE_TYPES[action], "id": name},
        "context": context,
    }


def _authorize(policies: cedarpy.PolicySet, request: dict[str, Any], entities: cedarpy.Entities) -> Outcome:
    result = cedarpy.is_authorized(request, policies, entities)
    diagnostics = result.diagnostics
    return Outcome(result.allowed, frozenset(diagnostics.reasons), tuple(diagnostics.errors))


def _static_policies(text: str) -> dict[str, dict[str, Any]]:
    """The static policies of ``text`` in Cedar's JSON form, by Cedar's id, in order (templates
    left out: unlinked, they authorize nothing)."""
    policies: dict[str, dict[str, Any]] = json.loads(cedarpy.policies_to_json_str(text)).get("staticPolicies", {})
    return dict(sorted(policies.items(), key=lambda item: int(item[0].removeprefix("policy"))))


def _policy_set(policies: Mapping[str, dict[str, Any]]) -> cedarpy.PolicySet:
    """A policy set of some of the policies, each keeping its id (and so its name)."""
    return cedarpy.PolicySet.from_json_str(
        json.dumps({"staticPolicies": dict(policies), "templates": {}, "templateLinks": []})
    )


def _reads_context(node: Any) -> bool:
    """Whether a policy (Cedar's JSON form) reads the ``context`` variable anywhere."""
    if isinstance(node, dict):
        return node.get("Var") == "context" or any(_reads_context(value) for value in node.values())
    if isinstance(node, list):
        return any(_reads_context(value) for value in node)
    return False


def _may_apply(scope: Any, tool: str) -> bool:
    """Whether a policy's action scope (Cedar's JSON form) may hold for a call of ``tool``, whose
    action is ``Action::"<tool>"``, a member of ``Action::"call_tool"`` and of nothing else. A
    scope of another shape is kept: a policy kept in vain only costs its evaluation."""
    if not isinstance(scope, dict):
        return True
    op = scope.get("op")
    if op == "==":
        return bool(scope.get("entity") == {"type": "Action", "id": tool})
    if op == "in":
        entities = [scope["entity"]] if "entity" in scope else scope.get("entities", [])
        return any(entity in ({"type": "Action", "id": tool}, GROUP_ACTION) for entity in entities)
    return True


def _action_id(action: str, name: str) -> str:
    """A tool's calls are its own action (in the group ``call_tool``); reads and gets are one each."""
    return name if action == CALL_TOOL else action


def _uid(kind: str, identifier: str) -> str:
    """An entity uid in Cedar's syntax (partial evaluation takes no other form): the id quoted with
    Cedar's escapes, which are JSON's for quotes, backslashes and the common control characters."""
    return f"{kind}::{json.dumps(identifier, ensure_ascii=False)}"


def _policy_names(files: Mapping[str, str]) -> dict[str, str]:
    """Cedar's positional policy ids (``policy0``, ... over the files in order) -> what an author
    recognises: the policy's ``@id`` annotation, else ``<file>#<n>`` (its place in its file)."""
    names: dict[str, str] = {}
    offset = 0
    for file, text in files.items():
        try:
            parsed = json.loads(cedarpy.policies_to_json_str(text))
        except ValueError as exc:
            raise PolicyError(f"{file}: {exc}") from exc
        policies = parsed.get("staticPolicies", {})
        for index in range(len(policies)):
            annotations = policies.get(f"policy{index}", {}).get("annotations", {})
            names[f"policy{offset + index}"] = annotations.get("id") or f"{file}#{index}"
        offset += len(policies)
    return names
