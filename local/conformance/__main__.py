"""`python -m local.conformance` (make conformance): the official MCP conformance suite against two
endpoint instances on one emulator behind a round-robin proxy, judged against the checked-in
expected failures.

Exit status 0 only when, for every revision run, each required scenario passes or is listed in
the expected-failures file with its reason, and no listed entry passes any more.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from local.bootstrap import ROOT, add_import_roots
from local.conformance.authorization import FACADE_ENV, AuthorizationRun, run_authorization
from local.conformance.baseline import Verdict, judge, load_expected
from local.conformance.coverage import served_tools
from local.conformance.instances import Instance, free_port, start_instance
from local.conformance.proxy import RoundRobinProxy
from local.conformance.report import details, summary, tally, write_summary
from local.conformance.suite import REVISIONS, Requirements, run_revision, suite_environment, suite_version
from local.endpoint import EndpointServer

logger = logging.getLogger("local.conformance")
EXPECTED_FAILURES = Path(__file__).resolve().parent / "expected-failures.yaml"
OUT_DIR = ROOT / "build" / "conformance"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


@contextlib.contextmanager
def two_instances_behind_proxy(
    log_dir: Path, settings: dict[str, str] | None = None, fixtures: tuple[str, ...] = ("conformance",)
) -> Iterator[tuple[str, RoundRobinProxy]]:
    """Yield the suite's URL (``localhost``, for the DNS-rebinding scenario) and the proxy."""
    aws_port, proxy_port = free_port(), free_port()
    # The instances answer to the proxy's Host, as an instance behind a Function URL answers
    # to the URL's host; a foreign Host or Origin is refused.
    hosts = [f"{name}:{proxy_port}" for name in LOOPBACK_NAMES]
    instances: list[Instance] = []
    proxy_server: EndpointServer | None = None
    try:
        for name in ("a", "b"):  # b attaches to the emulator a owns: a must be serving first
            instance = start_instance(name, free_port(), aws_port, hosts, log_dir, settings=settings, fixtures=fixtures)
            instances.append(instance)
            instance.wait_ready()
        proxy = RoundRobinProxy([instance.base_url for instance in instances])
        proxy_server = EndpointServer(proxy, proxy_port)
        proxy_server.start()
        yield f"http://localhost:{proxy_port}/mcp", proxy
    finally:
        if proxy_server is not None:
            proxy_server.stop()
        for instance in reversed(instances):  # the attached one first, the emulator's owner last
            instance.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.conformance", description=__doc__)
    parser.add_argument("--revision", action="append", choices=REVISIONS, help="run only this revision (repeatable)")
    parser.add_argument("--expected", type=Path, default=EXPECTED_FAILURES, help="the expected-failures file")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where results and logs go")
    parser.add_argument(
        "--authorization",
        choices=("on", "off", "only"),
        default="on",
        help="the authorization-server scenarios against the OAuth facade (only: skip the server revisions)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    add_import_roots()  # the proxy is served like the endpoint (mcp_platform.transport.serving, in the layer)
    revisions = [] if args.authorization == "only" else args.revision or list(REVISIONS)
    # Everything that can be checked without servers is checked first.
    expected = load_expected(args.expected)
    foreign = sorted(set(expected) - set(REVISIONS))
    if foreign:
        raise SystemExit(f"{args.expected}: unknown revision(s) {', '.join(foreign)}")
    requirements = {revision: Requirements.load(revision) for revision in revisions}
    suite_environment()
    suite = f"@modelcontextprotocol/conformance@{suite_version()}"
    started = time.monotonic()
    verdicts: list[Verdict] = []
    crashed: list[str] = []
    counts: list[int] = []
    with contextlib.ExitStack() as servers:
        if revisions:
            url, proxy = servers.enter_context(two_instances_behind_proxy(args.out))
            served = served_tools(url)
        for revision in revisions:
            logger.info("%s --requirements %s against %s (round-robin over 2 instances)", suite, revision, url)
            run = run_revision(url, revision, args.out / revision)
            if run.crashed:
                crashed.append(f"{revision}: the suite exited with {run.returncode}; see {run.log}")
            verdicts.append(judge(requirements[revision], run.results, expected.get(revision, []), served))
        counts = list(proxy.counts) if revisions else []
    authorization = run_facade_scenarios(args.out / "authorization", suite) if args.authorization != "off" else None
    seconds = time.monotonic() - started
    if revisions:
        spread = f"({sum(counts)} requests: {counts})"
        print(f"\n{suite}, two instances behind a round-robin proxy {spread}, {seconds:.0f} s")
    for verdict in verdicts:
        print("\n".join(tally(verdict)))
    if authorization is not None:
        print(authorization.tally())
    for verdict in verdicts:
        print(f"\n{verdict.revision}:")
        print("\n".join(details(verdict, args.expected)))
    write_summary(args.out / "summary.json", summary(verdicts, suite, seconds, counts))
    problems = crashed + [
        f"{v.revision}: unexpected failures, stale entries or failing extension scenarios" for v in verdicts if not v.ok
    ]
    problems += authorization.problems() if authorization is not None else []
    print(f"\nresults: {args.out} (checks.json per scenario, suite.log per revision, instance logs)")
    if problems:
        print("\nFAILED: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"OK: every failure is expected ({args.expected})")
    return 0


def run_facade_scenarios(out: Path, suite: str) -> AuthorizationRun:
    """Two instances with the OAuth facade (its own emulator and development issuer) behind a
    round-robin proxy; the suite's authorization-server scenarios against it."""
    settings = {**FACADE_ENV, "LOCAL_OAUTH_PORT": str(free_port())}
    with two_instances_behind_proxy(out, settings=settings, fixtures=()) as (url, proxy):
        issuer = url.removesuffix("/mcp")
        logger.info("%s authorization --url %s (the OAuth facade, round-robin over 2 instances)", suite, issuer)
        run = run_authorization(issuer, out / "suite")  # the instances' logs stay in out
        logger.info("authorization scenarios: %d requests over the instances: %s", sum(proxy.counts), proxy.counts)
    return run


if __name__ == "__main__":
    sys.exit(main())
