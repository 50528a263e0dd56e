"""The URL rules of the facade: redirect URIs, client ID metadata document URLs, issuer origins.

Redirect URIs (OAuth 2.1 section 2.3.1; RFC 8252 for native clients): absolute, no fragment,
``https``, or ``http`` on a loopback host (``127.0.0.1``, ``[::1]``, ``localhost``). A presented
redirect URI matches a registered one character for character (OAuth 2.1 section 4.1.1), compared
as strings, never as what a parser makes of them; a loopback one may differ in its port alone
(RFC 8252 section 7.3: a native client picks a free port per sign-in).

Every URL here is ASCII without spaces or control characters, raw or percent-encoded: it may end up
in a ``Location`` header, a page or a log line.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from urllib.parse import unquote, urlsplit

MAX_URI_CHARS = 2000
MAX_HOST_CHARS = 253  # RFC 1035 section 2.3.4, in its text form (without the root's trailing dot)
MAX_LABEL_CHARS = 63
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
MAX_PORT = 65535
# The authority of a registered redirect URI (no user information): a host, then ":" and digits.
_AUTHORITY = re.compile(r"(?P<host>\[[^\[\]]*\]|[^\[\]:]*)(?::(?P<port>[0-9]{1,5}))?")


class BadUrl(ValueError):
    """A URL breaks one of the rules; the message says which (the URL is the client's own)."""


def is_loopback_host(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _control(char: str) -> bool:
    return ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F  # C0, DEL, C1


def _check_characters(url: str, what: str) -> None:
    """RFC 3986: ASCII (anything else is percent-encoded), no space, no control character; and
    none percent-encoded either (``%0A``, ``%0d``, ``%00``, ``%C2%85``: what a decoder makes of them)."""
    if not url.isascii() or any(char == " " or _control(char) for char in url):
        raise BadUrl(f"{what} must be ASCII without spaces or control characters")
    if any(_control(char) for char in unquote(url)):
        raise BadUrl(f"{what} must not contain percent-encoded control characters")


def check_redirect_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        raise BadUrl("a redirect URI must be a non-empty string")
    if len(uri) > MAX_URI_CHARS:
        raise BadUrl(f"a redirect URI must be at most {MAX_URI_CHARS} characters")
    _check_characters(uri, "a redirect URI")
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise BadUrl(f"malformed redirect URI ({exc})") from None
    if parts.fragment or "#" in uri:
        raise BadUrl("a redirect URI must not contain a fragment")
    if parts.username is not None or parts.password is not None:
        raise BadUrl("a redirect URI must not contain user information")
    if not host:
        raise BadUrl("a redirect URI must be absolute (scheme and host)")
    if parts.scheme == "https":
        return uri
    if parts.scheme == "http" and is_loopback_host(host):
        return uri
    raise BadUrl("a redirect URI must use https, or http on a loopback host (127.0.0.1, [::1], localhost)")


def redirect_uri_matches(registered: str, presented: str) -> bool:
    """Whether ``presented`` is the ``registered`` redirect URI: the same characters, except the
    port of a loopback one (its digits, or none), RFC 8252 section 7.3. Never raises: a presented
    URI that is malformed, look-alike or carries control characters is simply not the one."""
    if registered == presented:
        return True
    mine = urlsplit(registered)  # registered URIs passed check_redirect_uri
    if mine.scheme != "http" or not is_loopback_host(mine.hostname or ""):
        return False
    ours = _without_port(registered)
    return ours is not None and ours == _without_port(presented)


def _without_port(uri: str) -> str | None:
    """``uri`` with its authority's port taken out, by its characters (``scheme://host`` then ``:``
    and 1 to 5 digits, at most 65535); None when its authority is anything else."""
    scheme, separator, rest = uri.partition("://")
    end = next((index for index, char in enumerate(rest) if char in "/?#"), len(rest))
    authority = _AUTHORITY.fullmatch(rest[:end])
    if not separator or authority is None or int(authority["port"] or 0) > MAX_PORT:
        return None
    return scheme + separator + authority["host"] + rest[end:]


def check_document_url(url: str, *, allow_loopback: bool) -> str:
    """A client ID metadata document URL (draft-ietf-oauth-client-id-metadata-document section 3):
    https, a path other than ``/``, no fragment, no user information, no dot segments. On a
    local facade (``allow_loopback``) http on a loopback host is accepted too, for development."""
    if len(url) > MAX_URI_CHARS:
        raise BadUrl(f"a client_id URL must be at most {MAX_URI_CHARS} characters")
    _check_characters(url, "a client_id URL")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018
    except ValueError as exc:
        raise BadUrl(f"malformed client_id URL ({exc})") from None
    local = allow_loopback and parts.scheme == "http" and is_loopback_host(host)
    if parts.scheme != "https" and not local:
        raise BadUrl("a client_id URL must use https")
    if not host:
        raise BadUrl("a client_id URL must name a host")
    _check_host_name(host)
    if parts.fragment or "#" in url:
        raise BadUrl("a client_id URL must not contain a fragment")
    if parts.username is not None or parts.password is not None:
        raise BadUrl("a client_id URL must not contain user information")
    if parts.path in ("", "/"):
        raise BadUrl("a client_id URL must have a path")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise BadUrl("a client_id URL must not contain dot segments")
    return url


def _check_host_name(host: str) -> None:
    """The host of a client_id URL is looked up: an IP address, or a DNS name of labels of 1 to 63
    characters, at most 253 in all (RFC 1035 section 2.3.4), that IDNA encodes (as the resolver
    will). Checked before any lookup: a name no resolver accepts is the client's error."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return
    name = host.removesuffix(".")  # the root label
    if len(name) > MAX_HOST_CHARS:
        raise BadUrl(f"a client_id URL's host must be at most {MAX_HOST_CHARS} characters")
    if any(not 1 <= len(label) <= MAX_LABEL_CHARS for label in name.split(".")):
        raise BadUrl(f"a client_id URL's host must be made of labels of 1 to {MAX_LABEL_CHARS} characters")
    try:
        name.encode("idna")
    except UnicodeError:
        raise BadUrl("a client_id URL's host is not a name IDNA can encode") from None


def is_document_client_id(client_id: str) -> bool:
    """A client_id that is a URL names a metadata document; registered ids never contain ``:``."""
    return client_id.startswith(("https://", "http://"))
