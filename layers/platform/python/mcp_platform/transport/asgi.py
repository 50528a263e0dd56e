"""The ASGI callables as the transport uses them (the ASGI 3 HTTP and lifespan protocols).

Messages stay plain dicts: their keys depend on their ``type`` and the transport reads only a
few of them, so a typed dict per message type would describe much and check little.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
