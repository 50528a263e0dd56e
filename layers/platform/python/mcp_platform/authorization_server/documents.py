"""Client ID metadata documents: a ``client_id`` that is an HTTPS URL names the client's metadata.

The facade fetches that URL itself, so the fetch is bounded in every way a hostile client could
use it (draft-ietf-oauth-client-id-metadata-document section 6):

- **Where.** The host is resolved once and every address must be a public one (no loopback,
  private, link-local, multicast or reserved address, IPv4 or IPv6; an IPv6 address that carries
  an IPv4 one, IPv4-mapped or NAT64, is judged as that IPv4 address); the connection goes to the
  address that was checked (no second resolution a rebinding DNS could answer differently). A
  local facade (served on loopback) may fetch from loopback, for development.
- **How much, how long.** At most :data:`MAX_DOCUMENT_BYTES` and :data:`FETCH_SECONDS` in all
  (a server trickling bytes is cut at the deadline, not per read); no redirect is followed.
- **What.** A JSON object whose ``client_id`` is exactly the URL, with valid ``redirect_uris`` and
  ``token_endpoint_auth_method`` ``none`` (a document cannot share a secret): anything else is
  ``invalid_client``.

Documents are cached per URL for their ``Cache-Control: max-age`` (bounded to
:data:`MAX_CACHE_SECONDS`; :data:`DEFAULT_CACHE_SECONDS` without one; ``no-store`` not at all).
"""

from __future__ import annotations

import ipaddress
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

from mcp_platform.authorization_server.clients import ClientRecord, display_name, metadata_fields
from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.ports import DocumentFetcher, DocumentRefused
from mcp_platform.authorization_server.urls import BadUrl, check_document_url

MAX_DOCUMENT_BYTES = 5 * 1024  # the draft's suggested limit: a document is a few hundred bytes
FETCH_SECONDS = 3.0
DEFAULT_CACHE_SECONDS = 300
MAX_CACHE_SECONDS = 24 * 3600
CACHE_ENTRIES = 256
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d{1,10})\s*(?:,|$)", re.IGNORECASE)

# RFC 6052: the well-known NAT64 prefix; the IPv4 address a translator connects to is the last 32 bits.
NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")


def public_address(address: str) -> bool:
    """Whether a connection to ``address`` stays on the public internet. An IPv4-mapped address
    (``::ffff:0:0/96``) or one of the well-known NAT64 prefix (``64:ff9b::/96``) reaches the IPv4
    address it embeds, and is judged as that address; the local-use NAT64 prefix (``64:ff9b:1::/48``,
    RFC 8215), 6to4 and Teredo are not global, and reserved space (IPv4-compatible ``::/96`` among
    it) is refused too."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in NAT64_PREFIX:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return ip.is_global and not ip.is_multicast and not ip.is_reserved


class ClientDocuments:
    """Client records from metadata documents, cached per URL."""

    def __init__(
        self,
        fetcher: DocumentFetcher,
        *,
        allow_loopback: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetcher = fetcher
        self.allow_loopback = allow_loopback
        self._monotonic = monotonic
        self._cache: OrderedDict[str, tuple[ClientRecord, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.fetches = 0

    def client(self, url: str) -> ClientRecord:
        """The client the document at ``url`` describes; OAuthError ``invalid_client`` otherwise.
        Blocking (a fetch): call it off the event loop."""
        try:
            check_document_url(url, allow_loopback=self.allow_loopback)
        except BadUrl as exc:
            raise OAuthError("invalid_client", str(exc)) from None
        now = self._monotonic()
        with self._lock:
            cached = self._cache.get(url)
            if cached is not None and cached[1] > now:
                return cached[0]
        self.fetches += 1
        try:
            fetched = self.fetcher.fetch(url)
        except DocumentRefused as exc:
            raise OAuthError("invalid_client", f"client metadata document refused: {exc}") from None
        record = parse_document(url, fetched.body)
        seconds = cache_seconds(fetched.cache_control)
        if seconds > 0:
            with self._lock:
                self._cache[url] = (record, now + seconds)
                self._cache.move_to_end(url)
                while len(self._cache) > CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        return record


def parse_document(url: str, body: bytes) -> ClientRecord:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise OAuthError("invalid_client", "the client metadata document is not JSON") from None
    if not isinstance(document, dict):
        raise OAuthError("invalid_client", "the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        # A document served at one URL claiming another identity: never trusted.
        raise OAuthError("invalid_client", "the client metadata document's client_id is not its own URL")
    uris, method, grants = metadata_fields(document, registration=False)
    host = urlsplit(url).hostname or url
    return ClientRecord(
        client_id=url,
        client_name=display_name(document.get("client_name"), host),
        redirect_uris=uris,
        auth_method=method,
        grant_types=grants,
        from_document=True,
    )


def cache_seconds(cache_control: str) -> int:
    lowered = cache_control.lower()
    if "no-store" in lowered or "no-cache" in lowered:
        return 0
    match = _MAX_AGE.search(cache_control)
    if match is None:
        return DEFAULT_CACHE_SECONDS
    return min(int(match.group(1)), MAX_CACHE_SECONDS)
