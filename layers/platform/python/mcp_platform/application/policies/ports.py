"""What the policy decisions need from outside: an engine that evaluates the deployment's policies.

The Cedar adapter (:mod:`mcp_platform.adapters.cedar`) implements it; the composition root builds
it only where policy files exist. An engine is built from policies already validated against the
catalog it serves, so a decision never meets a policy that names an unknown tool or argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_platform.application.auth.base import Principal


class PolicyError(ValueError):
    """Policies that cannot be used: a file that does not parse, or a policy the schema generated
    from the catalog refuses (an unknown tool or argument, a type error). The message names each."""


@dataclass(frozen=True)
class Decision:
    """One use of a tool, resource or prompt, decided."""

    permitted: bool
    policies: tuple[str, ...] = ()
    """The policies that decided it: the permits that allowed it, or the forbids that refused it
    (empty when refused because no policy permits it)."""
    errors: tuple[str, ...] = ()
    """Why it could not be evaluated (an argument Cedar cannot represent, a policy that failed on
    this request): such a use is refused, never let through."""


class PolicyEngine(Protocol):
    def decide(self, caller: Principal, action: str, name: str, arguments: Mapping[str, Any] | None) -> Decision:
        """``caller`` using ``name`` (a tool, a resource URI, a prompt) by ``action``
        (:mod:`mcp_platform.protocol.access`), a tool with ``arguments``."""
        ...

    def usable(self, caller: Principal, action: str, names: Sequence[str]) -> list[bool]:
        """For each of ``names``: whether ``caller`` may use it with some arguments (a list's view:
        a policy on argument values neither hides a tool nor shows one its other conditions refuse)."""
        ...
