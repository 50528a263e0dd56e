"""`python -m local` (make dev) and `python -m local --attach` (make dev-second)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from local.bootstrap import LocalOptions, add_import_roots, isolate_from_real_aws
from local.fixtures import FIXTURE_PACKS

logger = logging.getLogger("local")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local", description=__doc__)
    parser.add_argument(
        "--attach",
        action="store_true",
        help="start a second endpoint (MCP_PORT, default 8001) on the emulator a running `make dev` owns",
    )
    parser.add_argument(
        "--fixtures",
        action="append",
        default=[],
        choices=sorted(FIXTURE_PACKS),
        help="also serve a fixture pack (conformance: the tools the MCP conformance suite calls)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Per-request lines from the emulator and the readiness probe would drown the useful output.
    for noisy in ("werkzeug", "httpx", "botocore.credentials"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    options = LocalOptions.from_env(attach=args.attach, fixtures=tuple(args.fixtures))
    # Before anything imports boto3: no real AWS credentials or endpoints can be picked up.
    isolate_from_real_aws(options)
    add_import_roots()

    from local.banner import render
    from local.emulator import EmulatorNotRunning
    from local.platform import Running, start
    from mcp_platform.config import ConfigError

    stop = threading.Event()
    serving = threading.Event()
    holder: list[Running] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            return  # already stopping; a second Ctrl-C must not interrupt the clean-up
        stop.set()
        if not serving.is_set():
            raise KeyboardInterrupt  # still starting: unwind start() and clean up below

    def on_report(_signum: int, _frame: FrameType | None) -> None:
        for running in holder:
            running.report_health()  # logged by the health thread, not in the handler

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGUSR1, on_report)
    try:
        running = start(options, running_hook=holder.append)
        serving.set()
        print(render(running), flush=True)
        while not stop.wait(0.5):  # a timed wait keeps the main thread responsive to signals
            pass
        print("stopping: endpoint, pollers, emulator ...", flush=True)
    except KeyboardInterrupt:
        print("interrupted during start-up; cleaning up", flush=True)
    except ConfigError as error:  # a bad setting or policy: named, without a traceback
        print(f"configuration error: {error}", file=sys.stderr)
        return 1
    except EmulatorNotRunning as error:
        print(f"{error}\nIs `make dev` running with LOCAL_AWS_PORT={options.aws_port}?", file=sys.stderr)
        return 1
    finally:
        serving.set()  # from here on, signals only set the flag
        stop.set()
        for running in holder:
            running.shutdown()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    # Everything is stopped by now and the emulator's data lives only in memory: flush and exit
    # at once. A normal interpreter exit would first garbage-collect that whole heap, seconds
    # once the emulator holds a few hundred MB, and Ctrl-C must not take that long.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
