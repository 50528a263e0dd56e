"""Domain package of the serverless MCP platform (shared Lambda layer).

Nothing in this package knows about Lambda events: functions in ``functions/`` translate
events and call into it. AWS clients are injected through ``__init__``; defaults are built by
:mod:`mcp_platform.aws_clients` only when none is passed.
"""
