"""What the use cases and the tools reach besides a request: the platform's services, each typed
by the port it implements, built once per process by the composition root (``bootstrap``).

A feature that a stack leaves off (the event stream, the audit trail, subscriptions, tasks) is
None here, and a tool that needs it says so with a ToolError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_platform.protocol import context

if TYPE_CHECKING:
    from mcp_platform.application.audit.trail import AuditTrailReader
    from mcp_platform.application.events.ports import RecentToolEvents
    from mcp_platform.application.interactive.services import InteractiveServices
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.application.sessions.ports import SessionRepository
    from mcp_platform.application.tasks.service import TaskService


@dataclass(frozen=True)
class Services:
    sessions: SessionRepository
    """The session store (``mcp_platform.testing.InMemorySessions`` in a unit test)."""
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
    deps: object = None
    """The feature modules' own dependencies, as their app builds them."""


ToolContext = context.ToolContext[Services]
"""The context a feature module's tool, resource or prompt receives, typed with :class:`Services`."""
