"""Mint and revoke API keys: ``python -m mcp_platform.ops.api_keys mint --principal alice
[--tenant acme]`` (a key of a tenant's principal: everything it keeps is the tenant's).

Reads SESSION_TABLE_NAME / AWS_REGION (and AWS_ENDPOINT_URL for the local emulator).
"""

from __future__ import annotations

import argparse
import sys

from mcp_platform.adapters.aws_clients import aws_client
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.config import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_platform.ops.api_keys", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    mint = commands.add_parser("mint", help="create a key for a principal (printed once)")
    mint.add_argument("--principal", required=True)
    mint.add_argument("--label", default="")
    mint.add_argument("--tenant", default=None, help="the tenant the principal belongs to")
    mint.add_argument(
        "--group", action="append", default=[], help="a group the principal is in (repeatable): what policies see"
    )
    revoke = commands.add_parser("revoke", help="revoke a key")
    revoke.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    store = ApiKeyStore(settings.session_table, aws_client("dynamodb", settings))
    if args.command == "mint":
        try:
            print(store.mint(args.principal, args.label, tenant=args.tenant, groups=args.group))
        except ValueError as exc:
            parser.error(str(exc))
        return 0
    if store.revoke(args.key):
        print("revoked")
        return 0
    print("no such key", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
