"""RFC 7591 registration and the redirect URI rules: what a client may register, what is
refused with which error (invalid_redirect_uri, invalid_client_metadata)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.application.auth.facade.clients import is_registered_client_id, register, registration_response
from mcp_platform.application.auth.facade.errors import OAuthError
from mcp_platform.application.auth.facade.urls import redirect_uri_matches

NOW = 1_800_000_000


def registered(**request: Any) -> dict[str, Any]:
    record, secret = register({"redirect_uris": ["https://client.example/cb"], **request}, NOW, 3600)
    return registration_response(record, secret)


def test_a_public_client_gets_an_id_and_no_secret() -> None:
    answer = registered(token_endpoint_auth_method="none", client_name="Inspector")
    assert is_registered_client_id(answer["client_id"])
    assert "client_secret" not in answer
    assert answer["token_endpoint_auth_method"] == "none" and answer["client_name"] == "Inspector"
    assert answer["grant_types"] == ["authorization_code"] and answer["response_types"] == ["code"]


def test_a_confidential_client_gets_a_secret_once_and_only_its_hash_is_kept() -> None:
    record, secret = register({"redirect_uris": ["https://c.example/cb"]}, NOW, 3600)  # default: basic
    assert record.auth_method == "client_secret_basic" and secret
    assert secret not in repr(record) and record.secret_matches(secret) and not record.secret_matches(secret + "x")
    assert registration_response(record, secret)["client_secret_expires_at"] == NOW + 3600


@pytest.mark.parametrize(
    ("request_body", "error"),
    [
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"redirect_uris": "https://c.example/cb"}, "invalid_redirect_uri"),
        ({"redirect_uris": ["http://c.example/cb"]}, "invalid_redirect_uri"),  # http off loopback
        ({"redirect_uris": ["https://c.example/cb#f"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["/relative"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://u:p@c.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://c.example/cb\r\nx"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://c.example/\u20ac"]}, "invalid_redirect_uri"),  # not percent-encoded
        ({"redirect_uris": ["http://127.0.0.1:3000/callback%0A"]}, "invalid_redirect_uri"),  # encoded controls
        ({"redirect_uris": ["http://127.0.0.1:3000/cb%0d%0aSet-Cookie:%20x=y"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["http://127.0.0.1:3000/c%09b"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://c.example/cb?x=%00"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://c.example/cb%7F"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://c.example/cb%C2%85"]}, "invalid_redirect_uri"),  # NEL, a C1 control
        ({"redirect_uris": [f"https://c.example/{i}" for i in range(11)]}, "invalid_redirect_uri"),
        ({"redirect_uris": [42]}, "invalid_redirect_uri"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"grant_types": ["authorization_code", "implicit"]}, "invalid_client_metadata"),
        ({"response_types": ["token"]}, "invalid_client_metadata"),
    ],
)
def test_bad_registrations_are_refused_with_the_rfc_7591_error(request_body: dict[str, Any], error: str) -> None:
    with pytest.raises(OAuthError) as refused:
        register({"redirect_uris": ["https://c.example/cb"], **request_body}, NOW, 3600)
    assert refused.value.error == error and refused.value.status == 400


def test_a_registration_that_is_not_an_object_is_refused() -> None:
    for body in ([], "x", None, 3):
        with pytest.raises(OAuthError, match="JSON object"):
            register(body, NOW, 3600)


def test_loopback_redirect_uris_are_accepted_on_http_and_names_are_bounded_and_printable() -> None:
    answer = registered(
        redirect_uris=["http://127.0.0.1:3000/callback", "http://localhost/cb", "http://[::1]:9/cb"],
        client_name="Evil\u202e\x00Name" + "x" * 500,
    )
    assert len(answer["redirect_uris"]) == 3
    assert answer["client_name"].startswith("EvilName") and len(answer["client_name"]) == 100


def test_redirect_uris_match_exactly_except_the_port_of_a_loopback_one() -> None:
    assert redirect_uri_matches("https://c.example/cb", "https://c.example/cb")
    assert not redirect_uri_matches("https://c.example/cb", "https://c.example/cb/")
    assert not redirect_uri_matches("https://c.example/cb", "https://c.example:8443/cb")
    assert not redirect_uri_matches("https://c.example/cb", "https://evil.example/cb")
    assert redirect_uri_matches("http://127.0.0.1:3000/cb", "http://127.0.0.1:49152/cb")
    assert not redirect_uri_matches("http://127.0.0.1:3000/cb", "http://127.0.0.1:49152/other")
    assert not redirect_uri_matches("http://127.0.0.1:3000/cb", "http://127.0.0.2:3000/cb")
    assert not redirect_uri_matches("http://127.0.0.1:3000/cb", "http://127.0.0.1:3000/cb#x")
    assert not redirect_uri_matches("http://127.0.0.1:3000/cb", "http://127.0.0.1:notaport/cb")
