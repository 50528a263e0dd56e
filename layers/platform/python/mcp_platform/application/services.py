"""What the use cases and the tools reach besides a request: the platform's services, each typed
by the port it implements, built once per process by the composition root (``bootstrap``).

A feature that a stack leaves off (the event stream, the audit trail, subscriptions, tasks) is
None here, and a tool that needs it says so with a ToolError.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Generic, TypeVar

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.sessions.tool_sessions import ToolSessions
from mcp_platform.protocol import context

if TYPE_CHECKING:
    from mcp_platform.application.audit.trail import AuditTrailReader
    from mcp_platform.application.events.ports import RecentToolEvents
    from mcp_platform.application.interactive.services import InteractiveServices
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.application.sessions.ports import SessionRepository
    from mcp_platform.application.tasks.service import TaskService


DepsT = TypeVar("DepsT", covariant=True)


@dataclass(frozen=True)
class Services(Generic[DepsT]):
    store: SessionRepository
    """The session store, as the use cases use it (``mcp_platform.testing.InMemorySessions`` in
    a unit test); tools use :attr:`sessions`."""
    deps: DepsT
    """The feature package's own dependencies, as its ``build_deps`` made them (None without)."""
    audit_trail: AuditTrailReader | None = None
    """Stack option ``audit``: the read side of the audit table."""
    recent_events: RecentToolEvents | None = None
    """Stack option ``event_stream``: a session's recent tool-call events, read from the stream."""
    notifications: Notifications | None = None
    """Stack option ``subscriptions``: change notifications across instances."""
    interactive: InteractiveServices | None = None
    """Request-state keys (2026) and reply delivery (2025) for tools that ask their client."""
    tasks: TaskService | None = None
    """The tasks extension, where the task worker is deployed."""
    blocking: Blocking = IN_THREAD
    """How a blocking store call runs from async code (chosen by the composition root)."""

    @cached_property
    def sessions(self) -> ToolSessions:
        """The session store as tools use it: awaitable (open, get, a session's tool calls)."""
        return ToolSessions(self.store, self.blocking)


ToolContext = context.ToolContext[Services[DepsT]]
"""The context a feature module's tool, resource or prompt receives: ``ToolContext[Deps]`` types
``ctx.services.deps`` as the package's own ``Deps``; plain ``ToolContext`` leaves them untyped."""
