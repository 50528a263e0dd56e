"""Test-only features written as the official SDK's MCPServer documents them (plain functions,
docstrings, pydantic models, Enums, dataclasses, the context under any name): the endpoint must
serve them with the schemas their types imply."""
