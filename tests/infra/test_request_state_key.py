"""The request-state key (2026 multi-round requests): one generated secret, encrypted with the
platform key, read by the endpoint alone, named to it by ARN only."""

from __future__ import annotations

import json

import pytest

from mcp_platform.config import EnvVars
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def secret_id(s: Synthesized) -> str:
    """The request-state secret (the OAuth facade, when on, has secrets of its own)."""
    (logical_id,) = [key for key in s.resources("AWS::SecretsManager::Secret") if key.startswith("RequestState")]
    return logical_id


def test_the_key_is_generated_by_cloudformation_and_encrypted_with_the_platform_key(variant: Synthesized) -> None:
    props = variant.json["Resources"][secret_id(variant)]["Properties"]
    generate = props["GenerateSecretString"]
    assert json.loads(generate["SecretStringTemplate"]) == {"current": "k1"} and generate["GenerateStringKey"] == "k1"
    assert generate["PasswordLength"] >= 32 and "SecretString" not in props  # no value in the template
    (key_id,) = variant.resources("AWS::KMS::Key")
    assert props["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}


def test_only_the_endpoint_reads_it_and_it_gets_the_arn_not_the_value(variant: Synthesized) -> None:
    secret = secret_id(variant)
    readers = []
    for name, policy in variant.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            if any(a.startswith("secretsmanager:") for a in actions) and {"Ref": secret} in resources:
                assert set(actions) == {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
                readers.append(name)
    assert len(readers) == 1 and "Endpoint" in readers[0]
    functions = variant.resources("AWS::Lambda::Function").values()
    endpoint = next(f for f in functions if f["Properties"].get("Handler") == "run.sh")
    assert endpoint["Properties"]["Environment"]["Variables"][EnvVars.REQUEST_STATE_SECRET] == {"Ref": secret}
