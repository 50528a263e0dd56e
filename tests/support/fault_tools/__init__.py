"""Test-only tools that fail on purpose (loaded with ``extra_tools``, never deployed)."""
