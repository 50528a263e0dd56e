"""Governance: rate limits and quotas, decided when a request is admitted, before anything runs
or is written, and shared by every instance (their counters live in DynamoDB)."""
