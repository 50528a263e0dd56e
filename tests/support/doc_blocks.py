"""The fenced code blocks of a documentation page, what each is marked to be, and the shell
commands a block holds (tests/docs/test_page_blocks.py runs or checks them).

A block is marked by an HTML comment, the last non-blank line before its fence (invisible on
the site)::

    <!-- docs-test: module NAME [call | task JSON-ARGUMENTS] -->   a features module
    <!-- docs-test: pytest -->                                     test functions to run
    <!-- docs-test: policy FILE.cedar -->                          Cedar policies, validated as
                                                                   the page's FILE (MCP_POLICIES_DIR
                                                                   while its pytest blocks run)
    <!-- docs-test: illustrative REASON -->                        shown, not run, and why

Unmarked blocks are checked by their language: shell blocks command by command, JSON blocks
parsed, and a block that only includes a file (``--8<-- "path"``, pymdownx.snippets) is that
file, tested where the file is.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<spec>.*?)\s*-->\s*$")
SNIPPET = re.compile(r'^--8<--\s+"(?P<path>[^"]+)"$')
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
RULE = re.compile(r"^(?P<targets>[a-z][A-Za-z0-9_-]*(?: [a-z][A-Za-z0-9_-]*)*)\s*:(?!=)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """The fence's line number on its page (1-based)."""
    language: str
    code: str
    marker: str | None
    """What the ``docs-test`` comment before the fence says, if there is one."""

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT / 'docs')}:{self.line}"

    @property
    def runner(self) -> str:
        """The marker's first word, else what the language implies ("" when nothing does)."""
        if self.marker:
            return self.marker.split()[0]
        if self.snippet is not None:
            return "snippet"
        if self.language in SHELL_LANGUAGES:
            return "commands"
        if self.language == "json":
            return "json"
        return ""

    @property
    def arguments(self) -> str:
        """What the marker says after the runner's name."""
        return self.marker.partition(" ")[2].strip() if self.marker else ""

    @property
    def snippet(self) -> str | None:
        """The path a block that only includes a file names (pymdownx.snippets)."""
        match = SNIPPET.match(self.code.strip())
        return match["path"] if match else None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").splitlines()
        previous = next((line for line in reversed(before) if line.strip()), "")
        marker = MARKER.match(previous)
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                language=match["language"],
                code=match["code"],
                marker=marker["spec"] if marker else None,
            )
        )
    return found


@dataclass(frozen=True)
class Command:
    text: str
    """The command as written (continuation lines included), for a shell to run."""
    argv: list[str]
    """Its words, without a comment and without leading ``NAME=value`` assignments."""
    comment: str
    """What follows ``#`` on its last line ("" when nothing does)."""


def commands(code: str) -> list[Command]:
    """The commands of a shell block: continuation lines joined, a quote left open carried on to
    the next line (as a shell reads it), comment lines left out."""
    found: list[Command] = []
    pending: list[str] = []
    for line in code.splitlines():
        pending.append(line)
        text = "\n".join(pending)
        if text.rstrip().endswith("\\"):
            continue
        try:
            words = shlex.split(text.replace("\\\n", " "), comments=True)  # a continuation is a space
        except ValueError:  # a quote still open: the command goes on
            continue
        pending = []
        if not words:
            continue  # a blank or comment line
        while words and ENV_ASSIGNMENT.match(words[0]):
            words.pop(0)
        found.append(Command(text=text, argv=words, comment=_trailing_comment(line)))
    if pending:
        raise ValueError(f"unterminated command: {' '.join(pending)!r}")
    return found


def _trailing_comment(line: str) -> str:
    """The comment at the end of a command's last line: after a ``#`` that starts a word outside
    quotes, as a shell reads it."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index + 1 :].strip()
    return ""


def make_targets(makefile: Path = ROOT / "Makefile") -> dict[str, list[str]]:
    """Each target of the Makefile and its recipe lines."""
    targets: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in makefile.read_text().splitlines():
        if line.startswith("\t"):
            if current is not None:
                current.append(line.strip())
            continue
        rule = RULE.match(line)
        if rule:
            current = []
            for target in rule["targets"].split():
                targets[target] = current
        elif line.strip() and not line.startswith("#"):
            current = None  # a variable or a pattern rule: not a target a page can name
    return targets
