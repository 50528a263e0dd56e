"""The audit function's per-record work, driven over everything a session table's stream holds.

Each DynamoDB Streams record of the moto server's session table is converted to the shape Lambda
delivers and handed to the same :class:`AuditProcessor` the audit function builds. A record the
processor cannot handle raises here: on AWS it would fail its batch item and end in the audit DLQ.
"""

from __future__ import annotations

from typing import Any

from mcp_platform.application.audit.processor import RecordOutcome
from mcp_platform.bootstrap.audit import build_audit_processor
from tests.support.endpoint import AwsStack
from tests.support.session_stream import to_lambda_record
from tests.support.tables import audit_table_definition


def stream_records(aws: AwsStack) -> list[dict[str, Any]]:
    """Every record of the session table's stream, oldest first, in the Lambda event shape."""
    arn = aws.client("dynamodb").describe_table(TableName=aws.table)["Table"]["LatestStreamArn"]
    streams = aws.client("dynamodbstreams")
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records.extend(to_lambda_record(record, arn) for record in page["Records"])
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return records


def audit_everything(aws: AwsStack) -> list[RecordOutcome]:
    """Process every stream record as the audit function would (raises on the first it cannot)."""
    ddb = aws.client("dynamodb")
    audit_table = f"{aws.table}-audit"
    if audit_table not in ddb.list_tables()["TableNames"]:
        ddb.create_table(**audit_table_definition(audit_table))
    processor = build_audit_processor(
        aws.settings(AUDIT_TABLE_NAME=audit_table), dynamodb=ddb, kinesis=aws.client("kinesis"), sqs=aws.client("sqs")
    )
    return [processor.process(record) for record in stream_records(aws)]
