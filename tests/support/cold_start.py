"""Which modules the endpoint function has loaded once it has started, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded_at_start(modules: Sequence[str], **env: str) -> dict[str, bool]:
    """``import endpoint_app`` (the function's module scope builds the app) with ``env`` added to
    a minimal environment, then whether each of ``modules`` is in ``sys.modules``."""
    probe = (
        f"MODULES = {tuple(modules)!r}; import json, sys, endpoint_app; "
        "print(json.dumps({m: m in sys.modules for m in MODULES}))"
    )
    environment = {
        **os.environ,
        "SESSION_TABLE_NAME": "sessions",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("layers/platform/python", "functions/endpoint")),
        **env,
    }
    environment.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded
