"""What a running tool can see and do: caller, session, progress, logs, cancellation, effects."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_platform.mcp.jsonrpc import notification_message
from mcp_platform.sessions.model import ConditionCheck, ExtraPut

Notify = Callable[[dict[str, Any]], Awaitable[None]]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


async def _discard(_: dict[str, Any]) -> None:
    return None


@dataclass
class Services:
    """Domain objects tools may use; built once per process by the endpoint function."""

    sessions: Any = None
    audit_trail: Any = None
    event_reader: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    """Per-call context handed to a tool as its ``ctx`` argument."""

    principal: str
    services: Services
    session: Any = None
    """The application session (``sessions.Session``) for tools declared with session="required"."""
    tool_call_id: str = ""
    progress_token: str | int | None = None
    log_level: str | None = "info"
    """Minimum level of log notifications; None = the caller did not opt in (2026), send none."""
    notify: Notify = _discard
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    context_append: list[dict[str, Any]] = field(default_factory=list)
    extra_puts: list[ExtraPut] = field(default_factory=list)
    """Items written in the same transaction as the call record (D10)."""
    condition_checks: list[ConditionCheck] = field(default_factory=list)
    """Conditions on items the transaction does not otherwise touch (D10)."""
    effect: str | None = None
    """The tool's declared effect on its session (``mcp.tools.EFFECTS``)."""
    attributes: dict[str, Any] | None = None
    """New session attributes to commit (read-modify-write tools only), see set_attributes."""

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send notifications/progress when the caller asked for it (a progressToken)."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
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
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self.notify(notification_message("notifications/message", params))

    def append_to_session(self, *messages: dict[str, Any]) -> None:
        """Queue context messages, committed atomically with the tool-call record (D3, D10)."""
        if self.effect == "read_only":
            raise ToolEffectViolation("a read_only tool cannot append to its session")
        self.context_append.extend(messages)

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        """Replace the session's attributes, committed under the version condition (D2): the
        value must be computed from ``self.session``, which is fresh on every run of the tool."""
        if self.effect != "read_modify_write":
            raise ToolEffectViolation(f"set_attributes needs effect 'read_modify_write', not {self.effect!r}")
        self.attributes = dict(attributes)


class ToolEffectViolation(RuntimeError):
    """A tool did what its declared effect excludes: a defect in the tool, never committed."""
