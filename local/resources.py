"""Reads the resources the local platform needs out of a synthesized CloudFormation template.

Pure: template dict in, specs out. Physical names are derived from the logical ids (the
construct path without CDK's hash) and the stage, e.g. ``DataSessionTableA7791A6F`` ->
``mcp-dev-data-session-table``, so they are stable across starts and easy to type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_HASH_SUFFIX = re.compile(r"[0-9A-F]{8}$")
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
ENDPOINT_HANDLER = "run.sh"  # the Web Adapter entry point marks the endpoint function


def local_name(stage: str, logical_id: str) -> str:
    readable = _HASH_SUFFIX.sub("", logical_id) or logical_id
    return f"mcp-{stage}-" + _WORD_BOUNDARY.sub("-", readable).lower()


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    name: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    billing_mode: str
    global_secondary_indexes: list[dict[str, Any]]
    ttl_attribute: str | None
    stream_view_type: str | None


@dataclass(frozen=True)
class StreamSpec:
    logical_id: str
    name: str
    mode: str  # ON_DEMAND | PROVISIONED
    shard_count: int | None
    retention_hours: int


@dataclass(frozen=True)
class ConsumerSpec:
    logical_id: str
    name: str
    stream_logical_id: str


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    name: str
    retention_seconds: int | None
    visibility_timeout_s: int | None = None
    dead_letter_logical_id: str | None = None  # RedrivePolicy.deadLetterTargetArn (GetAtt of a queue)
    max_receive_count: int | None = None


@dataclass(frozen=True)
class SecretSpec:
    """A secret whose value CloudFormation would generate (the request-state keys)."""

    logical_id: str
    name: str
    template: str  # GenerateSecretString.SecretStringTemplate (a JSON object)
    generate_key: str  # the key the generated string is stored under
    length: int


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    handler: str
    environment: dict[str, Any]  # raw: values may be intrinsics (resolved by intrinsics.py)
    timeout_s: int
    memory_mb: int


@dataclass(frozen=True)
class MappingSpec:
    logical_id: str
    function_logical_id: str
    source: dict[str, Any]  # the EventSourceArn intrinsic (GetAtt of a consumer or table stream)
    batch_size: int
    bisect_on_error: bool
    max_retries: int  # -1 = until the record expires, as in AWS
    max_record_age_s: int  # -1 = no limit
    report_batch_item_failures: bool
    starting_position: str
    on_failure: dict[str, Any] | None  # the destination intrinsic (GetAtt of a queue's Arn)

    @property
    def source_logical_id(self) -> str:
        return str(self.source["Fn::GetAtt"][0])

    @property
    def on_failure_logical_id(self) -> str | None:
        return None if self.on_failure is None else str(self.on_failure["Fn::GetAtt"][0])


@dataclass(frozen=True)
class ResourcePlan:
    stage: str
    tables: list[TableSpec] = field(default_factory=list)
    streams: list[StreamSpec] = field(default_factory=list)
    consumers: list[ConsumerSpec] = field(default_factory=list)
    queues: list[QueueSpec] = field(default_factory=list)
    functions: list[FunctionSpec] = field(default_factory=list)
    mappings: list[MappingSpec] = field(default_factory=list)
    secrets: list[SecretSpec] = field(default_factory=list)

    def function(self, logical_id: str) -> FunctionSpec:
        return next(f for f in self.functions if f.logical_id == logical_id)

    @property
    def endpoint(self) -> FunctionSpec:
        found = [f for f in self.functions if f.handler == ENDPOINT_HANDLER]
        if len(found) != 1:
            raise ValueError(f"expected one endpoint function (Handler {ENDPOINT_HANDLER}), found {len(found)}")
        return found[0]


def plan_from_template(template: dict[str, Any], stage: str) -> ResourcePlan:
    plan = ResourcePlan(stage)
    resources = template.get("Resources", {})
    # A function's live alias (stacks/deployment.py) -> the function: a mapping invokes the alias,
    # which runs the one version of the function there is locally.
    aliases = {
        logical_id: resource["Properties"]["FunctionName"]["Ref"]
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Alias"
    }
    for logical_id, resource in resources.items():
        kind, props = resource["Type"], resource.get("Properties", {})
        name = local_name(stage, logical_id)
        if kind == "AWS::DynamoDB::Table":
            plan.tables.append(_table(logical_id, name, props))
        elif kind == "AWS::Kinesis::Stream":
            mode = props.get("StreamModeDetails", {}).get("StreamMode", "PROVISIONED")
            shards = props.get("ShardCount")
            retention = int(props.get("RetentionPeriodHours", 24))
            plan.streams.append(StreamSpec(logical_id, name, mode, int(shards) if shards else None, retention))
        elif kind == "AWS::Kinesis::StreamConsumer":
            plan.consumers.append(ConsumerSpec(logical_id, props["ConsumerName"], props["StreamARN"]["Fn::GetAtt"][0]))
        elif kind == "AWS::SQS::Queue":
            plan.queues.append(_queue(logical_id, name, props))
        elif kind == "AWS::Lambda::Function" and str(props.get("Runtime", "")).startswith("python"):
            # Only our Python functions run locally; CDK's Node.js custom-resource providers
            # configure AWS-side features (e.g. K8 enhanced monitoring) that moto ignores.
            plan.functions.append(
                FunctionSpec(
                    logical_id,
                    name,
                    props["Handler"],
                    dict(props.get("Environment", {}).get("Variables", {})),
                    int(props.get("Timeout", 3)),
                    int(props.get("MemorySize", 128)),
                )
            )
        elif kind == "AWS::Lambda::EventSourceMapping":
            plan.mappings.append(_mapping(logical_id, props, aliases))
        elif kind == "AWS::SecretsManager::Secret" and "GenerateSecretString" in props:
            generate = props["GenerateSecretString"]
            plan.secrets.append(
                SecretSpec(
                    logical_id,
                    name,
                    generate.get("SecretStringTemplate", "{}"),
                    generate["GenerateStringKey"],
                    int(generate.get("PasswordLength", 32)),
                )
            )
    return plan


def _queue(logical_id: str, name: str, props: dict[str, Any]) -> QueueSpec:
    retention = props.get("MessageRetentionPeriod")
    visibility = props.get("VisibilityTimeout")
    redrive = props.get("RedrivePolicy") or {}
    target = redrive.get("deadLetterTargetArn")
    return QueueSpec(
        logical_id,
        name,
        int(retention) if retention else None,
        int(visibility) if visibility else None,
        str(target["Fn::GetAtt"][0]) if isinstance(target, dict) else None,
        int(redrive["maxReceiveCount"]) if "maxReceiveCount" in redrive else None,
    )


def _table(logical_id: str, name: str, props: dict[str, Any]) -> TableSpec:
    ttl = props.get("TimeToLiveSpecification") or {}
    stream = props.get("StreamSpecification") or {}
    return TableSpec(
        logical_id=logical_id,
        name=name,
        key_schema=list(props["KeySchema"]),
        attribute_definitions=list(props["AttributeDefinitions"]),
        billing_mode=props.get("BillingMode", "PROVISIONED"),
        global_secondary_indexes=list(props.get("GlobalSecondaryIndexes", [])),
        ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
        stream_view_type=stream.get("StreamViewType"),
    )


def _mapping(logical_id: str, props: dict[str, Any], aliases: dict[str, str]) -> MappingSpec:
    on_failure = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
    return MappingSpec(
        logical_id=logical_id,
        function_logical_id=_invoked_function(props["FunctionName"], aliases),
        source=props["EventSourceArn"],
        # CloudFormation defaults for stream sources when a property is absent.
        batch_size=int(props.get("BatchSize", 100)),
        bisect_on_error=bool(props.get("BisectBatchOnFunctionError", False)),
        max_retries=int(props.get("MaximumRetryAttempts", -1)),
        max_record_age_s=int(props.get("MaximumRecordAgeInSeconds", -1)),
        report_batch_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
        starting_position=props.get("StartingPosition", "LATEST"),
        on_failure=on_failure,
    )


def _invoked_function(name: Any, aliases: dict[str, str]) -> str:
    """The function a mapping's FunctionName names: a Ref to the function, or to one of its
    aliases (CDK spells that ``<name from the alias's ARN>:<alias>``, around the alias's Ref)."""
    refs = list(_refs(name))
    if len(refs) != 1:
        raise ValueError(f"a mapping's FunctionName must name one function or alias, got {name!r}")
    return aliases.get(refs[0], refs[0])


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref":
                yield str(item)
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)
