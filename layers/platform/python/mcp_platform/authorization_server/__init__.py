"""An OAuth 2.1 authorization server on the endpoint's own origin, in front of an OpenID provider.

MCP clients that meet an authorization server they have never seen register themselves, by
dynamic client registration (RFC 7591) or a client ID metadata document; Amazon Cognito (and
other providers) offer neither, and Cognito's access tokens carry no ``aud``. The facade gives
every client both, signs the user in at the upstream provider as one confidential client (after
a consent page naming the client), and issues its own tokens bound to this resource (RFC 8707).

- :mod:`.service`: the steps (metadata, registration, authorize + consent, callback, token).
- :mod:`.clients`, :mod:`.documents`: registered clients and metadata documents (bounded fetch).
- :mod:`.ports`: what it needs of storage and of the upstream issuer; its state lives in the
  session table with TTL (``adapters.dynamodb.facade_store``: any instance serves any step), the
  upstream's OpenID Connect client is ``adapters.upstream_idp``, the document fetch
  ``adapters.document_fetcher``.
- :mod:`.signing`, :mod:`.tokens`: ES256 keys from a Secrets Manager secret; the endpoint's trust.
- The HTTP side is ``transport.facade``.

Only this module is loaded at start (cold start): the paths the endpoint routes here and
:class:`LazyFacade`, which builds the rest on the first request to one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

METADATA_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH = "/authorize"
CALLBACK_PATH = "/callback"
TOKEN_PATH = "/token"  # noqa: S105 - a path
REGISTER_PATH = "/register"
JWKS_PATH = "/jwks"
PATHS = frozenset({METADATA_PATH, AUTHORIZE_PATH, CALLBACK_PATH, TOKEN_PATH, REGISTER_PATH, JWKS_PATH})

Asgi = Callable[[dict[str, Any], Any, Any], Any]


class LazyFacade:
    """The facade's ASGI app, built by ``factory`` on its first request."""

    paths = PATHS

    def __init__(self, factory: Callable[[], Asgi]) -> None:
        self._factory = factory
        self._app: Asgi | None = None

    def app(self) -> Asgi:
        """The facade's app, built now if no request has built it yet (one build per process)."""
        if self._app is None:
            self._app = self._factory()
        return self._app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.app()(scope, receive, send)  # no await before the build: one build per process
