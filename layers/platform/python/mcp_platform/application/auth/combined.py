"""``MCP_AUTH=api_key,oauth``: both credentials at once, for teams moving from keys to OAuth.

A bearer credential shaped like a JWT (three dot-separated parts; a minted key, ``mcpk_...``,
has no dot) is validated as an OAuth token, any other as an API key. A request without a
credential gets the OAuth challenge, the one that lets a client discover the authorization
server. The two never share a principal (see ``OAUTH_PRINCIPAL_PREFIX``).
"""

from __future__ import annotations

from mcp_platform.application.auth.base import Authenticator, Principal


class KeyOrToken:
    def __init__(self, api_keys: Authenticator, oauth: Authenticator) -> None:
        self.api_keys = api_keys
        self.oauth = oauth

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        credential = credential.strip()
        if scheme.lower() == "bearer" and credential and credential.count(".") != 2:
            return await self.api_keys.authenticate(headers, client_host)
        return await self.oauth.authenticate(headers, client_host)
