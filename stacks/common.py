"""Small helpers every construct uses: removal policy, log groups, the platform KMS key."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config import PlatformConfig

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
}

DLQ_RETENTION = Duration.days(14)  # the SQS maximum: time to investigate and redrive


def deletion_protection(config: PlatformConfig) -> bool:
    """D11: data stores are protected from deletion outside dev stages."""
    return not config.is_dev


def removal_policy(config: PlatformConfig) -> RemovalPolicy:
    return RemovalPolicy.DESTROY if config.removal_policy == "destroy" else RemovalPolicy.RETAIN


def log_retention(config: PlatformConfig) -> logs.RetentionDays:
    return _RETENTION[config.log_retention_days]


def log_group(scope: Construct, construct_id: str, config: PlatformConfig) -> logs.LogGroup:
    return logs.LogGroup(scope, construct_id, retention=log_retention(config), removal_policy=removal_policy(config))


# What every function's own lines are written at (MCP_LOG_LEVEL) and what Lambda lets through of
# them (its application log level, JSON log format): one value. Never above INFO: the EMF metric
# lines carry no "level", which Lambda reads as INFO, so a higher level would drop every metric.
APPLICATION_LOG_LEVEL = "INFO"


def function_telemetry(config: PlatformConfig) -> dict[str, Any]:
    """The logging and tracing properties of every function (``lambda_.Function`` keywords): JSON
    log format, the application log level above, Lambda's own lines at ``system_log_level`` and
    X-Ray at ``tracing``. Read by bench/cost.py from the template, which prices what this deploys."""
    return {
        "logging_format": lambda_.LoggingFormat.JSON,
        "application_log_level_v2": lambda_.ApplicationLogLevel(APPLICATION_LOG_LEVEL),
        "system_log_level_v2": lambda_.SystemLogLevel(config.system_log_level),
        "tracing": lambda_.Tracing.ACTIVE if config.tracing == "active" else lambda_.Tracing.PASS_THROUGH,
    }


def platform_key(scope: Construct, construct_id: str, config: PlatformConfig) -> kms.Key:
    """One customer-managed key (rotated yearly) for the stream, tables and queues (K9)."""
    return kms.Key(
        scope,
        construct_id,
        description=f"mcp-platform {config.stage}: Kinesis stream, DynamoDB tables, SQS queues",
        enable_key_rotation=True,
        removal_policy=removal_policy(config),
    )


def dead_letter_queue(scope: Construct, construct_id: str, key: kms.IKey, config: PlatformConfig) -> sqs.Queue:
    """An encrypted, TLS-only DLQ that keeps messages for the SQS maximum of 14 days."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        enforce_ssl=True,
        retention_period=DLQ_RETENTION,
        removal_policy=removal_policy(config),
    )
