"""The endpoint as an OAuth protected resource: its identifier, RFC 9728 metadata, challenges.

The resource identifier (RFC 8707; the ``aud`` tokens must carry) is the endpoint's canonical
URL. ``MCP_OAUTH_AUDIENCE`` fixes it. Without it, it is derived from the request's Host, but
only for names this server is known to be reached by: inside Lambda a Function URL of the
function's region (``<url-id>.lambda-url.<region>.on.aws``; AWS routes a Function URL by that
Host, so a request that reaches the function names its own URL), elsewhere the loopback names.
The deployed function cannot be told its own Function URL at synth (the URL is created after
the function, so naming it in the function's environment would be a circular reference), hence
the derivation. Any other Host (a custom domain, CloudFront) needs ``oauth_audience`` set: a
Host header is the client's word, and a token's audience must not follow it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp_platform.application.auth.base import bearer_challenge
from mcp_platform.config import OAuthSettings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
LOOPBACK_HOST = re.compile(r"(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?")


def origin(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL: the issuer of the facade on a resource's origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def function_url_host(region: str) -> re.Pattern[str]:
    return re.compile(rf"[a-z0-9]{{20,64}}\.lambda-url\.{re.escape(region)}\.on\.aws")


@dataclass(frozen=True)
class ProtectedResource:
    issuer: str
    path: str = "/mcp"
    audience: str = ""
    required_scopes: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] = ()
    host_pattern: re.Pattern[str] = LOOPBACK_HOST
    scheme: str = "http"
    """Of derived identifiers: https behind a Function URL, http on loopback."""
    facade: bool = False
    """The authorization server is the facade on the resource's own origin (authorization_server/)."""

    @classmethod
    def from_settings(
        cls,
        oauth: OAuthSettings,
        region: str,
        tool_scopes: Iterable[str] = (),
        path: str = "/mcp",
        *,
        in_lambda: bool = False,
    ) -> ProtectedResource:
        """``in_lambda``: served behind a Function URL (https, its host), else on loopback."""
        return cls(
            issuer=oauth.issuer,
            path=path,
            audience=oauth.audience,
            required_scopes=oauth.scopes,
            scopes_supported=tuple(sorted({*oauth.scopes, *tool_scopes})),
            host_pattern=function_url_host(region) if in_lambda else LOOPBACK_HOST,
            scheme="https" if in_lambda else "http",
            facade=oauth.facade is not None,
        )

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        """RFC 9728 section 3.1: the well-known segment before the resource's path; the bare
        one too, for clients that look only there."""
        return (WELL_KNOWN + self.path, WELL_KNOWN)

    def resource_for(self, headers: dict[str, str]) -> str | None:
        """The identifier of the resource this request addressed, None for an unknown Host."""
        if self.audience:
            return self.audience
        host = headers.get("host", "").lower()
        if not self.host_pattern.fullmatch(host):
            return None
        return f"{self.scheme}://{host}{self.path}"

    def metadata_url(self, resource: str) -> str:
        parts = urlsplit(resource)
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"

    def authorization_server(self, resource: str) -> str:
        """The facade (this origin: ``scheme://host``) when it is on, else the issuer."""
        return origin(resource) if self.facade else self.issuer

    def document(self, resource: str) -> dict[str, Any]:
        return {
            "resource": resource,
            "authorization_servers": [self.authorization_server(resource)],
            "scopes_supported": list(self.scopes_supported),
            "bearer_methods_supported": ["header"],  # never a query parameter (tokens leak in logs)
        }

    def challenge(
        self, headers: dict[str, str], error: str | None, description: str, scopes: tuple[str, ...] = ()
    ) -> str:
        """``Bearer resource_metadata="...", scope="..."``: where a client finds the authorization
        server, and which scopes to ask for (the required ones unless a call needs more)."""
        resource = self.resource_for(headers)
        metadata = self.metadata_url(resource) if resource else ""
        scope = " ".join(dict.fromkeys((*self.required_scopes, *scopes)))
        return bearer_challenge(error, description, resource_metadata=metadata, scope=scope)
