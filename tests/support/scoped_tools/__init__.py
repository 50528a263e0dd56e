"""Test-only tools that declare OAuth scopes."""
