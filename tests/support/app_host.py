"""An MCP Apps view rendered by the official host bridge in headless Chromium
(``local/clients/app_view_host.mjs``): what the view showed and asked the host for."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from local.conformance.suite import NODE_BIN
from tests.support.inspector import chromium_path
from tests.support.local_platform import ROOT

HOST_DRIVER = ROOT / "local" / "clients" / "app_view_host.mjs"
BROWSER_DEADLINE_S = 120


def render_view(html: str, folder: Path, **fixture: Any) -> dict[str, Any]:
    """Renders ``html`` behind the bridge, which sends it ``input`` (the tool's arguments) and
    ``result`` (its CallToolResult), answers its tools/call requests with ``answers`` in order,
    and runs ``steps`` (``{"wait": [selector, text]}``, ``{"click": selector}``); returns the
    driver's report: ``calls``, ``sizes``, ``teardown``. A step that never happens fails."""
    view = folder / "view.html"
    view.write_text(html)
    arguments = [str(NODE_BIN / "node"), str(HOST_DRIVER), "--view", str(view), "--chromium", str(chromium_path())]
    for name, value in fixture.items():
        arguments += [f"--{name}", json.dumps(value)]
    completed = subprocess.run(
        arguments, cwd=ROOT, capture_output=True, text=True, timeout=BROWSER_DEADLINE_S, check=False
    )
    results = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    assert completed.returncode == 0 and results, completed.stderr
    report: dict[str, Any] = json.loads(results[0].removeprefix("RESULT "))
    return report
