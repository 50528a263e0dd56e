"""Tool-call event pipeline on Kinesis (K1-K6).

- :mod:`.schema`       versioned ``ToolCallEvent`` (to_bytes/from_bytes, ``EventSchemaError``)
- :mod:`.stream_events` every event type on the stream (``session.expired``, A4) and the dispatch
- :mod:`.batching`     PutRecords limits (K1) and the partition key (K3)
- :mod:`.producer`     ``EventProducer``: buffered, batched, partial-failure-safe writes (K2)
- :mod:`.dead_letters` ``DeadLetterQueue``: the producer DLQ (SQS)
- :mod:`.shard_reader` ``ShardReader``: iterator-safe polling reads (K4)
- :mod:`.recent`       ``recent_session_events`` for the ``recent_tool_events`` tool
- :mod:`.ingest`       ``EventIngestor``: idempotent records and exact usage counters
- :mod:`.transact`     TransactWriteItems for ingest: conflicts retried, failed conditions returned
- :mod:`.planner`      shard count and cost comparison (K6), also a command line

Import from the submodules; this package module stays import-free so the planner command
and the schema load without botocore.
"""
