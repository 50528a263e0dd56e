"""Test-only task tools (loaded with ``extra_tools``, never deployed)."""
