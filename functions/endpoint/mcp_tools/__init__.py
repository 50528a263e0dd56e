"""The endpoint's tools: one module per tool (or per small family), discovered at start-up.

Add a tool by adding a module here that defines a ``ToolSpec`` with ``@tool(...)`` (and its
test); ``tests/unit/endpoint/test_tool_catalog.py`` proves every module is registered.
"""
