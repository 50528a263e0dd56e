#!/bin/bash
# Lambda handler of the endpoint function. The Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=
# /opt/bootstrap) runs this script, waits for AWS_LWA_READINESS_CHECK_PATH (/healthz) on
# AWS_LWA_PORT, then proxies each invocation to uvicorn and streams the response (S1).
# The shared layer is on PYTHONPATH (/opt/python); this function's code is in /var/task.
# The server's options (lifespan, keep-alive, the guarded httptools protocol on uvloop, header
# limits) are defined once in mcp_platform.transport.serving, shared with make dev and the tests.
export PYTHONPATH="/opt/python:/var/task:${PYTHONPATH:-}"
exec python3 -m mcp_platform.transport.serving endpoint_app:app --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}"
