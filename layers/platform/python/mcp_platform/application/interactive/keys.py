"""The request-state keys: one Secrets Manager secret shared by every instance (2026-07-28).

The secret's value is a JSON object: ``{"current": "<key id>", "<key id>": "<key>", ...}``. New
states are sealed with the current key; a state is opened with the key its id names, so during a
rotation (add a key, make it current, drop the old one once its states have expired) states
sealed on either side of it stay valid on every instance. See the README, "Interactive tools".

Fetched on first use, then cached; re-read every ``refresh_seconds`` so a rotation reaches warm
instances, and at once (at most every ``miss_refresh_seconds``) when a state names a key id this
process does not know yet. Key material is never logged, and errors never quote the secret.

The OAuth facade keeps its token-signing seeds in a secret of the same shape (``label`` names it
in errors) and publishes every key of the set (:meth:`SecretKeyRing.keys`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Protocol

from mcp_platform.application.interactive.state import KEY_ID

MIN_KEY_CHARS = 32


class KeyRingError(RuntimeError):
    """The secret could not be read or does not hold a usable key set (nothing of it is quoted)."""


class SecretText(Protocol):
    """Where a key set's text is kept (a Secrets Manager secret): ``read`` returns its current
    value, or raises when it cannot (the error names the secret, never its value)."""

    def read(self) -> str: ...


class SecretKeyRing:
    def __init__(
        self,
        secret: SecretText,
        *,
        refresh_seconds: float = 300.0,
        miss_refresh_seconds: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
        label: str = "request-state secret",
    ) -> None:
        self._secret = secret
        self._label = label
        self._refresh_seconds = refresh_seconds
        self._miss_refresh_seconds = miss_refresh_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._keys: dict[str, bytes] = {}
        self._current = ""
        self._fetched_at: float | None = None

    def signing_key(self) -> tuple[str, bytes]:
        """(key id, key) for new states."""
        with self._lock:
            if self._fetched_at is None or self._monotonic() - self._fetched_at >= self._refresh_seconds:
                self._fetch()
            return self._current, self._keys[self._current]

    def verification_key(self, kid: str) -> bytes | None:
        """The key named ``kid``, or None when the secret does not hold it (any more)."""
        with self._lock:
            now = self._monotonic()
            stale = self._fetched_at is None or now - self._fetched_at >= self._refresh_seconds
            unknown = kid not in self._keys and (
                self._fetched_at is None or now - self._fetched_at >= self._miss_refresh_seconds
            )
            if stale or unknown:
                self._fetch()
            return self._keys.get(kid)

    def keys(self) -> dict[str, bytes]:
        """Every key of the set (a copy), refreshed as :meth:`signing_key` is."""
        with self._lock:
            if self._fetched_at is None or self._monotonic() - self._fetched_at >= self._refresh_seconds:
                self._fetch()
            return dict(self._keys)

    def keys_after_a_miss(self) -> dict[str, bytes]:
        """Every key of the set (a copy), read again first when the last read is at least
        ``miss_refresh_seconds`` old: for a caller that found no key to match what it was given
        (a rotation may be in flight), as :meth:`verification_key` does for an unknown id."""
        with self._lock:
            if self._fetched_at is None or self._monotonic() - self._fetched_at >= self._miss_refresh_seconds:
                self._fetch()
            return dict(self._keys)

    def _fetch(self) -> None:
        try:
            text = self._secret.read()
        except Exception as exc:
            # The store's error names the secret and the reason, never its value: chained as it is.
            raise KeyRingError(f"{self._label} unreadable ({type(exc).__name__})") from exc
        self._current, self._keys = parse_key_set(text, self._label)
        self._fetched_at = self._monotonic()


def parse_key_set(text: str, label: str = "request-state secret") -> tuple[str, dict[str, bytes]]:
    """(current key id, every key) of a secret value; raises KeyRingError naming only the rule."""
    try:
        value = json.loads(text)
    except ValueError:
        # Not chained: a JSONDecodeError keeps the whole document (the keys) in its ``doc``.
        raise KeyRingError(f"{label} is not a JSON object") from None
    if not isinstance(value, dict) or not isinstance(value.get("current"), str):
        raise KeyRingError(f'{label} needs "current": "<key id>"')
    keys = {
        kid: key.encode()
        for kid, key in value.items()
        if kid != "current" and KEY_ID.fullmatch(kid) and isinstance(key, str) and len(key) >= MIN_KEY_CHARS
    }
    if value["current"] not in keys:
        raise KeyRingError(f"{label}: the current key must be a string of >= {MIN_KEY_CHARS} characters")
    return value["current"], keys


class StaticKeyRing:
    """Fixed keys (tests, tools): the same interface without a secret."""

    def __init__(self, current: str, keys: dict[str, bytes]) -> None:
        self._current, self._keys = current, dict(keys)

    def signing_key(self) -> tuple[str, bytes]:
        return self._current, self._keys[self._current]

    def verification_key(self, kid: str) -> bytes | None:
        return self._keys.get(kid)

    def keys(self) -> dict[str, bytes]:
        return dict(self._keys)
