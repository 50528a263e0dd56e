"""Admission of values a request will have stored: refused before any write, never after.

What a request keeps (a tools/call's arguments, its progress token, what initialize declared, a
client's answers) must be a value the platform's store can keep as sent. Which values those are,
and their size as kept, are the store's rules: the protocol asks a :class:`Storability` (handed
in by the application, which knows where things are kept) and refuses what it rejects with a
message naming where the value is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Inadmissible(ValueError):
    """A value that cannot be stored as sent; ``path`` says where it is (``limit``, ``a.b[2]``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class TooLarge(Inadmissible):
    """A storable value over the budget of where it is kept."""

    def __init__(self, path: str, size: int, budget: int) -> None:
        super().__init__(path, f"{size} bytes as stored; at most {budget} are kept")
        self.size = size
        self.budget = budget


class Storability(Protocol):
    """Whether a value can be kept as sent, and its size as kept (in bytes)."""

    def measure(self, value: object, path: str = "") -> int:
        """The stored size of ``value``; :class:`Inadmissible` (naming ``path``) when it cannot be
        kept as sent."""
        ...

    def measure_entries(self, entries: Mapping[str, object], path: str) -> tuple[int, dict[str, int]]:
        """:meth:`measure` of a map, with each entry's own stored size (keyed like ``entries``),
        so a budget's refusal can name the largest."""
        ...


def check_within(storability: Storability, value: object, path: str, budget: int) -> int:
    """Storable, and at most ``budget`` bytes as stored (:class:`TooLarge`); returns the size."""
    size = storability.measure(value, path)
    if size > budget:
        raise TooLarge(path, size, budget)
    return size


MAX_PROGRESS_TOKEN_BYTES = 256
"""A progress token is an identifier the server echoes (and a task keeps): a short one."""


def check_progress_token(storability: Storability, token: object, path: str = "_meta.progressToken") -> None:
    """A progress token is a string or a number (spec), storable, and short."""
    if isinstance(token, bool) or not isinstance(token, (str, int, float)):
        raise Inadmissible(path, "must be a string or a number")
    if storability.measure(token, path) > MAX_PROGRESS_TOKEN_BYTES:
        raise Inadmissible(path, f"longer than {MAX_PROGRESS_TOKEN_BYTES} bytes")
