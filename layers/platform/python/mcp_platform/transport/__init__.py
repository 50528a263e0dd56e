"""Streamable HTTP transport (raw ASGI: no framework on the cold-start path)."""
