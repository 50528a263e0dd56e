"""The embedded AWS emulator: a moto server on loopback, and the template's resources on it."""

from __future__ import annotations

import json
import logging
import secrets
import string
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from local.bootstrap import LOOPBACK
from local.dax_standin import DEFAULT_ITEM_TTL_S
from local.intrinsics import ACCOUNT_ID
from local.resources import ResourcePlan
from mcp_platform.ops.lambda_records import SourceKind

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

logger = logging.getLogger(__name__)
Attributes = dict[str, dict[str, str]]


class EmulatorNotRunning(RuntimeError):
    """--attach found no emulator (or not the platform's resources) at LOCAL_AWS_PORT."""


@dataclass
class Clients:
    """Clients for the emulator; one attempt each, so a moto 500 surfaces instead of retrying."""

    dynamodb: DynamoDBClient
    streams: DynamoDBStreamsClient
    kinesis: KinesisClient
    sqs: SQSClient
    secretsmanager: SecretsManagerClient

    @classmethod
    def connect(cls, endpoint_url: str, region: str) -> Clients:
        config = Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30)
        return cls(
            boto3.client("dynamodb", region_name=region, endpoint_url=endpoint_url, config=config),
            boto3.client("dynamodbstreams", region_name=region, endpoint_url=endpoint_url, config=config),
            boto3.client("kinesis", region_name=region, endpoint_url=endpoint_url, config=config),
            boto3.client("sqs", region_name=region, endpoint_url=endpoint_url, config=config),
            boto3.client("secretsmanager", region_name=region, endpoint_url=endpoint_url, config=config),
        )


class Emulator:
    """An atomic moto server embedded in this process (stopped by :meth:`stop`).

    Being in-process, it also answers what no AWS API tells: how many stream records a poller
    has not handled yet, and it drops table-stream records the pollers are done with (moto
    keeps them all). Each reads moto's state under the lock every request holds.
    """

    def __init__(self, port: int, region: str = "us-east-1", *, item_ttl_s: float = DEFAULT_ITEM_TTL_S) -> None:
        from local.atomic_moto import AtomicMotoServer  # deferred: moto's import is not free
        from local.dax_cluster import with_dax_cluster

        self.port, self.region = port, region
        self._server = AtomicMotoServer(
            ip_address=LOOPBACK,
            port=port,
            verbose=False,
            wrap=lambda moto: with_dax_cluster(moto, region, item_ttl_s),  # one item cache for every instance
        )

    @property
    def endpoint_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    def pending(self, kind: SourceKind, stream_name: str, checkpoints: dict[str, str]) -> int:
        """Records of a stream (Kinesis, or a table's) after the given per-shard checkpoints."""
        from local import moto_patches

        with self._server.lock:
            if kind is SourceKind.KINESIS:
                return moto_patches.kinesis_pending(ACCOUNT_ID, self.region, stream_name, checkpoints)
            span = moto_patches.table_stream_span(ACCOUNT_ID, self.region, stream_name)
        if span is None:
            return 0
        shard_id, first, following = span
        handled = checkpoints.get(shard_id)
        return following - (int(handled) + 1 if handled is not None else first)

    def stream_records(self, table_name: str) -> int:
        from local import moto_patches

        with self._server.lock:
            span = moto_patches.table_stream_span(ACCOUNT_ID, self.region, table_name)
        return 0 if span is None else span[2] - span[1]

    def trim_stream(self, table_name: str, through: int, older_than_s: float) -> int:
        """Drops the table's stream records up to sequence ``through`` older than ``older_than_s``."""
        from local import moto_patches

        with self._server.lock:
            return moto_patches.trim_table_stream(ACCOUNT_ID, self.region, table_name, through, older_than_s)


def provision(plan: ResourcePlan, clients: Clients) -> None:
    """Creates every table, stream, consumer and queue of the plan (on a fresh emulator)."""
    for table in plan.tables:
        request: dict[str, Any] = {
            "TableName": table.name,
            "KeySchema": table.key_schema,
            "AttributeDefinitions": table.attribute_definitions,
            "BillingMode": table.billing_mode,
        }
        if table.global_secondary_indexes:
            request["GlobalSecondaryIndexes"] = table.global_secondary_indexes
        if table.stream_view_type:
            request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": table.stream_view_type}
        clients.dynamodb.create_table(**request)
        if table.ttl_attribute:
            clients.dynamodb.update_time_to_live(
                TableName=table.name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
            )
    for stream in plan.streams:
        create: dict[str, Any] = {"StreamName": stream.name, "StreamModeDetails": {"StreamMode": stream.mode}}
        if stream.mode == "PROVISIONED":
            create["ShardCount"] = stream.shard_count or 1
        clients.kinesis.create_stream(**create)
        if stream.retention_hours > 24:
            clients.kinesis.increase_stream_retention_period(
                StreamName=stream.name, RetentionPeriodHours=stream.retention_hours
            )
    for consumer in plan.consumers:
        stream_name = next(s.name for s in plan.streams if s.logical_id == consumer.stream_logical_id)
        stream_arn = clients.kinesis.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"][
            "StreamARN"
        ]
        clients.kinesis.register_stream_consumer(StreamARN=stream_arn, ConsumerName=consumer.name)
    queue_urls = {}
    for queue in plan.queues:
        attributes: dict[QueueAttributeNameType, str] = (
            {"MessageRetentionPeriod": str(queue.retention_seconds)} if queue.retention_seconds else {}
        )
        if queue.visibility_timeout_s is not None:
            attributes["VisibilityTimeout"] = str(queue.visibility_timeout_s)
        queue_urls[queue.logical_id] = clients.sqs.create_queue(QueueName=queue.name, Attributes=attributes)["QueueUrl"]
    for queue in plan.queues:  # redrive once every dead-letter queue exists
        if queue.dead_letter_logical_id is not None and queue.max_receive_count is not None:
            target_url = queue_urls[queue.dead_letter_logical_id]
            target = clients.sqs.get_queue_attributes(QueueUrl=target_url, AttributeNames=["QueueArn"])
            target_arn = target["Attributes"]["QueueArn"]
            redrive = {"deadLetterTargetArn": target_arn, "maxReceiveCount": queue.max_receive_count}
            clients.sqs.set_queue_attributes(
                QueueUrl=queue_urls[queue.logical_id], Attributes={"RedrivePolicy": json.dumps(redrive)}
            )
    for secret in plan.secrets:
        # What CloudFormation's GenerateSecretString does, once per emulator: every instance that
        # attaches reads this same value (the request-state keys), and nothing prints it.
        alphabet = string.ascii_letters + string.digits
        value = json.loads(secret.template)
        value[secret.generate_key] = "".join(secrets.choice(alphabet) for _ in range(secret.length))
        clients.secretsmanager.create_secret(Name=secret.name, SecretString=json.dumps(value))


def describe(plan: ResourcePlan, clients: Clients, region: str) -> Attributes:
    """What CloudFormation's Ref/GetAtt would return for each resource, read from the emulator."""
    attributes: Attributes = {}
    try:
        for table in plan.tables:
            description = clients.dynamodb.describe_table(TableName=table.name)["Table"]
            attributes[table.logical_id] = {"Ref": table.name, "Arn": description["TableArn"]}
            if "LatestStreamArn" in description:
                attributes[table.logical_id]["StreamArn"] = description["LatestStreamArn"]
        for stream in plan.streams:
            summary = clients.kinesis.describe_stream_summary(StreamName=stream.name)["StreamDescriptionSummary"]
            attributes[stream.logical_id] = {"Ref": stream.name, "Arn": summary["StreamARN"]}
        for consumer in plan.consumers:
            stream_arn = attributes[consumer.stream_logical_id]["Arn"]
            found = clients.kinesis.describe_stream_consumer(StreamARN=stream_arn, ConsumerName=consumer.name)
            arn = found["ConsumerDescription"]["ConsumerARN"]
            attributes[consumer.logical_id] = {"Ref": arn, "ConsumerARN": arn, "ConsumerName": consumer.name}
        for queue in plan.queues:
            url = clients.sqs.get_queue_url(QueueName=queue.name)["QueueUrl"]
            arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            attributes[queue.logical_id] = {"Ref": url, "Arn": arn, "QueueName": queue.name}
        for secret in plan.secrets:
            arn = clients.secretsmanager.describe_secret(SecretId=secret.name)["ARN"]
            attributes[secret.logical_id] = {"Ref": arn, "Arn": arn}
    except ClientError as error:
        raise EmulatorNotRunning(f"the emulator lacks a platform resource: {error}") from error
    for function in plan.functions:
        arn = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function.name}"
        attributes[function.logical_id] = {"Ref": function.name, "Arn": arn}
    return attributes


def wait_until_reachable(clients: Clients, timeout_s: float) -> None:
    """The moto server starts in a thread; wait until it answers (bounded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            clients.sqs.list_queues()
            return
        except Exception as error:
            if time.monotonic() > deadline:
                raise EmulatorNotRunning(f"no emulator answered within {timeout_s:.0f} s: {error}") from error
            logger.debug("emulator not reachable yet: %s", error)
            time.sleep(0.1)
