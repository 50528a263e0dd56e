"""The endpoint's tools, resources and prompts: one module per feature (or per small family),
discovered at start-up.

Add a tool by adding a module here with a function decorated with ``@tool`` (``from mcp_platform
import ToolContext, tool``; README "Adding a tool"), and its test (``mcp_platform.testing.
ToolHarness``, as in ``tests/app/test_starter_app.py``, the app's own tests, which also prove every
module is discovered). Third-party packages the modules import go in ``requirements.txt`` here
(``make setup`` installs them; ``make lock`` locks them into the layer).

The platform's own tests never use this folder (they serve ``tests/support/platform_tools``): it
can be replaced or emptied without breaking them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_tools._bookmark_store import Bookmarks

if TYPE_CHECKING:
    from mcp_platform import AppEnvironment


@dataclass(frozen=True)
class Deps:
    """What this app's tools reach besides the platform (``ctx.services.deps``, typed by
    ``ToolContext[Deps]``)."""

    bookmarks: Bookmarks | None
    """None where the table is not configured (a process started without the app's resources)."""


def build_deps(app: AppEnvironment) -> Deps:
    """Built once per process by the platform, for the endpoint and the task worker alike, from
    the function's environment (``app_resources.py`` names the table there)."""
    table = app.environ.get("BOOKMARKS_TABLE")
    return Deps(bookmarks=Bookmarks(app.client("dynamodb"), table) if table else None)
