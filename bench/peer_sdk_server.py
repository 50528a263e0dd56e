"""The peer: the official MCP Python SDK's minimal server with the same tools as ours.

``build`` gives each mode the benchmarks compare against: stateless JSON (the mode suited to
Lambda, 2026-07-28 requests) and stateful SSE (2025 sessions kept in the process's memory), each
with or without bearer auth (a static-key ``TokenVerifier``: the cheapest verifier the SDK
allows, like our cached API-key check). Used only by the benchmarks, served like ours
(``mcp_platform.transport.serving``) or in-process.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

BENCH_KEY = "bench-key"


class StaticKeyVerifier:
    """Accepts one bearer key (the SDK's TokenVerifier protocol)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if token != BENCH_KEY:
            return None
        return AccessToken(token=token, client_id="bench", scopes=[], subject="bench")


def _server(auth: bool) -> MCPServer:
    options: dict[str, Any] = {}
    if auth:
        options = {
            "token_verifier": StaticKeyVerifier(),
            "auth": AuthSettings(
                issuer_url="https://auth.example.com",  # type: ignore[arg-type]
                resource_server_url="http://127.0.0.1:8000/mcp",  # type: ignore[arg-type]
                validate_token_resource=False,
            ),
        }
    peer = MCPServer("peer", **options)

    @peer.tool(description="Return the given text unchanged.")
    async def echo(text: str) -> str:
        return text

    @peer.tool(description="Count down, reporting progress at each step.")
    async def countdown(ctx: Context, steps: int = 5, interval_ms: int = 200) -> str:
        for step in range(steps):
            await ctx.report_progress(step, steps)
            await asyncio.sleep(interval_ms / 1000)
        return f"counted {steps} steps"

    @peer.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return peer


def build(json_response: bool = True, *, stateless: bool = True, auth: bool = False) -> Any:
    return _server(auth).streamable_http_app(stateless_http=stateless, json_response=json_response)


app = build()
app_bearer = build(auth=True)  # stateless JSON with bearer auth (the loopback benchmark)
app_stateful = build(json_response=False, stateless=False)  # 2025 sessions in memory (cold start to initialize)
