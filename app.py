#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth` / `npx cdk deploy` (configuration: CDK context, see cdk.json)."""

from stacks.app_builder import build_app

if __name__ == "__main__":
    app, _ = build_app()
    app.synth()
