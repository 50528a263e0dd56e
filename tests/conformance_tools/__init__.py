"""Fixture tools the MCP conformance suite calls by name (tests only, never deployed).

Each module is an ordinary tool module: the same discovery, schemas and transport as the
platform's own tools, so the suite exercises the real code paths.
"""
