"""A deadline that costs nothing when the awaited work finishes without waiting.

``asyncio.timeout_at`` schedules (and then cancels) a loop timer on every use. Two awaits on the
request path run under one (the body's ``receive()``, the tool's run) and usually finish
without ever suspending: uvicorn's ``receive()`` returns at once when the body is already
buffered, and a tool that needs no I/O returns on its first step. :func:`first_step` runs a
coroutine up to its first suspension; only when it does suspend is the rest awaited, through
:class:`Resumed`, under the deadline. A coroutine that never suspends cannot be interrupted by
a timeout anyway (cancellation is delivered at a suspension point), so the outcome is the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Generator
from types import CoroutineType
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class Resumed(Generic[T]):
    """Awaits the rest of a coroutine that :func:`first_step` left suspended, exactly as
    ``await coro`` would have (values, exceptions and cancellation pass straight through)."""

    __slots__ = ("_coro", "_yielded")

    def __init__(self, coro: Coroutine[Any, Any, T], yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, T]:
        coro, value = self._coro, self._yielded
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # cancellation (a timeout), or anything thrown in
                try:
                    value = coro.throw(exc)
                except StopIteration as stop:
                    return cast(T, stop.value)
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as stop:
                    return cast(T, stop.value)


def first_step(awaitable: Awaitable[T]) -> tuple[bool, Any]:
    """``(True, result)`` when ``awaitable`` finished without suspending, else ``(False, rest)``
    where ``rest`` is to be awaited (a :class:`Resumed`, or the awaitable itself when it is not
    a coroutine). Exceptions raised before the first suspension propagate."""
    if type(awaitable) is not CoroutineType:  # exact type: faster than an ABC check
        return False, awaitable
    try:
        yielded = awaitable.send(None)
    except StopIteration as stop:
        return True, stop.value
    return False, Resumed(awaitable, yielded)
