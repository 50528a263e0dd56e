"""`make conformance`: the official MCP conformance suite over two local endpoint instances behind
a round-robin proxy (``python -m local.conformance``)."""
