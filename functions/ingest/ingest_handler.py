"""Ingest function: Kinesis enhanced fan-out records -> idempotent tool-call records and usage."""
