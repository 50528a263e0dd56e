"""One synthesized template per variant per test session (synth costs seconds, not tests).

Variants: ``default`` is cdk.json's configuration (dev, dax=true, arm64, ON_DEMAND);
``alt`` flips everything that has an alternative (prod, dax=false, x86_64, PROVISIONED sized
from K6 inputs, a CORS allow-list); ``oauth`` is OAuth 2.1 with the Cognito user pool next to API
keys; ``subscribed`` is the default with the notification streams on; ``xray`` and ``otlp_url``
export spans (to X-Ray, and to an OTLP/HTTP backend with a header from a secret); ``governed`` has
rate limits and quotas on the default, ``rate_limited`` rate limits alone in prod without DAX;
``shifted`` a custom traffic shift with provisioned endpoint environments, without a task worker;
``minimal`` is the minimal profile (one provisioned shard, no DAX, no fan-out consumer);
``cloudfront`` and ``api_gateway`` put an edge in front, ``cloudfront_domain`` and
``api_gateway_domain`` the same with OAuth on a custom domain.
All synthesize with cdk-nag attached, so a finding without an acknowledgement fails the fixture
and every test that uses it.
"""

from __future__ import annotations

import pytest

from tests.infra.synth import (
    ALT_CONTEXT,
    API_GATEWAY_CONTEXT,
    API_GATEWAY_DOMAIN_CONTEXT,
    CLOUDFRONT_CONTEXT,
    CLOUDFRONT_DOMAIN_CONTEXT,
    GOVERNED_CONTEXT,
    MINIMAL_CONTEXT,
    OAUTH_CONTEXT,
    OTLP_URL_CONTEXT,
    RATE_LIMITED_CONTEXT,
    SHIFTED_CONTEXT,
    SUBSCRIPTIONS_CONTEXT,
    XRAY_CONTEXT,
    Synthesized,
    synthesize,
)


@pytest.fixture(scope="session")
def default(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("default"), {})


@pytest.fixture(scope="session")
def alt(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("alt"), ALT_CONTEXT)


@pytest.fixture(scope="session")
def oauth(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("oauth"), OAUTH_CONTEXT)


@pytest.fixture(scope="session")
def subscribed(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("subscribed"), SUBSCRIPTIONS_CONTEXT)


@pytest.fixture(scope="session")
def xray(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("xray"), XRAY_CONTEXT)


@pytest.fixture(scope="session")
def otlp_url(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("otlp_url"), OTLP_URL_CONTEXT)


@pytest.fixture(scope="session")
def governed(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("governed"), GOVERNED_CONTEXT)


@pytest.fixture(scope="session")
def rate_limited(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("rate_limited"), RATE_LIMITED_CONTEXT)


@pytest.fixture(scope="session")
def cloudfront(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("cloudfront"), CLOUDFRONT_CONTEXT)


@pytest.fixture(scope="session")
def cloudfront_domain(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("cloudfront_domain"), CLOUDFRONT_DOMAIN_CONTEXT)


@pytest.fixture(scope="session")
def api_gateway(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("api_gateway"), API_GATEWAY_CONTEXT)


@pytest.fixture(scope="session")
def api_gateway_domain(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("api_gateway_domain"), API_GATEWAY_DOMAIN_CONTEXT)


EDGE_VARIANTS = ["cloudfront", "cloudfront_domain", "api_gateway", "api_gateway_domain"]


@pytest.fixture(scope="session", params=["default", "alt", "oauth", "governed", *EDGE_VARIANTS])
def variant(request: pytest.FixtureRequest) -> Synthesized:
    """The main variants, for properties that must hold in every configuration."""
    synthesized: Synthesized = request.getfixturevalue(request.param)
    return synthesized


@pytest.fixture(scope="session")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("minimal"), MINIMAL_CONTEXT)


@pytest.fixture(scope="session")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("shifted"), SHIFTED_CONTEXT)
