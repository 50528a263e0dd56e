"""The issuer's signing keys: discovered from its metadata, cached, refetched with a rate limit.

The JWKS URL is ``MCP_OAUTH_JWKS_URL`` or the ``jwks_uri`` of the issuer's RFC 8414 metadata
(``/.well-known/oauth-authorization-server``), falling back to OpenID discovery
(``/.well-known/openid-configuration``, e.g. Amazon Cognito has only this one). Both are looked
up on the first token, not at start: an issuer that is down must not stop the function starting.

Keys are kept for ``ttl_seconds``. A token naming an unknown ``kid`` (the issuer rotated its
keys) triggers a refetch, but at most once per ``min_refetch_seconds``: a flood of tokens with
made-up kids costs the issuer one request per interval, not one per token. Fetching is blocking
I/O through an injected ``fetch`` (tests serve the issuer on loopback) run in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcp_platform.application.auth.ports import IssuerUnavailable, Jwk
from mcp_platform.config import ConfigError, checked_url

logger = logging.getLogger(__name__)

Fetch = Callable[[str], bytes]
MAX_DOCUMENT_BYTES = 512 * 1024  # a JWKS or metadata document is a few KB; refuse anything huge
STALE_GRACE_SECONDS = 3600.0


def urllib_fetch(timeout_seconds: float = 3.0) -> Fetch:
    """Plain HTTPS GET with a short timeout: a slow issuer must not hold a request for long."""

    def fetch(url: str) -> bytes:
        request = urllib.request.Request(url, headers={"accept": "application/json"})  # noqa: S310 - checked_url
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:  # noqa: S310
            body: bytes = response.read(MAX_DOCUMENT_BYTES + 1)
        if len(body) > MAX_DOCUMENT_BYTES:
            raise IssuerUnavailable(f"{url}: document larger than {MAX_DOCUMENT_BYTES} bytes")
        return body

    return fetch


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """RFC 8414 section 3.1 (well-known segment inserted before the issuer's path), then OpenID."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return (
        f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    )


class JwksCache:
    """The issuer's keys as the authenticator's :class:`~mcp_platform.application.auth.ports.SigningKeySource`."""

    def __init__(
        self,
        issuer: str,
        fetch: Fetch,
        *,
        jwks_url: str = "",
        ttl_seconds: float = 600.0,
        min_refetch_seconds: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.fetch = fetch
        self.jwks_url = jwks_url
        self.ttl_seconds = ttl_seconds
        self.min_refetch_seconds = min_refetch_seconds
        self._monotonic = monotonic
        self._keys: dict[str | None, Jwk] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0
        """JWKS documents fetched so far (the rate limit is observable)."""

    async def key_for(self, kid: str | None) -> Jwk | None:
        """The signing key named ``kid`` (a token without kid: the issuer's only key), or None."""
        if self._expired() or self._lookup(kid) is None:
            async with self._lock:
                # Re-checked under the lock: a request that waited may find the work done.
                if (self._expired() or self._lookup(kid) is None) and self._may_refetch():
                    await self._refresh()
        if not self._usable():
            raise IssuerUnavailable(f"no current signing keys from {self.issuer}")
        return self._lookup(kid)

    def _lookup(self, kid: str | None) -> Jwk | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid) if kid is not None else None

    def _expired(self) -> bool:
        return self._fetched_at is None or self._monotonic() - self._fetched_at >= self.ttl_seconds

    def _usable(self) -> bool:
        return (
            self._fetched_at is not None
            and self._monotonic() - self._fetched_at < self.ttl_seconds + STALE_GRACE_SECONDS
        )

    def _may_refetch(self) -> bool:
        return self._attempted_at is None or self._monotonic() - self._attempted_at >= self.min_refetch_seconds

    async def _refresh(self) -> None:
        self._attempted_at = self._monotonic()
        try:
            keys = await asyncio.to_thread(self._download)
        except IssuerUnavailable:
            if not self._usable():
                raise
            # Issuers publish new keys before using them and keep old ones for days: serving
            # the last good set for a bounded time beats refusing every caller.
            logger.warning("JWKS refresh from %s failed; keeping the last key set", self.issuer, exc_info=True)
            return
        self._keys = keys
        self._fetched_at = self._monotonic()

    def _download(self) -> dict[str | None, Jwk]:
        url = self.jwks_url or self._discover()
        self.fetches += 1
        document = self._get_json(url)
        keys = document.get("keys")
        if not isinstance(keys, list):
            raise IssuerUnavailable(f"{url}: no 'keys' list")
        # Only signature keys: an encryption key (use=enc) must never verify a token.
        usable = [key for key in keys if isinstance(key, dict) and key.get("use", "sig") == "sig"]
        return {key.get("kid") if isinstance(key.get("kid"), str) else None: key for key in usable}

    def _discover(self) -> str:
        failures = []
        for url in metadata_urls(self.issuer):
            try:
                document = self._get_json(url)
            except IssuerUnavailable as exc:
                failures.append(str(exc))  # expected for OpenID-only issuers (Cognito): try the next
                continue
            # RFC 8414 section 3.3: the metadata must be the configured issuer's own.
            if document.get("issuer") != self.issuer or not isinstance(document.get("jwks_uri"), str):
                failures.append(f"{url}: issuer mismatch or no jwks_uri")
                continue
            try:
                self.jwks_url = checked_url("jwks_uri", document["jwks_uri"])
            except ConfigError as exc:
                raise IssuerUnavailable(str(exc)) from exc
            return self.jwks_url
        raise IssuerUnavailable("no usable issuer metadata: " + "; ".join(failures))

    def _get_json(self, url: str) -> dict[str, Any]:
        try:
            document = json.loads(self.fetch(url))
        except IssuerUnavailable:
            raise
        except (OSError, ValueError) as exc:  # URLError/HTTPError/timeouts are OSErrors
            raise IssuerUnavailable(f"{url}: {exc}") from exc
        if not isinstance(document, dict):
            raise IssuerUnavailable(f"{url}: not a JSON object")
        return document
