#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth` / `npx cdk deploy` (configuration: CDK context, see cdk.json)."""

import sys

from stacks.app_builder import build_app
from stacks.config import ContextError

if __name__ == "__main__":
    try:
        app, _ = build_app()
    except ContextError as error:
        # A bad -c value: one clear line instead of a jsii stack trace.
        sys.exit(f"configuration error: {error}")
    app.synth()
