"""The policy engine on ``cedarpy`` (Cedar's Rust engine): policies parsed once, validated against
the catalog's schema (:mod:`.schema`), then one authorization per call.

Per call: one ``is_authorized`` against the parsed policy set, over the static entities (actions,
tools, fixed resources, prompts) plus the caller's entity, which is built once per principal and
kept (a principal is immutable; API-key and token principals repeat across requests).

Per caller and tool, Cedar's partial evaluation with the arguments unknown (once, then kept) says
two things. Whether the tool is listed: unless every call of it is certainly forbidden (a policy on
argument values neither hides it nor shows it to a caller its other conditions refuse). And whether
any policy reads the arguments at all: when none does, the partial decision is definite (every
permit and forbid that applies was decided without them) and is every call's decision, so such a
call costs a dictionary look-up; otherwise each call is decided in full with its arguments.
Partial evaluation is experimental in Cedar; it is trusted only where it reached a definite
decision without an error, which cannot depend on what it left unknown.

A decision that meets an evaluation error is a refusal: Cedar skips a policy that errors, which for
a ``forbid`` would let the call through.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import cedarpy

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
PREVIEWS_KEPT = 8192
RESOURCE_TYPES = {CALL_TOOL: TOOL, READ_RESOURCE: RESOURCE, GET_PROMPT: PROMPT}


@dataclass(frozen=True)
class _Preview:
    """One caller's use of one tool, with the arguments unknown."""

    listed: bool
    """Some call may be permitted."""
    settled: Decision | None
    """Every call's decision, when no policy reads the arguments; None: each call is decided."""


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
        self._callers: OrderedDict[Principal, cedarpy.Entities] = OrderedDict()
        self._previews: dict[tuple[Principal, str], _Preview] = {}

    def decide(self, caller: Principal, action: str, name: str, arguments: Mapping[str, Any] | None) -> Decision:
        entities = self._entities(caller)
        context: dict[str, Any] = {}
        if action == CALL_TOOL:
            convert = self.schema.arguments.get(name)
            if convert is None:
                return Decision(False, errors=(f"{name} is not a tool of this server",))
            settled = self._preview(caller, name).settled
            if settled is not None:
                return settled
            try:
                context = {ARGUMENTS: convert(dict(arguments or {}), ARGUMENTS)}
            except Unrepresentable as exc:
                return Decision(False, errors=(str(exc),))
        elif action == READ_RESOURCE and name not in self.fixed_resources:
            # A URI a template serves: the resource entity is this read's own.
            entities = entities.with_added_json_str(json.dumps([resource_entity(name)]))
        request = {
            "principal": {"type": USER, "id": caller.id},
            "action": {"type": "Action", "id": _action_id(action, name)},
            "resource": {"type": RESOURCE_TYPES[action], "id": name},
            "context": context,
        }
        result = cedarpy.is_authorized(request, self.policy_set, entities)
        decided = tuple(self.names.get(policy, policy) for policy in result.diagnostics.reasons)
        if result.diagnostics.errors:
            return Decision(False, decided, tuple(result.diagnostics.errors))
        return Decision(result.allowed, decided)

    def usable(self, caller: Principal, action: str, names: Sequence[str]) -> list[bool]:
        if action != CALL_TOOL:  # no arguments: the lists' decisions are the reads' and gets' own
            return [self.decide(caller, action, name, None).permitted for name in names]
        return [self._preview(caller, name).listed for name in names]

    def _preview(self, caller: Principal, tool: str) -> _Preview:
        key = (caller, tool)
        kept = self._previews.get(key)
        if kept is not None:
            return kept
        request = {
            "principal": _uid(USER, caller.id),
            "action": _uid("Action", tool),
            "resource": _uid(TOOL, tool),
            "context": None,  # unknown: whatever arguments a call may bring
        }
        result = cedarpy.is_authorized_partial(request, self.policy_set, self._entities(caller))
        decision = result.decision
        settled = None
        if decision is not cedarpy.Decision.NoDecision and not result.diagnostics.errors:
            decided = tuple(self.names.get(policy, policy) for policy in result.diagnostics.reasons)
            settled = Decision(decision is cedarpy.Decision.Allow, decided)
        preview = _Preview(listed=decision is not cedarpy.Decision.Deny, settled=settled)
        if len(self._previews) >= PREVIEWS_KEPT:
            self._previews.clear()  # callers come and go: start over rather than grow
        self._previews[key] = preview
        return preview

    def _entities(self, caller: Principal) -> cedarpy.Entities:
        kept = self._callers.get(caller)
        if kept is not None:
            return kept
        attrs: dict[str, Any] = {"subject": caller.id, "kind": caller.kind, "scopes": sorted(caller.scopes or ())}
        if caller.tenant is not None:
            attrs["tenant"] = caller.tenant
        if caller.client_id is not None:
            attrs["clientId"] = caller.client_id
        parents = [{"type": GROUP, "id": group} for group in sorted(caller.groups)]
        built = self.static.with_added_json_str(json.dumps([entity(USER, caller.id, attrs, parents)]))
        self._callers[caller] = built
        if len(self._callers) > CALLERS_KEPT:
            self._callers.popitem(last=False)
        return built


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
