"""Security gates: IAM scope, encryption everywhere, cdk-nag and cfn-lint clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Validations
from aws_cdk import aws_sqs as sqs

from stacks.app_builder import build_app
from tests.infra.synth import NO_BUNDLING, Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

ROOT = Path(__file__).resolve().parents[2]
# Actions AWS offers no resource-level permission for; only these may use Resource "*".
RESOURCE_STAR_ALLOWED = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "dynamodb:ListStreams"}


def statements(s: Synthesized) -> list[dict[str, Any]]:
    found = []
    for resource in s.json["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Policy":
            found += props["PolicyDocument"]["Statement"]
        if resource["Type"] == "AWS::IAM::Role":
            found += [st for p in props.get("Policies", []) for st in p["PolicyDocument"]["Statement"]]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_iam_action_wildcard(variant: Synthesized) -> None:
    # Then no statement grants "*" or a whole service ("svc:*")
    for statement in statements(variant):
        for action in as_list(statement["Action"]):
            assert action != "*" and not action.endswith(":*"), statement


def test_resources_scoped_to_platform_arns(variant: Synthesized) -> None:
    # Then Resource "*" appears only for actions that cannot be scoped
    for statement in statements(variant):
        if "*" in as_list(statement["Resource"]):
            assert set(as_list(statement["Action"])) <= RESOURCE_STAR_ALLOWED, statement


def test_every_data_store_and_queue_encrypted(variant: Synthesized) -> None:
    # Then tables, stream and queues all use the platform's KMS key; DAX has SSE (X1)
    for table in variant.resources("AWS::DynamoDB::Table").values():
        sse = table["Properties"]["SSESpecification"]
        assert sse["SSEEnabled"] is True and sse["SSEType"] == "KMS" and "KMSMasterKeyId" in sse
    assert variant.one("AWS::Kinesis::Stream")["Properties"]["StreamEncryption"]["EncryptionType"] == "KMS"
    for queue in variant.resources("AWS::SQS::Queue").values():
        assert "KmsMasterKeyId" in queue["Properties"]
    for cluster in variant.resources("AWS::DAX::Cluster").values():
        assert cluster["Properties"]["SSESpecification"] == {"SSEEnabled": True}


def test_log_groups_have_retention(variant: Synthesized) -> None:
    groups = variant.resources("AWS::Logs::LogGroup").values()
    assert groups
    assert all(g["Properties"]["RetentionInDays"] == 30 for g in groups)


def test_cdk_nag_acknowledgements_all_carry_a_reason(variant: Synthesized) -> None:
    # Given the synthesized stack (synth passed: zero unacknowledged cdk-nag findings)
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    acknowledged = {
        rule: reason
        for construct in variant.stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type == key
        for rule, reason in entry.data.items()
    }
    nag_rules = {rule: reason for rule, reason in acknowledged.items() if "AwsSolutions-" in rule}
    # Then every acknowledgement explains itself in a sentence
    assert nag_rules
    for rule, reason in nag_rules.items():
        assert len(reason) >= 40, rule


def test_cdk_nag_fails_synth_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    # Given the platform plus one queue without encryption, TLS policy or DLQ
    app, stack = build_app({**NO_BUNDLING, "dax": False}, outdir=str(tmp_path))
    sqs.Queue(stack, "Unacknowledged", encryption=sqs.QueueEncryption.UNENCRYPTED)
    # When synthesized / Then cdk-nag stops it, naming the rule
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "AwsSolutions-SQS4" in report and "Unacknowledged" in report


def test_cfn_lint_clean(variant: Synthesized) -> None:
    # When cfn-lint (with the repository's .cfnlintrc.yaml) checks the app's templates (with
    # edge=cloudfront, its us-east-1 stack's too) / Then no findings
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    templates = sorted(str(path) for path in variant.template_path.parent.glob("*.template.json"))
    result = subprocess.run(
        [str(cfn_lint), "--config-file", str(ROOT / ".cfnlintrc.yaml"), *templates],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
