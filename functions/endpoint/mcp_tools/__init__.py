"""The endpoint's tools, resources and prompts: one module per feature (or per small family),
discovered at start-up.

Add a tool by adding a module here with a function decorated with ``@tool`` (``from mcp_platform
import ToolContext, tool``; README "Adding a tool"), and its test (``mcp_platform.testing.
ToolHarness``, as in ``tests/unit/test_starter_app.py``);
``tests/unit/transport/test_protocol_core.py`` proves every module is registered.
"""
