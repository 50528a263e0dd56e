"""Our endpoint for the loopback benchmark, on zero-latency fake AWS clients, bearer auth on.

Served on the served stack, as run.sh serves the endpoint (``serve_stack.py`` from bench/): the
HTTP server, the app and every CPU cost of a call are the real ones; only the AWS round trips
(a cached API-key check, the call's Kinesis flush) cost nothing.
"""

from __future__ import annotations

from common import our_app

app = our_app(auth=True)
