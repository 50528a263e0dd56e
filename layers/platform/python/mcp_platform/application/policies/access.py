"""The policies' decisions for one request's caller: what the request's lists show and whether its
call, read or get may run (:class:`~mcp_platform.protocol.access.Access`, on ``RequestContext.access``).

Built by the transport for each authenticated request, only where policies are configured
(:class:`Policies`); without them requests carry none and nothing here is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_platform.application.auth.base import Principal
from mcp_platform.application.policies.ports import Decision, PolicyEngine
from mcp_platform.protocol.access import forbidden


class CallerAccess:
    """One caller's view of the policies (``protocol.access.Access``)."""

    __slots__ = ("caller", "engine")

    def __init__(self, engine: PolicyEngine, caller: Principal) -> None:
        self.engine = engine
        self.caller = caller

    def usable(self, action: str, names: Sequence[str]) -> Sequence[bool]:
        return self.engine.usable(self.caller, action, names)

    def decide(self, action: str, name: str, arguments: Mapping[str, Any] | None = None) -> Decision:
        return self.engine.decide(self.caller, action, name, arguments)

    def require(self, action: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        decision = self.decide(action, name, arguments)
        if not decision.permitted:
            raise forbidden(action, name, decision.policies, decision.errors)


class Policies:
    """The deployment's policies, as the transport asks for them once per request."""

    def __init__(self, engine: PolicyEngine, *, source: str = "") -> None:
        self.engine = engine
        self.source = source
        """Where the policies were read from (the start-up log line names it)."""

    def for_caller(self, caller: Principal) -> CallerAccess:
        return CallerAccess(self.engine, caller)
