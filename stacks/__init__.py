"""CDK constructs of the MCP platform: one module per concern, composed by PlatformStack."""
