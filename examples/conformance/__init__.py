"""The conformance fixture pack: the tools, resources and prompts the MCP conformance suite's
server scenarios name, each behaving as its scenario describes.

An ordinary feature package (one module per group of fixtures, discovered like the endpoint's own
``mcp_tools``), so the suite exercises the platform's real code paths. Loaded by
``python -m local --fixtures conformance`` (and ``--attach --fixtures conformance``); never
deployed. ``make conformance`` runs the suite against it.
"""
