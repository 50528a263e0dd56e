"""Test-only interactive tools (loaded with ``extra_tools``, never deployed)."""
