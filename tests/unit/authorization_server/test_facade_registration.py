"""RFC 7591 registration and the redirect URI rules: what a client may register, what is
refused with which error (invalid_redirect_uri, invalid_client_metadata)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.authorization_server.clients import is_registered_client_id, register, registration_response
from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.urls import redirect_uri_matches

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


@pytest.mark.parametrize(
    "presented",
    [
        "http://127.0.0.1:3000/callback\n",  # what the query's %0A decodes to
        "http://127.0.0.1:3000/call\rback",
        "http://127.0.0.1:3000/call\tback",
        "http://127.0.0.1:3\n000/callback",
        "\x00http://127.0.0.1:3000/callback",  # a leading %00
        " http://127.0.0.1:3000/callback",
        "HTTP://127.0.0.1:3000/callback",
        "http://127.0.0.1:3000/callback?",
        "http://127.0.0.1:3000/callback#",
        "http://127.0.0.1:/callback",
        "http://127.0.0.1:99999/callback",
        "http://127.0.0.1:3000/callback%0A",
    ],
)
def test_a_loopback_redirect_uri_differs_from_the_registered_one_in_its_port_only(presented: str) -> None:
    # Given a native client's loopback redirect URI (RFC 8252 section 7.3: any port)
    registered = "http://127.0.0.1:3000/callback"
    # When the authorization request names one that differs in anything but the port's digits
    # Then it does not match: the comparison is of the characters, not of what a parser makes of them
    assert not redirect_uri_matches(registered, presented)
    assert redirect_uri_matches(registered, "http://127.0.0.1:51234/callback")
    assert redirect_uri_matches("http://[::1]/callback", "http://[::1]:51234/callback")
    assert redirect_uri_matches("http://localhost:8080/cb?x=1", "http://localhost/cb?x=1")


@pytest.mark.parametrize(
    "presented",
    [
        "http://[127.0.0.1:3000/callback",  # an unclosed IPv6 literal
        "http://\uff11\uff12\uff17.0.0.1:3000/callback",  # fullwidth digits
        "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:3000/callback",  # fullwidth localhost
        "http://127\uff0e0\uff0e0\uff0e1:3000/callback",  # fullwidth full stops
        "http://l\u043ecalhost:3000/callback",  # a Cyrillic o
        "http://127.0.0.1\uff1a3000/callback",  # a fullwidth colon
        "http://127.0.0.1:3000\uff0fcallback",  # a fullwidth solidus
        "http://evil.example\uff20127.0.0.1:3000/callback",  # a fullwidth commercial at
        "http://127.0.0.1:3000\u2100/callback",  # account of: NFKC makes it a/c
        "http://ex\u00e4mple.com/callback",
        "",
    ],
)
def test_a_malformed_redirect_uri_never_matches_and_never_raises(presented: str) -> None:
    for registered in ("http://127.0.0.1:3000/callback", "http://localhost/callback", "https://c.example/cb"):
        assert not redirect_uri_matches(registered, presented)
