"""Seals, opens and consumes ``requestState`` (2026-07-28), for every instance alike.

Opening verifies the token (``application.interactive.state``) with the shared key ring
(``application.interactive.keys``). Consuming
makes a verified state one-time: a conditional put of its nonce in the session table
(``pk=rstate#<nonce>``, ``sk=used``, ``attribute_not_exists``), TTL'd to the state's expiry plus
a margin. A second request with the same state, on any instance, fails that condition and is
refused; DynamoDB decides, so two concurrent retries cannot both pass.
"""

from __future__ import annotations

import math
import secrets
from typing import TYPE_CHECKING, Any, Protocol

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import require_epoch_seconds, to_item
from mcp_platform.adapters.dynamodb.port_errors import translated
from mcp_platform.application.interactive.ports import InteractiveStoreError, StateKeysMissing
from mcp_platform.application.interactive.state import (
    Binding,
    InvalidRequestState,
    RoundState,
    StateAlreadyUsed,
    key_id_of,
    open_state,
    seal_state,
)
from mcp_platform.protocol.clock import Clock, SystemClock, iso_utc

if TYPE_CHECKING:
    from mcp_platform.adapters.dynamodb.gateway import DynamoGateway

STATE_TTL_SECONDS = 900
"""How long a client has to answer one round (a person filling in a form)."""
NONCE_MARGIN_SECONDS = 60  # the used-nonce item outlives the state it retires


class KeyRing(Protocol):
    def signing_key(self) -> tuple[str, bytes]: ...

    def verification_key(self, kid: str) -> bytes | None: ...


__all__ = ["KeyRing", "RequestStateVault", "StateAlreadyUsed", "StateKeysMissing"]


class RequestStateVault:
    """The request-state vault (``application.interactive.ports.StateVault``) over the session table."""

    def __init__(
        self,
        keys: KeyRing,
        gateway: DynamoGateway,
        table_name: str,
        *,
        ttl_seconds: int = STATE_TTL_SECONDS,
        clock: Clock | None = None,
    ) -> None:
        self.keys = keys
        self.gateway = gateway
        self.table_name = table_name
        self.ttl_seconds = ttl_seconds
        self.clock: Clock = clock or SystemClock()

    def new_state(self, answers: dict[str, dict[str, Any]], pending: dict[str, str], round_: int) -> RoundState:
        expires = require_epoch_seconds(math.floor(self.clock.now()) + self.ttl_seconds)
        return RoundState(answers, pending, round_, expires, secrets.token_urlsafe(16))

    def seal(self, binding: Binding, state: RoundState) -> str:
        """May read the secret (first use, refresh): call it off the event loop."""
        kid, key = self.keys.signing_key()
        return seal_state(key, kid, binding, state)

    def open(self, token: str, binding: Binding) -> RoundState:
        """The verified state; raises InvalidRequestState. May read the secret (off the loop)."""
        key = self.keys.verification_key(key_id_of(token))
        if key is None:
            raise InvalidRequestState("requestState failed verification")
        return open_state(key, token, binding, self.clock.now())

    def consume(self, state: RoundState) -> None:
        """One conditional PutItem; raises StateAlreadyUsed when the nonce was used before."""
        item = {
            ts.PK: ts.request_state_pk(state.nonce),
            ts.SK: ts.REQUEST_STATE_USED_SK,
            ts.TTL: require_epoch_seconds(state.expires + NONCE_MARGIN_SECONDS),
            ts.REQUESTED_AT: iso_utc(self.clock.now()),
        }
        with translated(InteractiveStoreError, "request-state nonce put"):
            fresh = self.gateway.put_new(self.table_name, to_item(item))
        if not fresh:
            raise StateAlreadyUsed("requestState was already used: start the request again without it")
