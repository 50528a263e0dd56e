"""What the dispatch must recognise of the interactive API, loaded at start (the API itself,
:mod:`mcp_platform.protocol.interactive`, loads on a tool's first question): a question, and the
signal that a run needs answers.

2026-07-28 answers a request whose run needs input with an ``InputRequiredResult``: only the
methods in :data:`INPUT_METHODS` may, and a run signals it with :class:`InputRequired`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp_platform.protocol.jsonrpc import JSONObject

INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""2026-07-28: the requests that may answer InputRequiredResult (mrtr.mdx, "Supported Requests")."""


@dataclass(frozen=True, slots=True)
class InputRequest:
    """One question for the client: a server-to-client request without its JSON-RPC framing."""

    method: str
    params: JSONObject = field(default_factory=dict)

    def to_wire(self) -> JSONObject:
        return {"method": self.method, "params": self.params}


class InputRequired(Exception):
    """2026-07-28: the run needs answers the request does not carry; the server answers an
    InputRequiredResult asking ``requests``. Never committed, never cached."""

    def __init__(self, requests: Mapping[str, InputRequest]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = dict(requests)
