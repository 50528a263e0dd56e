"""Cold start: the facade costs a stack nothing until a request reaches one of its paths, and a
stack without it never imports it (its modules, PyJWT and cryptography load on first use)."""

from __future__ import annotations

from tests.support.cold_start import loaded_at_start

FACADE_ON_FIRST_USE = (
    "jwt",
    "cryptography",
    "mcp_platform.authorization_server.service",
    "mcp_platform.transport.facade.server",
    "mcp_platform.adapters.dynamodb.facade_store",
    "mcp_platform.authorization_server.documents",
    "mcp_platform.adapters.upstream_idp",
    "mcp_platform.transport.facade.pages",
    "mcp_platform.authorization_server.clients",
)


def loaded_after_start(**env: str) -> dict[str, bool]:
    return loaded_at_start(("mcp_platform.authorization_server", *FACADE_ON_FIRST_USE), **env)


def test_a_facade_stack_starts_without_loading_the_facade_or_the_jwt_library() -> None:
    loaded = loaded_after_start(
        MCP_AUTH="oauth",
        MCP_OAUTH_ISSUER="https://login.example.com/tenant",
        MCP_OAUTH_FACADE="true",
        MCP_OAUTH_FACADE_KEYS_SECRET="keys",
        MCP_OAUTH_UPSTREAM_CLIENT_SECRET="upstream",
    )
    assert loaded["mcp_platform.authorization_server"]  # the routed paths and the lazy app only
    assert not any(loaded[module] for module in FACADE_ON_FIRST_USE), loaded


def test_a_stack_without_the_facade_never_imports_it() -> None:
    for env in ({"MCP_AUTH": "api_key"}, {"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": "https://login.example.com/t"}):
        loaded = loaded_after_start(**env)
        assert not any(loaded.values()), (env, loaded)
