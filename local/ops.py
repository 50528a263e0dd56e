"""`python -m local.ops dlq|usage|audit|verify ...` (the operations commands) and `python -m local.ops
api-keys mint|revoke ...` (the API-key command) against a running `make dev`.

The same command as ``python -m mcp_platform.ops``, with the names and queue URLs the stack's
``OperationsEnvironment`` output gives on AWS, resolved here against the local emulator
(:func:`operations_environment`, which `python -m local.trace` reads too). A running `make dev`
saves it in its run folder at start, so these commands need not synthesize the template again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local.bootstrap import LocalOptions, add_import_roots, isolate_from_real_aws

if TYPE_CHECKING:
    from local.emulator import Attributes

ENVIRONMENT_FILE = "operations.json"


def resolved_environment(template: dict[str, Any], attributes: Attributes, options: LocalOptions) -> dict[str, str]:
    """The template's ``OperationsEnvironment`` output on the emulator, with its region and endpoint."""
    from local.intrinsics import resolve
    from mcp_platform.config import EnvVars
    from mcp_platform.ops.__main__ import OPERATIONS_OUTPUT

    output = template["Outputs"][OPERATIONS_OUTPUT]["Value"]
    env: dict[str, str] = json.loads(resolve(output, attributes, options.region))
    env.update({EnvVars.REGION: options.region, EnvVars.AWS_ENDPOINT_URL: options.aws_endpoint})
    return env


def save_environment(options: LocalOptions, env: dict[str, str]) -> Path:
    """Called by `make dev` (not --attach) at start; removed again when it stops."""
    options.run_dir.mkdir(parents=True, exist_ok=True)
    path = options.run_dir / ENVIRONMENT_FILE
    path.write_text(json.dumps(env, indent=2))
    return path


def operations_environment() -> tuple[LocalOptions, dict[str, str]]:
    """The running emulator's (LOCAL_AWS_PORT) ``OperationsEnvironment``: queue URLs, table and
    stream names, with the region and the emulator's endpoint; this process talks to it only.
    Read from what `make dev` saved, else from a fresh synth of the template."""
    options = LocalOptions.from_env(attach=True)
    isolate_from_real_aws(options)
    add_import_roots()
    saved = options.run_dir / ENVIRONMENT_FILE
    if saved.is_file():
        env: dict[str, str] = json.loads(saved.read_text())
        return options, env
    from local.emulator import Clients, describe
    from local.resources import plan_from_template
    from local.template import synthesize

    synthesized = synthesize()
    plan = plan_from_template(synthesized.template, synthesized.stage)
    attributes = describe(plan, Clients.connect(options.aws_endpoint, options.region), options.region)
    return options, resolved_environment(synthesized.template, attributes, options)


def main(argv: list[str]) -> int:
    _, env = operations_environment()
    if argv[:1] == ["api-keys"]:
        import os

        from mcp_platform.ops import api_keys

        os.environ.update(env)  # the command reads the table's name and the endpoint from there
        return api_keys.main(argv[1:])
    from mcp_platform.ops.__main__ import run

    return run(argv, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
