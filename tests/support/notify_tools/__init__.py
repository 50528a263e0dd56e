"""Test-only tools that announce resource updates (loaded with ``extra_tools``, never deployed)."""
