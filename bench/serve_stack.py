"""Serve an app for the loopback benchmark on one of the HTTP stacks the served one was chosen
against: ``python serve_stack.py STACK module:app PORT`` (from bench/).

``guarded`` is the served stack exactly as defined in ``mcp_platform.transport.serving`` (run.sh, make
dev); the others keep every other option of that definition and swap the protocol and the loop.
"""

from __future__ import annotations

import sys

import uvicorn

from mcp_platform.transport.serving import MAX_HEADER_BLOCK_BYTES, server_config

STACKS: dict[str, tuple[str, str] | None] = {
    "guarded": None,  # httptools with the header guard, on uvloop: the served stack
    "httptools": ("httptools", "uvloop"),  # uvicorn's httptools protocol unguarded: the previous stack
    "h11-uvloop": ("h11", "uvloop"),  # h11 bounds the block itself (400, not 431); no header timer
    "h11": ("h11", "asyncio"),  # uvicorn's pure-Python default
}


def main(stack: str, app: str, port: int) -> None:
    config = server_config(app, host="127.0.0.1", port=port, log_level="warning")
    swapped = STACKS[stack]
    if swapped is not None:
        config.http, config.loop = swapped
        config.h11_max_incomplete_event_size = MAX_HEADER_BLOCK_BYTES
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
