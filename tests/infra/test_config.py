"""Context configuration: defaults, K6 sizing, and clear failures on bad values (no synth)."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.config import DEFAULTS, ContextError, PlatformConfig, shards_for

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def config_from(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


def test_defaults_are_dev_dax_arm64_on_demand() -> None:
    # Given no context at all / When the configuration is read
    config = config_from()
    # Then every key takes its documented default
    assert (config.stage, config.dax, config.architecture, config.stream_mode) == ("dev", True, "arm64", "ON_DEMAND")
    assert config.shard_count is None
    assert config.retention_hours == 168  # K7
    assert (config.dax_item_ttl_seconds, config.dax_query_ttl_seconds) == (300, 60)  # X2
    assert config.removal_policy == "destroy" and config.is_dev
    assert config.allowed_origins == ()
    assert set(DEFAULTS) == set(PlatformConfig.__dataclass_fields__)


def test_k6_shard_formula_rounds_up_with_headroom() -> None:
    # Given peak rate x record size / When shards are planned / Then ceil(x*y/1e6/0.85), at least 1
    assert shards_for(850, 1000) == 1  # exactly 0.85 MB/s fits one shard
    assert shards_for(851, 1000) == 2
    assert shards_for(5000, 2048) == 13  # 10.24 MB/s / 0.85 = 12.05
    assert shards_for(1, 1) == 1
    assert shards_for(2000, 10) == 3  # tiny records: the 1000 records/s per shard limit decides


def test_k6_provisioned_uses_sizing_inputs_or_explicit_count() -> None:
    # Given PROVISIONED mode / When no shard_count is set / Then the K6 formula decides
    assert config_from(stream_mode="PROVISIONED", peak_records_per_s=2000, avg_record_bytes=1000).shard_count == 3
    # And an explicit shard_count wins, also in the string form -c delivers
    assert config_from(stream_mode="provisioned", shard_count="7").shard_count == 7


def test_string_forms_from_the_command_line_are_accepted() -> None:
    # Given -c values (always strings) / When read / Then they are typed like cdk.json values
    config = config_from(
        dax="false", retention_hours="8760", allowed_origins="https://a.example, http://localhost:3000"
    )
    assert config.dax is False
    assert config.retention_hours == 8760  # K7 upper bound
    assert config.allowed_origins == ("https://a.example", "http://localhost:3000")


def test_architecture_x86_64_by_context() -> None:
    assert config_from(architecture="x86_64").architecture == "x86_64"


def test_removal_policy_derived_per_stage_and_overridable() -> None:
    # Given a non-dev stage / Then data is retained (D11) unless explicitly overridden
    assert config_from(stage="prod").removal_policy == "retain"
    assert not config_from(stage="prod").is_dev
    assert config_from(stage="prod", removal_policy="destroy").removal_policy == "destroy"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("stage", "Prod_1"),
        ("dax", "maybe"),
        ("stream_mode", "SOMETIMES"),
        ("shard_count", 0),
        ("retention_hours", 8761),  # K7: at most 8760
        ("retention_hours", 12),
        ("log_retention_days", 8),
        ("auth_mode", "none"),  # default deny: no anonymous access in the cloud
        ("allowed_origins", "*"),  # S8: an allow-list, never a wildcard
        ("allowed_origins", ["https://a.example/path"]),
        ("architecture", "arm"),
        ("removal_policy", "snapshot"),
        ("dax_node_type", "t3.small"),
        ("dax_item_ttl_seconds", "five"),
        ("session_ttl_seconds", True),
        ("compatible_with", "0.0"),
        ("peak_records_per_s", -1),
    ],
)
def test_bad_context_value_fails_with_a_message_naming_the_key(key: str, value: Any) -> None:
    # Given a bad value (shard_count only matters in PROVISIONED mode) / When read
    context = {key: value, "stream_mode": "PROVISIONED"} if key == "shard_count" else {key: value}
    with pytest.raises(ContextError) as error:
        config_from(**context)
    # Then the message names the key and what is allowed
    assert f"'{key}'" in str(error.value)
    assert "must be" in str(error.value)


def test_auth_modes_the_function_cannot_serve_are_refused_at_synth() -> None:
    # Given auth_mode none (loopback only), an unknown mode, or oauth inside the DAX VPC (no route
    # to the issuer's keys) / Then synth fails clearly (OAuth's own rules: tests/infra/test_oauth.py)
    for mode in ("none", "api_key,none", "jwt", "oauth"):
        with pytest.raises(ContextError, match="auth_mode"):
            config_from(auth_mode=mode, oauth_issuer="https://login.example.com" if mode == "oauth" else "")
