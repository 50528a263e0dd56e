"""Warm 2026 stateless ``tools/call``s in one process, for counting their instructions.

``python warm_calls.py SIDE:COUNT`` builds one side as the CPU-per-request benchmark does (``ours``:
our endpoint on zero-latency fakes, no auth, its event flushed to the fake stream and its metric
line written; ``peer``: the SDK's stateless JSON server), sends 50 calls to warm it, then COUNT
more echoes through ASGI, and exits 0 only when every call was answered with a result. Run under
``valgrind --tool=callgrind`` at two counts, the difference divided by the difference of the counts
is the CPU work of one warm call, whatever else the machine runs and whatever its CPU
(bench_endpoint.py compares ours with the SDK's).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from common import modern_call, our_app
from fakes import asgi_post

WARM_UP = 50


async def calls(app: Any, count: int) -> None:
    for i in range(count):
        headers, body = modern_call(i, "echo", {"text": "hi"})
        status, _, raw = await asgi_post(app, "/mcp", headers, body)
        if status != 200 or b'"result"' not in raw:
            raise SystemExit(f"not answered: {status} {raw[:200]!r}")


async def main(side: str, count: int) -> None:
    if side == "ours":
        ours = our_app(auth=False)
        await calls(ours, WARM_UP + count)
        return
    from peer_sdk_server import build

    peer = build(json_response=True, stateless=True, auth=False)
    async with peer.router.lifespan_context(peer):
        await calls(peer, WARM_UP + count)


if __name__ == "__main__":
    side, count = sys.argv[1].split(":")
    if side not in ("ours", "peer"):
        raise SystemExit(f"side must be ours or peer, got {side!r}")
    asyncio.run(main(side, int(count)))
