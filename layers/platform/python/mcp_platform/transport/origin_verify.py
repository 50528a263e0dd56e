"""The origin-verify header: what proves a request came through the platform's CloudFront edge.

With ``edge=cloudfront`` the Function URL stays reachable on the internet (origin access control
cannot front an MCP endpoint: Lambda would want every POST body signed), so the distribution adds
a secret header to every request it forwards and the endpoint refuses, with 403, any request but
its health check that does not carry one of the secret's values: a caller who finds the Function
URL cannot go around the WAF, the rate limits and the custom domain.

The values come from a Secrets Manager secret in the key-set shape every platform secret has
(``{"current": "k1", "k1": "<value>", ...}``); every value it holds is accepted, so a rotation
(add a value, point the distribution at it, drop the old one) never refuses CloudFront's requests.
The secret is read on the first request, then cached: re-read every ``refresh_seconds`` so a
rotation reaches warm instances, and at once, at most every ``miss_refresh_seconds``, when a value
is presented that this process does not know (the distribution may already send a new value), so
a flood of wrong values costs at most one read per interval.

The comparison is constant-time: the SHA-256 digests of the presented value and of every accepted
value are compared with :func:`hmac.compare_digest`, all of them, whatever matched, so neither the
position of the first differing byte, nor the length, nor which value matched shows in the time a
refusal takes.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Iterable

from mcp_platform.application.interactive.keys import SecretKeyRing, SecretText

# Sent by the distribution on every request to the Function URL (an origin custom header, which
# overwrites any copy a viewer sends), its value from the origin-verify secret.
ORIGIN_VERIFY_HEADER = "x-origin-verify"
LABEL = "origin-verify secret"


class OriginVerifier:
    def __init__(
        self,
        secret: SecretText,
        *,
        refresh_seconds: float = 300.0,
        miss_refresh_seconds: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._values = SecretKeyRing(
            secret,
            refresh_seconds=refresh_seconds,
            miss_refresh_seconds=miss_refresh_seconds,
            monotonic=monotonic,
            label=LABEL,
        )

    def accepts(self, presented: str | None) -> bool:
        """Whether ``presented`` (the header's value; None when absent) is one of the secret's
        values. Raises KeyRingError when the secret cannot be read or holds no usable value."""
        if presented is None:
            return False
        digest = _digest(presented.encode("utf-8", "surrogateescape"))
        known = self._values.keys()
        if _matches(digest, known.values()):
            return True
        # A value this process does not know yet: a rotation in flight? (compared again only when
        # the secret was read again and holds something new)
        fresh = self._values.keys_after_a_miss()
        return fresh != known and _matches(digest, fresh.values())


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def _matches(digest: bytes, accepted: Iterable[bytes]) -> bool:
    """Every accepted value is compared (their digests, in constant time each), whatever matched
    before it."""
    found = False
    for value in accepted:
        found |= hmac.compare_digest(digest, _digest(value))
    return found
