"""The ``requestState`` codec (2026-07-28): what a round carries, sealed with HMAC-SHA256.

Token: ``s1.<key id>.<payload>.<mac>``, both parts base64url without padding. The payload holds
what the next round needs (the answers so far, the questions pending, the round number, the
expiry and a one-time nonce); the MAC covers it *and* what the retry must match but the token
does not carry: the principal, the method and a digest of the request's salient parameters. A
state presented by another principal, on another request, after its expiry or altered in any
byte fails :func:`open_state` with :class:`InvalidRequestState`. The payload is not encrypted:
it holds only the client's own answers (the client sees them anyway) and the server's questions.

Imported on first use only (see ``interactive.services.InteractiveServices``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from mcp_platform.protocol import compact_json

VERSION = "s1"
MAX_TOKEN_CHARS = 65_536
"""A round's state (answers included) must fit this; larger answers are refused, not truncated."""
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
MAC_BYTES = 32


class InvalidRequestState(ValueError):
    """The state failed verification (tampered, foreign, for another request) or expired."""


class StateAlreadyUsed(InvalidRequestState):
    """The state was consumed by an earlier request."""


@dataclass(frozen=True)
class Binding:
    """What a state is bound to without carrying it: the retry must present the same."""

    principal: str
    method: str
    digest: str
    """sha256 of the request's salient parameters (``digests.salient_digest``)."""


@dataclass(frozen=True)
class RoundState:
    answers: dict[str, dict[str, Any]]
    """key -> {"q": digest of the question, "a": the client's answer}: the rounds so far."""
    pending: dict[str, str]
    """key -> digest of the question the client is to answer in the retry."""
    round: int
    expires: int
    """Epoch seconds."""
    nonce: str


def canonical(value: Any) -> bytes:
    return compact_json.canonical(value).encode()


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def _mac(key: bytes, kid: str, binding: Binding, state: RoundState) -> bytes:
    material = [
        VERSION,
        kid,
        binding.principal,
        binding.method,
        binding.digest,
        digest(state.answers),
        state.pending,
        state.round,
        state.expires,
        state.nonce,
    ]
    return hmac.new(key, canonical(material), hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    # urlsafe_b64decode skips characters outside the alphabet: check the alphabet first.
    if not _B64URL.fullmatch(text):
        raise InvalidRequestState("requestState failed verification")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestState("requestState failed verification") from exc


def seal_state(key: bytes, kid: str, binding: Binding, state: RoundState) -> str:
    """The token; raises ValueError when the round's state is larger than MAX_TOKEN_CHARS."""
    payload = {"a": state.answers, "p": state.pending, "r": state.round, "e": state.expires, "n": state.nonce}
    token = f"{VERSION}.{kid}.{_b64(canonical(payload))}.{_b64(_mac(key, kid, binding, state))}"
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"the answers so far take more than {MAX_TOKEN_CHARS} characters of requestState")
    return token


def key_id_of(token: str) -> str:
    """The key id a token names (checked for shape only; the MAC decides)."""
    parts = token.split(".") if len(token) <= MAX_TOKEN_CHARS else []
    if len(parts) != 4 or parts[0] != VERSION or not KEY_ID.fullmatch(parts[1]):
        raise InvalidRequestState("requestState failed verification")
    return parts[1]


def open_state(key: bytes, token: str, binding: Binding, now: float) -> RoundState:
    """The state of a verified token; raises InvalidRequestState otherwise. Nothing of the
    payload is trusted before the MAC over it (and the binding) has been checked."""
    kid = key_id_of(token)
    _, _, payload_part, mac_part = token.split(".")
    mac = _unb64(mac_part)
    try:
        payload = json.loads(_unb64(payload_part))
        state = RoundState(
            answers=_answers(payload["a"]),
            pending=_pending(payload["p"]),
            round=_int(payload["r"]),
            expires=_int(payload["e"]),
            nonce=str(payload["n"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequestState("requestState failed verification") from exc
    if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, _mac(key, kid, binding, state)):
        raise InvalidRequestState("requestState failed verification")
    if state.expires <= now:
        raise InvalidRequestState("requestState has expired: start the request again without it")
    return state


def _answers(value: Any) -> dict[str, dict[str, Any]]:
    entries = value.values() if isinstance(value, dict) else [None]
    if not all(isinstance(entry, dict) and isinstance(entry.get("q"), str) for entry in entries):
        raise ValueError("answers")
    answers: dict[str, dict[str, Any]] = value
    return answers


def _pending(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("pending")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("integer")
    return value
