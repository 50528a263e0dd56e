"""Tool-call event pipeline on Kinesis (K1-K5): what the use cases know of it.

- :mod:`.schema`        versioned ``ToolCallEvent`` (to_bytes/from_bytes, ``EventSchemaError``)
- :mod:`.stream_events` every event type on the stream (``session.expired``, A4) and the dispatch
- :mod:`.ports`         what the producer, the ingest ledger and the recent-events reader offer
- :mod:`.ingest`        ``EventIngestor``: idempotent records and exact usage counters

The producer (with the PutRecords record, its limits (K1) and its partition key (K3):
``adapters.kinesis.batching``), the shard reader and the ingest's DynamoDB writes are adapters
(``mcp_platform.adapters.kinesis``, ``adapters.dynamodb.ingest_ledger``); the shard planner (K6)
is the CDK app's (``stacks/shard_planner.py``); the Lambda-shaped records the DLQ replay and the
local pollers build are ``mcp_platform.ops.lambda_records``. Import from the submodules: this package module
stays import-free so the schema loads without botocore.
"""
