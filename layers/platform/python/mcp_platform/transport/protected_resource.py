"""OAuth on the HTTP side: RFC 9728 metadata routes and the per-tool scope check (403).

Metadata is public and holds nothing secret: it is served without authentication, Host or
Origin checks, readable from any browser origin (``Access-Control-Allow-Origin: *``, no
credentials), so browser-based clients can discover the authorization server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_platform.application.auth.base import Principal
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.protocol.tools import ToolSpec
from mcp_platform.transport.messages import HttpError, HttpRequest, send_empty, send_json

if TYPE_CHECKING:  # an API-key stack never loads the OAuth modules (cold start)
    from mcp_platform.application.auth.resource import ProtectedResource

PUBLIC_CORS = {"access-control-allow-origin": "*"}
PREFLIGHT = {
    **PUBLIC_CORS,
    "access-control-allow-methods": "GET",
    "access-control-allow-headers": "mcp-protocol-version",
    "access-control-max-age": "600",
}
METADATA_MAX_AGE = "public, max-age=300"  # changes only with a deployment


async def serve_metadata(resource: ProtectedResource, request: HttpRequest, send: Any) -> None:
    if request.method == "OPTIONS":
        await send_empty(send, 204, PREFLIGHT)
        return
    if request.method != "GET":
        await send_json(send, 405, {"error": "method_not_allowed"}, {**PUBLIC_CORS, "allow": "GET"})
        return
    identifier = resource.resource_for(request.headers)
    if identifier is None:
        await send_json(send, 404, {"error": "not_found"}, PUBLIC_CORS)
        return
    document = resource.document(identifier)
    await send_json(send, 200, document, {**PUBLIC_CORS, "cache-control": METADATA_MAX_AGE})


def require_tool_scopes(
    resource: ProtectedResource | None,
    tool_for: Callable[[str], ToolSpec | None],
    request: HttpRequest,
    message: Request,
    principal: Principal,
) -> None:
    """A tools/call whose tool declares scopes the token lacks: 403 ``insufficient_scope`` with
    the scopes to ask for (RFC 6750 section 3.1; the MCP step-up authorization flow). Unknown
    tools pass: the server answers those itself."""
    if message.method != "tools/call" or principal.scopes is None:
        return
    name = message.params.get("name")
    spec = tool_for(name) if isinstance(name, str) else None
    if spec is None or not principal.lacks(spec.scopes):
        return
    challenge = (
        resource.challenge(request.headers, "insufficient_scope", "The tool needs more scope", spec.scopes)
        if resource is not None
        else 'Bearer error="insufficient_scope"'
    )
    raise HttpError(
        403, f"Insufficient scope for tool {name}", headers={"www-authenticate": challenge}, request_id=message.id
    )
