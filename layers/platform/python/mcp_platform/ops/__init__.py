"""Operator commands: ``python -m mcp_platform.ops`` (dead-letter queues: list, show, replay, purge)."""
