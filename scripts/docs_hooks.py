"""MkDocs hooks: pages that are rendered from the code, so they cannot drift from it.

``<!-- context-keys -->`` in a page becomes the table of every CDK context key, its default and
its meaning (stacks/config.py DEFAULTS, stacks/context_docs.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# MkDocs restores sys.path once a hook module is loaded: what it needs is imported now.
for path in (ROOT, ROOT / "layers" / "platform" / "python"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
from stacks.context_docs import markdown_table  # noqa: E402

CONTEXT_KEYS_MARKER = "<!-- context-keys -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(CONTEXT_KEYS_MARKER, markdown_table()) if CONTEXT_KEYS_MARKER in markdown else markdown
