"""Test-only MCP Apps features: a tool with a view, an app-only tool and the view, with the sandbox
metadata a host reads (the endpoint must list and serve them as the extension specifies)."""
