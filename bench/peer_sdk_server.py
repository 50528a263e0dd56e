"""The peer: the official MCP Python SDK's minimal server with the same tools as ours.

Stateless JSON mode (its cheapest configuration, the one suited to Lambda). Used only by the
benchmarks: ``python -m uvicorn peer_sdk_server:app`` from this folder, or in-process.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse

peer = MCPServer("peer")


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


def build(json_response: bool = True):
    return peer.streamable_http_app(stateless_http=True, json_response=json_response)


app = build()
