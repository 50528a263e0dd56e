"""Domain package of the serverless MCP platform (shared Lambda layer), and the names a feature
module needs::

    from mcp_platform import ToolContext, ToolError, tool

Nothing in this package knows about Lambda events: functions in ``functions/`` translate
events and call into it. AWS clients are injected through ``__init__``; defaults are built by
:mod:`mcp_platform.adapters.aws_clients` only when none is passed.

Every function imports this package at cold start, so it imports nothing itself: each name
below loads its module on first use (PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from mcp_platform.application.services import Services as Services
    from mcp_platform.application.services import ToolContext as ToolContext
    from mcp_platform.application.sessions.changes import ConditionCheck as ConditionCheck
    from mcp_platform.application.sessions.changes import ExtraPut as ExtraPut
    from mcp_platform.application.sessions.errors import SessionNotFound as SessionNotFound
    from mcp_platform.application.sessions.model import Session as Session
    from mcp_platform.bootstrap.runtime import AppEnvironment as AppEnvironment
    from mcp_platform.protocol.apps import ResourceCsp as ResourceCsp
    from mcp_platform.protocol.apps import ResourcePermissions as ResourcePermissions
    from mcp_platform.protocol.prompts import PromptArgumentError as PromptArgumentError
    from mcp_platform.protocol.prompts import assistant as assistant
    from mcp_platform.protocol.prompts import prompt as prompt
    from mcp_platform.protocol.prompts import user as user
    from mcp_platform.protocol.resources import ResourceNotFound as ResourceNotFound
    from mcp_platform.protocol.resources import resource as resource
    from mcp_platform.protocol.resources import resource_template as resource_template
    from mcp_platform.protocol.resources import ui_resource as ui_resource
    from mcp_platform.protocol.tools import APPEND_ONLY as APPEND_ONLY
    from mcp_platform.protocol.tools import READ_MODIFY_WRITE as READ_MODIFY_WRITE
    from mcp_platform.protocol.tools import READ_ONLY as READ_ONLY
    from mcp_platform.protocol.tools import ToolError as ToolError
    from mcp_platform.protocol.tools import ToolResult as ToolResult
    from mcp_platform.protocol.tools import tool as tool

_FACADE: dict[str, str] = {
    "tool": "mcp_platform.protocol.tools",
    "ToolError": "mcp_platform.protocol.tools",
    "ToolResult": "mcp_platform.protocol.tools",
    "READ_ONLY": "mcp_platform.protocol.tools",
    "APPEND_ONLY": "mcp_platform.protocol.tools",
    "READ_MODIFY_WRITE": "mcp_platform.protocol.tools",
    "ToolContext": "mcp_platform.application.services",
    "Services": "mcp_platform.application.services",
    "AppEnvironment": "mcp_platform.bootstrap.runtime",
    "Session": "mcp_platform.application.sessions.model",
    "SessionNotFound": "mcp_platform.application.sessions.errors",
    "resource": "mcp_platform.protocol.resources",
    "resource_template": "mcp_platform.protocol.resources",
    "ResourceNotFound": "mcp_platform.protocol.resources",
    "ui_resource": "mcp_platform.protocol.resources",
    "ResourceCsp": "mcp_platform.protocol.apps",
    "ResourcePermissions": "mcp_platform.protocol.apps",
    "prompt": "mcp_platform.protocol.prompts",
    "PromptArgumentError": "mcp_platform.protocol.prompts",
    "user": "mcp_platform.protocol.prompts",
    "assistant": "mcp_platform.protocol.prompts",
    "ExtraPut": "mcp_platform.application.sessions.changes",
    "ConditionCheck": "mcp_platform.application.sessions.changes",
}
__all__ = sorted(_FACADE)


def __getattr__(name: str) -> Any:
    module = _FACADE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACADE})
