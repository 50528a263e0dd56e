"""The suite's authorization-server scenarios against the local OAuth facade (``make conformance``).

``npx conformance authorization --url ISSUER`` runs ``authorization-server-metadata-endpoint``
and ``authorization-code-grant`` (in that order: the second reads the first's metadata). The
issuer is the facade of two endpoint instances started with ``MCP_AUTH=oauth
MCP_OAUTH_FACADE=1`` behind a round-robin proxy (every request to the next instance), in front
of the development issuer. The code grant needs a registered client and a person at a browser:
this module registers one by RFC 7591 (redirect URI ``http://127.0.0.1:<port>/callback``, the
suite's callback server), and a scripted browser (:mod:`local.oauth_browser`) opens the URL the
suite prints, approves the consent page, signs in on the development issuer's login page and
lets the last redirect reach the suite. The run fails unless every check of both scenarios is a
success.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx

from local.bootstrap import LOOPBACK, ROOT
from local.conformance.instances import free_port
from local.conformance.suite import Check, suite_environment
from local.oauth_browser import ScriptedBrowser

logger = logging.getLogger(__name__)

SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")
FACADE_ENV = {"MCP_AUTH": "oauth", "MCP_OAUTH_FACADE": "1", "MCP_OAUTH_SCOPES": "mcp:tools"}
_RESULT_DIR = re.compile(r"^authorization-server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
CALLBACK_READY = "Callback server started"


@dataclass(frozen=True)
class AuthorizationRun:
    returncode: int
    results: dict[str, list[Check]]
    log: Path
    browser_error: str = ""

    def problems(self) -> list[str]:
        found = [f"authorization: the suite exited with {self.returncode}; see {self.log}"] if self.returncode else []
        if self.browser_error:
            found.append(f"authorization: the scripted browser failed: {self.browser_error}")
        for scenario in SCENARIOS:
            checks = self.results.get(scenario)
            if not checks:
                found.append(f"authorization: {scenario} produced no result")
                continue
            for check in checks:
                status, name, message = check.get("status"), check.get("id"), check.get("errorMessage")
                if status != "SUCCESS":
                    found.append(f"authorization: {scenario} {status} {name}: {message}")
        return found

    def tally(self) -> str:
        checks = [check for scenario in SCENARIOS for check in self.results.get(scenario, [])]
        passed = sum(check.get("status") == "SUCCESS" for check in checks)
        return (
            f"authorization server (the OAuth facade): {passed}/{len(checks)} checks pass in {len(SCENARIOS)} scenarios"
        )


def run_authorization(issuer: str, out_dir: Path, timeout_s: float = 300) -> AuthorizationRun:
    """Register a client, run both scenarios, drive the browser step; results under ``out_dir``."""
    env = suite_environment()
    npx = shutil.which("npx", path=env["PATH"])
    if npx is None:
        raise SystemExit("npx is not on PATH: install Node.js (npm) first")
    results_dir = out_dir / "results"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    results_dir.mkdir(parents=True)
    port = free_port()
    redirect_uri = f"http://{LOOPBACK}:{port}/callback"
    client_id = register_client(issuer, redirect_uri)
    command = [npx, "--no-install", "conformance", "authorization", "--url", issuer, "--client-id", client_id]
    command += ["--port", str(port), "--resource", f"{issuer}/mcp", "-o", str(results_dir)]
    log = out_dir / "suite.log"
    failures: list[str] = []
    with log.open("w") as output:
        process = subprocess.Popen(  # noqa: S603 - the pinned suite from node_modules
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        timer = threading.Timer(timeout_s, process.kill)
        timer.start()
        try:
            browser = _watch(process, output, issuer, redirect_uri, failures)
            returncode = process.wait()
        finally:
            timer.cancel()
        if browser is not None:
            browser.join(30)
    return AuthorizationRun(returncode, load_results(results_dir), log, "; ".join(failures))


def register_client(issuer: str, redirect_uri: str) -> str:
    body = {
        "client_name": "MCP conformance suite",
        "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": "none",
    }
    response = httpx.post(f"{issuer}/register", json=body, timeout=30)
    if response.status_code != 201:
        raise SystemExit(f"registering the suite's client at {issuer} failed: {response.status_code} {response.text}")
    return str(response.json()["client_id"])


def _watch(
    process: subprocess.Popen[str], output: object, issuer: str, redirect_uri: str, failures: list[str]
) -> threading.Thread | None:
    """Copy the suite's output to the log; once it has printed the authorization URL and its
    callback server listens, the browser goes."""
    authorize_url = ""
    listening = False
    browser: threading.Thread | None = None
    assert process.stdout is not None
    for line in process.stdout:
        output.write(line)  # type: ignore[attr-defined]
        text = line.strip()
        if text.startswith(f"{issuer}/authorize?"):
            authorize_url = text
        listening = listening or CALLBACK_READY in text
        if authorize_url and listening and browser is None:
            browser = threading.Thread(target=_browse, args=(authorize_url, redirect_uri, failures), daemon=True)
            browser.start()
    return browser


def _browse(url: str, redirect_uri: str, failures: list[str]) -> None:
    try:
        ScriptedBrowser().sign_in(url, redirect_uri, deliver=True)
    except Exception as error:  # reported with the run: the suite then times out or fails the check
        logger.exception("scripted browser failed")
        failures.append(f"{type(error).__name__}: {error}")


def load_results(results_dir: Path) -> dict[str, list[Check]]:
    """The last result of each scenario (the suite re-runs the metadata one for the code grant)."""
    results: dict[str, list[Check]] = {}
    for path in sorted(results_dir.glob("*/checks.json")):
        match = _RESULT_DIR.match(path.parent.name)
        if match is None:
            raise ValueError(f"unexpected result directory {path.parent.name!r} (suite output layout changed?)")
        results[match["scenario"]] = json.loads(path.read_text())
    return results
