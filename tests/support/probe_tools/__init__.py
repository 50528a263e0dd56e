"""Test-only tools that record what happened to them (cancellation, completion)."""
