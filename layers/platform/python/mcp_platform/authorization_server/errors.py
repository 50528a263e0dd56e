"""OAuth error responses of the facade (RFC 6749 sections 4.1.2.1 and 5.2, RFC 7591 section 3.2.2).

Every refusal of a client's input is one of these, answered 400 (401 for ``invalid_client``)
with ``{"error", "error_description"}``, or redirected to the client with the same two
parameters when the redirect URI is known to be the client's. Never a 5xx: only a dependency
failure (the table, the upstream issuer) is that.
"""

from __future__ import annotations


class OAuthError(Exception):
    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


class InvalidClient(OAuthError):
    """Client authentication failed (unknown client, wrong secret, expired registration): 401."""

    def __init__(self, description: str) -> None:
        super().__init__("invalid_client", description, 401)


class UpstreamUnavailable(Exception):
    """The upstream issuer could not be reached or answered nonsense: not the client's fault."""


class FacadeUnavailable(Exception):
    """A dependency of the facade (its keys, the upstream client's secret) could not be read."""
