"""G4: argument policies evaluated in Python decide as Cedar does, or hand the call to Cedar.

Each condition below (the operators the evaluator covers, at their edges: boundaries, overflows,
missing attributes, Cedar's typed equality, wildcards, the order of ``when`` and ``unless``) is
put in a permit and in a forbid and decided for every request of the table, by cedarpy and by
the evaluator. Where Cedar meets an error the evaluator must give up (:class:`Undecided`); where
Cedar decides, the evaluator must decide the same (every condition here is in its subset). The
controls at the end show the comparison failing against plausible wrong
evaluations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import cedarpy
import pytest

import mcp_platform.adapters.cedar.evaluator as evaluator_module
from mcp_platform.adapters.cedar.evaluator import (
    CompiledPolicies,
    Entity,
    EntityUid,
    Request,
    Undecided,
    Unsupported,
    compile_policies,
    entities_of,
)

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

CONDITIONS = (
    # comparisons at their boundary, and arithmetic at the edge of 64 bits
    "when { context.n > 3 }",
    "when { context.n >= 3 }",
    "when { context.n < 3 }",
    "when { context.n <= 3 }",
    "when { context.n == 3 }",
    "when { context.n != 3 }",
    "when { context.n + 1 > 0 }",
    "when { context.n - 1 < 0 }",
    "when { context.n * 2 > 0 }",
    "when { -context.n > 0 }",
    # strings and wildcards (an escaped star is a literal star)
    'when { context.s like "*secret*" }',
    'when { context.s like "a*b" }',
    'when { context.s like "\\*" }',
    'when { context.s like "" }',
    # attributes: present, absent, guarded
    "when { context has s }",
    "when { context has missing }",
    "when { context.missing == 1 }",
    "when { context has missing && context.missing == 1 }",
    "when { context.n == 3 || context.missing == 1 }",
    # typed equality (Python's 1 == True is not Cedar's)
    "when { context.n == true }",
    "when { [context.n] == [true] }",
    'when { context.s == 3 || context.s == "" }',
    "when { context.b == context.b }",
    # sets
    "when { [1, 2, 3].contains(context.n) }",
    'when { context.tags.contains("x") }',
    'when { context.tags.containsAll(["x", "y"]) }',
    'when { context.tags.containsAny(["y", "z"]) }',
    "when { context.tags.isEmpty() }",
    'when { context.tags == ["y", "x"] }',
    # booleans and branches
    "when { context.b }",
    "when { !context.b }",
    "when { context.b && context.n > 0 }",
    "when { context.b || context.missing }",
    "when { if context.b then context.n > 0 else context.n < 0 }",
    "when { context.n }",
    # the caller, the action, the resource
    'when { principal in Group::"a" }',
    'when { principal in [Group::"b", Group::"c"] }',
    "when { principal is User }",
    'when { principal is User in Group::"a" }',
    'when { principal == User::"alice" }',
    'when { action in Action::"call_tool" }',
    'when { action == Action::"echo" }',
    "when { resource.readOnly }",
    'when { principal.scopes.contains("s") }',
    'when { principal has tenant && principal.tenant == "acme" }',
    'when { principal.tenant == "acme" }',
    # records
    "when { context.r.x > 1 }",
    "when { context.r has y }",
    # the order of when and unless: Cedar stops at the first that fails
    "unless { context.missing == 1 } when { false }",
    "when { false } unless { context.missing == 1 }",
    "unless { context.n * 4611686018427387904 > 0 } when { context.n > 100 }",
    'when { context.b } unless { context.n == 3 } when { context.s like "*a*" }',
)
SCOPES = (
    "principal, action, resource",
    'principal in Group::"a", action in [Action::"echo", Action::"other"], resource is Tool',
    'principal == User::"bob", action == Action::"echo", resource == Tool::"echo"',
)
CONTEXTS: tuple[dict[str, Any], ...] = (
    {"n": 3, "s": "a secret", "b": True, "tags": ["x", "y"], "r": {"x": 2}},
    {"n": 2, "s": "ab", "b": False, "tags": [], "r": {"x": 1, "y": 1}},
    {"n": 4, "s": "*", "b": True, "tags": ["y"], "r": {"x": 0}},
    {"n": LONG_MAX, "s": "a\nb", "b": False, "tags": ["x"], "r": {"x": 5}},
    {"n": LONG_MIN, "s": "", "b": True, "tags": ["z", "x", "y"], "r": {"x": -1}},
    {"n": 1, "s": "axxb", "b": True, "tags": ["y", "x"], "r": {"x": 3}},
)
CALLERS = (
    ("alice", {"subject": "alice", "kind": "oauth", "scopes": ["s"], "tenant": "acme"}, ["a"]),
    ("bob", {"subject": "bob", "kind": "api_key", "scopes": []}, ["b"]),
)
STATIC: list[dict[str, Any]] = [
    {"uid": {"type": "Action", "id": "call_tool"}, "attrs": {}, "parents": []},
    {"uid": {"type": "Action", "id": "echo"}, "attrs": {}, "parents": [{"type": "Action", "id": "call_tool"}]},
    {
        "uid": {"type": "Tool", "id": "echo"},
        "attrs": {"name": "echo", "readOnly": True, "destructive": False},
        "parents": [],
    },
]

ECHO = entities_of(STATIC)[EntityUid("Action", "echo")]
ECHO_TOOL = entities_of(STATIC)[EntityUid("Tool", "echo")]


def policies() -> Iterator[str]:
    for scope in SCOPES:
        for effect in ("permit", "forbid"):
            for condition in CONDITIONS:
                yield f"{effect}({scope}) {condition};"


def compared(policy: str) -> Iterator[tuple[str, Any, Any]]:
    """(what was asked, Cedar's answer, the evaluator's) for every caller and context."""
    est = json.loads(cedarpy.policies_to_json_str(policy))["staticPolicies"]["policy0"]
    compiled = compile_policies({"policy0": est}, action=ECHO, resource=ECHO_TOOL)
    for caller, attrs, groups in CALLERS:
        own = {
            "uid": {"type": "User", "id": caller},
            "attrs": attrs,
            "parents": [{"type": "Group", "id": g} for g in groups],
        }
        principal = entities_of([own])[EntityUid("User", caller)]
        for context in CONTEXTS:
            request = {
                "principal": {"type": "User", "id": caller},
                "action": {"type": "Action", "id": "echo"},
                "resource": {"type": "Tool", "id": "echo"},
                "context": context,
            }
            result = cedarpy.is_authorized(request, policy, json.dumps([*STATIC, own]))
            cedar = ("error",) if result.diagnostics.errors else (result.allowed, frozenset(result.diagnostics.reasons))
            ours = _evaluated(compiled, principal, context)
            yield f"{policy} by {caller} on {context}", cedar, ours


def _evaluated(compiled: CompiledPolicies, principal: Entity, context: dict[str, Any]) -> Any:
    try:
        evaluation = compiled.evaluate(principal, context)
    except Undecided:
        return ("error",)
    return (evaluation.allowed, evaluation.reasons)


def disagreements() -> list[str]:
    return [
        f"{asked}: Cedar {cedar}, evaluator {ours}"
        for policy in policies()
        for asked, cedar, ours in compared(policy)
        if cedar != ours
    ]


def test_the_evaluator_decides_as_cedar_or_hands_over_on_cedars_errors() -> None:
    found = disagreements()
    assert not found, f"{len(found)} disagreements, first: {found[:3]}"


def test_every_condition_of_the_table_compiles() -> None:
    """The table is the evaluator's subset: none of it is left to Cedar at load."""
    for policy in policies():
        est = json.loads(cedarpy.policies_to_json_str(policy))["staticPolicies"]["policy0"]
        compile_policies({"policy0": est}, action=ECHO, resource=ECHO_TOOL)


@pytest.mark.parametrize(
    "policy",
    [
        'permit(principal, action, resource) when { context.d.lessThan(decimal("1.0")) };',
        'permit(principal, action, resource) when { ip("10.0.0.1").isLoopback() };',
        'permit(principal, action, resource) when { principal.hasTag("team") };',
        "permit(principal == ?principal, action, resource);",
    ],
)
def test_what_is_outside_the_subset_is_left_to_cedar_at_load(policy: str) -> None:
    parsed = json.loads(cedarpy.policies_to_json_str(policy))
    body = {**parsed["staticPolicies"], **parsed["templates"]}["policy0"]
    with pytest.raises(Unsupported):
        compile_policies({"policy0": body}, action=ECHO, resource=ECHO_TOOL)


def _whens_first(self: evaluator_module.CompiledPolicy, request: Request) -> bool:
    """Wrong: every ``when`` before any ``unless``, as if their order did not matter."""
    ordered = sorted(self.conditions, key=lambda condition: not condition[1])
    in_scope = self.principal is None or self.principal(request.principal)
    return in_scope and all(evaluator_module._boolean(condition(request)) is holds for condition, holds in ordered)


def _like_within_a_line(arg: Any) -> evaluator_module.Expression:
    """Wrong: a wildcard that stops at a line break (a regular expression's ``.`` without DOTALL)."""
    left, pattern = (
        evaluator_module._expression(arg["left"]),
        re.compile(evaluator_module._like(arg["pattern"]).pattern),
    )
    return lambda request: pattern.fullmatch(evaluator_module._string(left(request))) is not None


def _python_equality(left: object, right: object) -> bool:
    """Wrong: Python's ``==`` (``1 == True``)."""
    return left == right


@pytest.mark.parametrize(
    "break_it",
    [
        pytest.param(lambda mp: mp.setattr(evaluator_module.CompiledPolicy, "satisfied", _whens_first), id="order"),
        pytest.param(
            lambda mp: mp.setitem(evaluator_module._BUILDERS, ">", evaluator_module._BUILDERS[">="]), id="off-by-one"
        ),
        pytest.param(lambda mp: mp.setattr(evaluator_module, "_checked", lambda value: value), id="no-overflow"),
        pytest.param(
            lambda mp: mp.setitem(evaluator_module._BUILDERS, "==", evaluator_module._binary(_python_equality)),
            id="python-equality",
        ),
        pytest.param(lambda mp: mp.setitem(evaluator_module._BUILDERS, "like", _like_within_a_line), id="like-by-line"),
    ],
)
def test_the_comparison_fails_against_a_wrong_evaluation(break_it: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Controls: each plausible mistake is caught by the table above."""
    break_it(monkeypatch)
    assert disagreements()
