"""Builds the audit objects from settings, creating default clients only where none is passed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_platform.adapters.aws_clients import aws_client
from mcp_platform.adapters.dynamodb.audit_trail import AuditTrail
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.ingest_ledger import CountedEventMarkers
from mcp_platform.adapters.dynamodb.session_remains import SessionRemains
from mcp_platform.adapters.dynamodb.stream_images import STREAM_IMAGES, read_stream_change
from mcp_platform.adapters.kinesis.audit_publisher import KinesisEventPublisher
from mcp_platform.application.audit.expiry import SessionExpiryHandler
from mcp_platform.application.audit.ports import EventPublisher
from mcp_platform.application.audit.processor import AuditProcessor
from mcp_platform.application.events.relay import CommittedEventRelay
from mcp_platform.config import ConfigError, EnvVars, Settings, audit_previous_layout

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient


def build_audit_processor(
    settings: Settings,
    *,
    dynamodb: DynamoDBClient | None = None,
    publisher: EventPublisher | None = None,
    kinesis: KinesisClient | None = None,
    sqs: SQSClient | None = None,
    retention_seconds: int | None = None,
) -> AuditProcessor:
    if not settings.audit_table:
        raise ConfigError(f"{EnvVars.AUDIT_TABLE} is required by the audit processor")
    # The plain DynamoDB client, never DAX: the expiry cleanup reads consistently (X4) and the
    # audit table is not cached.
    dynamodb = dynamodb if dynamodb is not None else aws_client("dynamodb", settings)
    if publisher is None:
        if not settings.event_stream:
            raise ConfigError(f"{EnvVars.EVENT_STREAM} is required to emit session-expired events")
        if sqs is None and settings.expiry_events_dlq_url:
            sqs = aws_client("sqs", settings)
        publisher = KinesisEventPublisher(
            kinesis if kinesis is not None else aws_client("kinesis", settings),
            settings.event_stream,
            sqs=sqs,
            dlq_url=settings.expiry_events_dlq_url,
        )
    if retention_seconds is None:
        retention_seconds = settings.audit_retention_days * 86_400
    writer = AuditWriter(
        dynamodb,
        settings.audit_table,
        retention_seconds=retention_seconds,
        previous_layout=audit_previous_layout(settings),
    )
    expiry = SessionExpiryHandler(SessionRemains(dynamodb, settings.session_table), writer, publisher)
    relay = CommittedEventRelay(CountedEventMarkers(dynamodb, settings.session_table), publisher)
    return AuditProcessor(read_stream_change, STREAM_IMAGES, writer, expiry, relay)


def build_audit_trail(settings: Settings, *, dynamodb: DynamoDBClient | None = None) -> AuditTrail:
    if not settings.audit_table:
        raise ConfigError(f"{EnvVars.AUDIT_TABLE} is required to read audit trails")
    return AuditTrail(dynamodb if dynamodb is not None else aws_client("dynamodb", settings), settings.audit_table)
