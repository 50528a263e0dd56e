"""The platform's own features: what its tests, benches and soak serve and call.

A copy of the tools the platform's behaviours are shown with (a stateless call, session notes
and a counter committed with their call records, progress streaming, a task, the event-stream
and audit-trail reads, a resource template and a prompt), kept apart from the starter app in
``functions/endpoint/mcp_tools``: a team that replaces or empties that app keeps every platform
test. Served in process as ``tests.support.platform_tools`` (tests/support/endpoint.py) and by
``python -m local`` as the features folder (``MCP_FEATURES_DIR``, tests/support/local_platform.py),
where it is imported as ``mcp_tools``: modules import each other relatively for that reason.
Never deployed. ``tests/support/catalog.py`` lists what it serves.
"""
