"""The request-state key (2026 multi-round requests): one generated secret, encrypted with the
platform key, read by the endpoint alone, named to it by ARN only."""

from __future__ import annotations

import json

import pytest

from mcp_platform.config import EnvVars
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def secret_id(s: Synthesized) -> str:
    (logical_id,) = s.resources("AWS::SecretsManager::Secret")
    return logical_id


def test_the_key_is_generated_by_cloudformation_and_encrypted_with_the_platform_key(variant: Synthesized) -> None:
    props = variant.one("AWS::SecretsManager::Secret")["Properties"]
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
            if any(a.startswith("secretsmanager:") for a in actions):
                assert set(actions) == {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
                assert statement["Resource"] == {"Ref": secret}
                readers.append(name)
    assert len(readers) == 1 and "Endpoint" in readers[0]
    functions = variant.resources("AWS::Lambda::Function").values()
    endpoint = next(f for f in functions if f["Properties"].get("Handler") == "run.sh")
    assert endpoint["Properties"]["Environment"]["Variables"][EnvVars.REQUEST_STATE_SECRET] == {"Ref": secret}
