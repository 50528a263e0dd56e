"""The interactive tool API, the same in both protocol eras: the questions, their answers' shapes
and the checks (``ToolContext``'s methods ask them; loaded on the first question: a tool that
never asks never imports it).

A tool (prompt, resource read) awaits ``ctx.elicit(...)``, ``ctx.sample(...)``,
``ctx.list_roots()``, or ``ctx.ask_all({...})`` for several questions at once. Each question has
a key: the one given, else ``<kind>-<n>`` (the n-th question of this run), so a deterministic tool
asks the same keys whenever it runs again. Two rules follow from the 2026-07-28 wire, where the
tool runs again from the start with the answers so far:

* a tool must not do what it cannot undo before its last question (the run may be cut there);
* its questions must follow from its arguments and earlier answers (not from the clock).

A question needs the client capability it uses (``elicitation``, ``sampling``, ``roots``):
without it the request is refused with -32021. ``ctx.supports(capability)`` lets a tool ask only
what the client can answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_platform.protocol.input_required import INPUT_METHODS, InputRequest, InputRequired
from mcp_platform.protocol.jsonrpc import JSONObject, JSONValue
from mcp_platform.protocol.storability import Inadmissible, Storability

__all__ = ["INPUT_METHODS", "InputRequest", "InputRequired", "elicitation", "roots", "sampling"]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"
CAPABILITY = {ELICIT: "elicitation", SAMPLE: "sampling", ROOTS: "roots"}
SHORT_NAMES = {ELICIT: "elicit", SAMPLE: "sample", ROOTS: "roots"}
ELICIT_ACTIONS = ("accept", "decline", "cancel")


class InvalidInputResponse(ValueError):
    """A client's answer that does not have the shape of its request's result."""


class Interaction(Protocol):
    """How a request's questions reach its client (one object per request)."""

    round: int
    """2026-07-28: 1 on the first request, n+1 once n verified ``requestState`` came back."""

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        """Every request's answer (each checked by :func:`check_answer`), keyed like ``requests``."""
        ...


@dataclass(frozen=True, slots=True)
class Elicited:
    """An elicitation's answer: ``action`` (accept, decline, cancel) and what the user submitted
    (``content``: empty unless accepted)."""

    action: str
    content: dict[str, Any]

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class Sampled:
    """A sampling answer: the message the client's model produced."""

    role: str
    content: Any
    model: str
    stop_reason: str | None

    @property
    def text(self) -> str | None:
        """The text of a single text content block, else None."""
        if isinstance(self.content, dict) and self.content.get("type") == "text":
            return str(self.content.get("text", ""))
        return None


def elicitation(message: str, requested_schema: JSONObject) -> InputRequest:
    """A form elicitation (``mode`` omitted: form is the default in every revision)."""
    return InputRequest(ELICIT, {"message": message, "requestedSchema": requested_schema})


def sampling(messages: str | Sequence[JSONObject], *, max_tokens: int, **options: JSONValue) -> InputRequest:
    """A sampling request; ``options`` are further params by their wire name (``systemPrompt``,
    ``temperature``, ``stopSequences``, ``modelPreferences``, ``metadata``, ...)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    return InputRequest(SAMPLE, {"messages": list(messages), "maxTokens": max_tokens, **options})


def roots() -> InputRequest:
    return InputRequest(ROOTS, {})


def check_answer(method: str, answer: Any, storability: Storability) -> JSONObject:
    """``answer`` when it has the shape of ``method``'s result and ``storability`` admits it (a
    tool may keep it, a task does: admitted as tool arguments are); raises InvalidInputResponse."""
    if not isinstance(answer, dict):
        raise InvalidInputResponse(f"must be an object (the result of {method})")
    try:
        storability.measure(answer)
    except Inadmissible as exc:
        raise InvalidInputResponse(f"cannot be kept: {exc}") from exc
    if method == ELICIT:
        if answer.get("action") not in ELICIT_ACTIONS:
            raise InvalidInputResponse(f"action must be one of {', '.join(ELICIT_ACTIONS)}")
        if not isinstance(answer.get("content", {}), dict):
            raise InvalidInputResponse("content must be an object")
    elif method == SAMPLE:
        if answer.get("role") not in ("user", "assistant") or not isinstance(answer.get("model"), str):
            raise InvalidInputResponse("a sampling result needs role (user|assistant) and model (string)")
        if not isinstance(answer.get("content"), dict | list):
            raise InvalidInputResponse("a sampling result needs content (a block or a list of blocks)")
    elif method == ROOTS:
        found = answer.get("roots")
        if not isinstance(found, list) or not all(isinstance(r, dict) and isinstance(r.get("uri"), str) for r in found):
            raise InvalidInputResponse("roots must be a list of objects with a uri")
    return answer
