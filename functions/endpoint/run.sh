#!/bin/bash
# Lambda handler of the endpoint function. The Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=
# /opt/bootstrap) runs this script, waits for AWS_LWA_READINESS_CHECK_PATH (/healthz) on
# AWS_LWA_PORT, then proxies each invocation to uvicorn and streams the response (S1).
# The shared layer is on PYTHONPATH (/opt/python); this function's code is in /var/task.
# --lifespan on: on SIGTERM (about 300 ms before SIGKILL) the app flushes buffered tool events.
# --http httptools --loop uvloop: named, not "auto", so a layer without them fails at start
# instead of silently serving on the slower pure-Python stack (both ship in the shared layer).
export PYTHONPATH="/opt/python:/var/task:${PYTHONPATH:-}"
exec python3 -m uvicorn endpoint_app:app --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" \
  --no-access-log --no-server-header --timeout-keep-alive 65 --lifespan on --http httptools --loop uvloop
