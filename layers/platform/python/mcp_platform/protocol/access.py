"""What one caller may use, as the deployment's policies decide: the protocol's side of it.

Requests carry an :class:`Access` (``RequestContext.access``) only where policies are configured
(:mod:`mcp_platform.application.policies`); without one everything is permitted and nothing here
runs. Lists show only what it reports usable; a call, read or get it forbids is answered
:data:`~mcp_platform.protocol.jsonrpc.FORBIDDEN` before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from mcp_platform.protocol.jsonrpc import FORBIDDEN, JsonRpcError

CALL_TOOL: Final = "call_tool"
READ_RESOURCE: Final = "read_resource"
GET_PROMPT: Final = "get_prompt"
FORBIDDEN_HTTP_STATUS: Final = 403  # the 2026-07-28 answer's status (2025: every JSON-RPC error is a 200)


class Access(Protocol):
    """The policies' decisions for one caller."""

    def usable(self, action: str, names: Sequence[str]) -> Sequence[bool]:
        """For each of ``names`` (tool names, resource URIs or URI templates, prompt names): may the
        caller use it with some arguments. What a list shows."""
        ...

    def require(self, action: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        """Nothing when the caller may use ``name`` with ``arguments``; else raises :func:`forbidden`."""
        ...


def forbidden(action: str, name: str, policies: Sequence[str], errors: Sequence[str] = ()) -> JsonRpcError:
    """The answer to a use the policies forbid: -31010 (HTTP 403 in 2026-07-28), naming what was
    refused and the policies that decided it (none: no policy permits it), and what could not be
    evaluated (``errors``: such a use is refused too)."""
    what = {CALL_TOOL: "tool", READ_RESOURCE: "resource", GET_PROMPT: "prompt"}.get(action, action)
    data: dict[str, Any] = {"action": action, "name": name, "policies": list(policies)}
    if errors:
        data["errors"] = list(errors)
    message = f"This server's policies do not let you use the {what} {name}"
    return JsonRpcError(FORBIDDEN, message, data)
