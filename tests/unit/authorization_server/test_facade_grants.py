"""The facade's grants on the table: one-time codes, PKCE, redirect URIs, registrations that
expire, refresh rotation and reuse detection, consent bound to the browser (SPEC: Authorization
for every client; D5/D6: TTL in epoch seconds, expired items are not found)."""

from __future__ import annotations

import jwt
import pytest

from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.service import Consent, PageError, Redirect
from tests.support.facade import Pkce
from tests.unit.authorization_server.conftest import REDIRECT, SITE, Facade, query_of


def test_a_code_redeems_once_and_its_replay_revokes_the_tokens_it_gave(facade: Facade) -> None:
    # Given a client signed in, its code redeemed for an access and a refresh token
    client, pkce = facade.public_client(), Pkce()
    code = facade.code(client, pkce)
    first = facade.redeem(client, code, pkce)
    assert first["token_type"] == "Bearer" and first["refresh_token"]
    # When the same code is presented again
    with pytest.raises(OAuthError) as replay:
        facade.redeem(client, code, pkce)
    # Then it is refused, and the refresh token of the first redemption is dead too (RFC 6749 4.1.2)
    assert replay.value.error == "invalid_grant"
    with pytest.raises(OAuthError) as revoked:
        facade.refresh(client, first["refresh_token"])
    assert revoked.value.error == "invalid_grant"


def test_a_wrong_verifier_is_refused_without_burning_the_code(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    code = facade.code(client, pkce)
    with pytest.raises(OAuthError) as wrong:
        facade.redeem(client, code, Pkce())
    assert wrong.value.error == "invalid_grant" and "code_verifier" in wrong.value.description
    with pytest.raises(OAuthError) as malformed:
        facade.redeem(client, code, pkce, code_verifier="short")
    assert malformed.value.error == "invalid_grant"
    # The holder of the right verifier still gets its tokens.
    assert facade.redeem(client, code, pkce)["access_token"]


def test_a_code_is_short_lived_and_bound_to_its_client_redirect_uri_and_resource(facade: Facade) -> None:
    client, other, pkce = facade.public_client(), facade.public_client(), Pkce()
    code = facade.code(client, pkce)
    for refused, more, error in [
        (other, {}, "invalid_grant"),  # another client
        (client, {"redirect_uri": "https://client.example/other"}, "invalid_grant"),
        (client, {"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
    ]:
        with pytest.raises(OAuthError) as caught:
            facade.redeem(refused, code, pkce, **more)
        assert caught.value.error == error
    facade.clock.advance(61)  # CODE_SECONDS is 60
    with pytest.raises(OAuthError) as expired:
        facade.redeem(client, code, pkce)
    assert expired.value.error == "invalid_grant"


def test_a_foreign_redirect_uri_is_shown_to_the_user_never_redirected_to(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    with pytest.raises(PageError) as caught:
        facade.server.begin(SITE, facade.query(client, pkce, redirect_uri="https://attacker.example/cb"), frozenset())
    assert caught.value.title == "Invalid redirect URI"
    with pytest.raises(PageError):  # a loopback client cannot be redirected to another host either
        loopback = facade.public_client(redirect_uris=["http://127.0.0.1:4000/cb"])
        facade.server.begin(SITE, facade.query(loopback, pkce, redirect_uri="http://10.0.0.1:4000/cb"), frozenset())


def test_a_loopback_redirect_uri_matches_on_any_port_as_rfc_8252_asks(facade: Facade) -> None:
    client, pkce = facade.public_client(redirect_uris=["http://127.0.0.1/callback"]), Pkce()
    outcome = facade.server.begin(
        SITE, facade.query(client, pkce, redirect_uri="http://127.0.0.1:51234/callback"), frozenset()
    )
    assert isinstance(outcome, Consent) and outcome.pending.redirect_uri == "http://127.0.0.1:51234/callback"


@pytest.mark.parametrize(
    "presented",
    [
        "http://127.0.0.1:4000/cb\n",
        "http://127.0.0.1:4000/cb\r\nSet-Cookie: x=y",
        "http://127.0.0.1:4000/c\tb",
        "\x00http://127.0.0.1:4000/cb",
    ],
    ids=["LF", "CRLF", "TAB", "leading NUL"],
)
def test_a_loopback_redirect_uri_with_control_characters_is_shown_to_the_user_never_redirected_to(
    facade: Facade, presented: str
) -> None:
    # Given a native client registered with a loopback redirect URI
    client, pkce = facade.public_client(redirect_uris=["http://127.0.0.1:4000/cb"]), Pkce()
    for params in ({}, {"response_type": "token"}):  # a consent page, or an error sent to the redirect URI
        # When the authorization request names it with control characters in it (%0A, %0D, %09, %00)
        query = facade.query(client, pkce, redirect_uri=presented, **params)
        # Then it is not the registered one: the user sees an error page, nothing goes to a Location header
        with pytest.raises(PageError) as caught:
            facade.server.begin(SITE, query, frozenset())
        assert caught.value.title == "Invalid redirect URI" and caught.value.status == 400


@pytest.mark.parametrize(
    "presented",
    [
        "http://[127.0.0.1:4000/cb",
        "http://127.0.0.1\uff1a4000/cb",
        "http://evil.example\uff20127.0.0.1:4000/cb",
        "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:4000/cb",
    ],
    ids=["unclosed IPv6 literal", "fullwidth colon", "fullwidth at", "fullwidth localhost"],
)
def test_a_malformed_redirect_uri_is_an_error_page_not_a_failure(facade: Facade, presented: str) -> None:
    for registered in ("http://127.0.0.1:4000/cb", REDIRECT):
        client = facade.public_client(redirect_uris=[registered])
        with pytest.raises(PageError) as caught:
            facade.server.begin(SITE, facade.query(client, Pkce(), redirect_uri=presented), frozenset())
        assert caught.value.title == "Invalid redirect URI" and caught.value.status == 400


def test_an_expired_registration_is_an_unknown_client_at_both_ends(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    code = facade.code(client, pkce)
    facade.clock.advance(30 * 24 * 3600 + 1)  # FacadeSettings.client_seconds
    with pytest.raises(PageError) as page:
        facade.server.begin(SITE, facade.query(client, pkce), frozenset())
    assert page.value.title == "Unknown client"
    with pytest.raises(OAuthError) as token:
        facade.redeem(client, code, pkce)
    assert token.value.error == "invalid_client" and token.value.status == 401


def test_a_used_registration_is_extended_and_an_unused_one_lapses(facade: Facade) -> None:
    used, unused, pkce = facade.public_client(), facade.public_client(), Pkce()
    facade.clock.advance(20 * 24 * 3600)  # past half the lifetime
    facade.redeem(used, facade.code(used, pkce), pkce)
    facade.clock.advance(15 * 24 * 3600)  # 35 days after registration
    assert facade.store.client(used) is not None
    assert facade.store.client(unused) is None


def test_refresh_tokens_rotate_and_a_reused_one_ends_the_whole_sign_in(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    first = facade.redeem(client, facade.code(client, pkce), pkce)
    second = facade.refresh(client, first["refresh_token"])
    assert second["refresh_token"] != first["refresh_token"]
    # The rotated-out token comes back (stolen, or replayed): refused, and its successor dies too.
    with pytest.raises(OAuthError) as reused:
        facade.refresh(client, first["refresh_token"])
    assert reused.value.error == "invalid_grant"
    with pytest.raises(OAuthError) as revoked:
        facade.refresh(client, second["refresh_token"])
    assert revoked.value.error == "invalid_grant"


def test_a_refresh_may_narrow_but_never_widen_the_scope(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    first = facade.redeem(client, facade.code(client, pkce, scope="mcp:tools notes:admin"), pkce)
    assert first["scope"] == "mcp:tools notes:admin"
    narrowed = facade.refresh(client, first["refresh_token"], scope="mcp:tools")
    assert narrowed["scope"] == "mcp:tools"
    with pytest.raises(OAuthError) as widened:
        facade.refresh(client, narrowed["refresh_token"], scope="mcp:tools other:scope")
    assert widened.value.error == "invalid_scope"


def test_a_refresh_grant_ends_at_its_absolute_lifetime(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    tokens = facade.redeem(client, facade.code(client, pkce), pkce)
    facade.clock.advance(7 * 24 * 3600 + 1)  # FacadeSettings.refresh_token_seconds
    with pytest.raises(OAuthError) as expired:
        facade.refresh(client, tokens["refresh_token"])
    assert expired.value.error == "invalid_grant"


def test_a_client_without_the_refresh_grant_gets_no_refresh_token(facade: Facade) -> None:
    client, pkce = facade.public_client(grant_types=["authorization_code"]), Pkce()
    tokens = facade.redeem(client, facade.code(client, pkce), pkce)
    assert "refresh_token" not in tokens


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"code_challenge": ""}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": "too-short"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
    ],
    ids=["no PKCE", "plain PKCE", "malformed challenge", "implicit grant", "foreign resource"],
)
def test_a_bad_authorization_request_goes_back_to_the_client_with_state_and_iss(
    facade: Facade, params: dict[str, str], error: str
) -> None:
    client = facade.public_client()
    outcome = facade.server.begin(SITE, facade.query(client, Pkce(), **params), frozenset())
    assert isinstance(outcome, Redirect) and outcome.url.startswith(REDIRECT)
    answer = query_of(outcome.url)
    assert answer["error"] == error and answer["state"] == "st" and answer["iss"] == SITE.issuer


def test_consent_and_callback_belong_to_the_browser_that_saw_the_consent_page(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    consent = facade.consent(client, pkce)
    request_id = consent.pending.request_id
    # A form posted from elsewhere (no cookie, or another browser's) is refused.
    for secret in ("", "another-browsers-secret"):
        with pytest.raises(PageError) as forged:
            facade.server.decide(SITE, request_id, secret, True)
        assert forged.value.status == 403
    # The callback, too, continues only in that browser, and only once approved.
    with pytest.raises(PageError) as unapproved:
        facade.server.complete(SITE, {"state": request_id, "code": "up"}, consent.browser_secret)
    assert unapproved.value.status == 403
    facade.server.decide(SITE, request_id, consent.browser_secret, True)
    with pytest.raises(PageError):
        facade.server.complete(SITE, {"state": request_id, "code": "up"}, "another-browsers-secret")
    back = facade.server.complete(SITE, {"state": request_id, "code": "up"}, consent.browser_secret)
    assert "code" in query_of(back.url)
    with pytest.raises(PageError):  # a second callback: the request is over
        facade.server.complete(SITE, {"state": request_id, "code": "up"}, consent.browser_secret)


def test_denied_consent_and_a_refused_upstream_sign_in_are_access_denied(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    consent = facade.consent(client, pkce)
    denied = facade.server.decide(SITE, consent.pending.request_id, consent.browser_secret, False)
    assert query_of(denied.url)["error"] == "access_denied"
    assert facade.upstream.redemptions == []  # nothing was sent upstream
    consent = facade.consent(client, pkce)
    facade.server.decide(SITE, consent.pending.request_id, consent.browser_secret, True)
    back = facade.server.complete(
        SITE, {"state": consent.pending.request_id, "error": "access_denied"}, consent.browser_secret
    )
    assert query_of(back.url)["error"] == "access_denied" and query_of(back.url)["iss"] == SITE.issuer


def test_token_requests_with_bad_client_authentication_are_invalid_client(facade: Facade) -> None:
    registered = facade.server.register(
        {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"}
    )
    public = facade.public_client()
    pkce = Pkce()
    code = facade.code(registered["client_id"], pkce)
    cases = [
        {"client_id": registered["client_id"]},  # no secret
        {"client_id": registered["client_id"], "client_secret": "wrong"},
        {"client_id": public, "client_secret": "a public client has none"},
        {"client_id": "mcpc_" + "x" * 32},  # never registered
        {"client_id": "not-a-client-id"},
        {},
    ]
    for auth in cases:
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": pkce.verifier, **auth}
        with pytest.raises(OAuthError) as caught:
            facade.server.token(SITE, form, frozenset(), None)
        assert caught.value.error == "invalid_client" and caught.value.status == 401, auth
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": pkce.verifier, "redirect_uri": REDIRECT}
    tokens = facade.server.token(SITE, form, frozenset(), (registered["client_id"], registered["client_secret"]))
    assert tokens["access_token"]


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({}, "invalid_request"),
        ({"grant_type": "password"}, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
        ({"grant_type": "authorization_code"}, "invalid_request"),
        ({"grant_type": "authorization_code", "code": "x"}, "invalid_request"),
        ({"grant_type": "authorization_code", "code": "x", "code_verifier": "y" * 43}, "invalid_grant"),
        ({"grant_type": "refresh_token"}, "invalid_request"),
        ({"grant_type": "refresh_token", "refresh_token": "made-up"}, "invalid_grant"),
    ],
)
def test_malformed_token_requests_are_oauth_errors(facade: Facade, form: dict[str, str], error: str) -> None:
    client = facade.public_client()
    with pytest.raises(OAuthError) as caught:
        facade.server.token(SITE, {"client_id": client, **form}, frozenset(), None)
    assert caught.value.error == error and caught.value.status == 400


def test_repeated_parameters_are_refused(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    with pytest.raises(PageError):
        facade.server.begin(SITE, facade.query(client, pkce), frozenset({"redirect_uri"}))
    outcome = facade.server.begin(SITE, facade.query(client, pkce), frozenset({"scope"}))
    assert isinstance(outcome, Redirect) and query_of(outcome.url)["error"] == "invalid_request"
    with pytest.raises(OAuthError):
        facade.server.token(SITE, {"grant_type": "authorization_code"}, frozenset({"code"}), None)


def test_unknown_scopes_are_ignored_and_none_known_means_the_required_ones(facade: Facade) -> None:
    client, pkce = facade.public_client(), Pkce()
    assert facade.consent(client, pkce, scope="openid offline_access notes:admin").pending.scope == ("notes:admin",)
    assert facade.consent(client, pkce, scope="openid").pending.scope == ("mcp:tools",)
    assert facade.consent(client, pkce, scope="").pending.scope == ("mcp:tools",)


@pytest.mark.parametrize("machines", [True])
def test_with_the_extension_a_machine_client_gets_a_token_for_this_resource_from_its_upstream_credentials(
    facade: Facade,
) -> None:
    # Given a client of the upstream issuer (never registered here) and its secret
    form = {"grant_type": "client_credentials", "client_id": "robot", "client_secret": "machine-secret"}
    # When it asks the facade's token endpoint
    tokens = facade.server.token(SITE, form, frozenset(), None)
    # Then the upstream vouched for it: a token of this server, the scopes this resource knows, no refresh
    assert tokens["scope"] == "mcp:tools" and "refresh_token" not in tokens
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert claims["sub"] == "machine-robot" and claims["aud"] == SITE.resource and claims["iss"] == SITE.issuer
    assert "client_credentials" in facade.server.metadata(SITE)["grant_types_supported"]
    for bad, error in [
        ({"client_secret": "wrong"}, "invalid_client"),
        ({"client_secret": ""}, "invalid_client"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
    ]:
        with pytest.raises(OAuthError) as refused:
            facade.server.token(SITE, {**form, **bad}, frozenset(), None)
        assert refused.value.error == error


def test_without_the_extension_client_credentials_is_not_a_grant_here(facade: Facade) -> None:
    form = {"grant_type": "client_credentials", "client_id": "robot", "client_secret": "machine-secret"}
    with pytest.raises(OAuthError) as refused:
        facade.server.token(SITE, form, frozenset(), None)
    assert refused.value.error == "unsupported_grant_type"
    assert "client_credentials" not in facade.server.metadata(SITE)["grant_types_supported"]
