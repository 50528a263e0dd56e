"""`python -m local.ops dlq ...`: the DLQ redrive command against a running `make dev`.

The same command as ``python -m mcp_platform.ops``, with the names and queue URLs the stack's
``OperationsEnvironment`` output gives on AWS, resolved here against the local emulator.
"""

from __future__ import annotations

import json
import sys

from local.bootstrap import LocalOptions, add_import_roots, isolate_from_real_aws


def main(argv: list[str]) -> int:
    options = LocalOptions.from_env(attach=True)
    isolate_from_real_aws(options)
    add_import_roots()
    from local.emulator import Clients, describe
    from local.intrinsics import resolve
    from local.resources import plan_from_template
    from local.template import synthesize
    from mcp_platform.config import EnvVars
    from mcp_platform.ops.__main__ import OPERATIONS_OUTPUT, run

    synthesized = synthesize()
    plan = plan_from_template(synthesized.template, synthesized.stage)
    attributes = describe(plan, Clients.connect(options.aws_endpoint, options.region), options.region)
    output = synthesized.template["Outputs"][OPERATIONS_OUTPUT]["Value"]
    env = json.loads(resolve(output, attributes, options.region))
    env.update({EnvVars.REGION: options.region, EnvVars.AWS_ENDPOINT_URL: options.aws_endpoint})
    return run(argv, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
