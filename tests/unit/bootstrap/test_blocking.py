"""The blocking-call strategies, chosen at the composition root: where each runs the call, that
results and errors come back unchanged, and which one a process gets."""

from __future__ import annotations

import asyncio
import threading

import pytest

from mcp_platform.application.blocking import IN_THREAD, INLINE, Blocking, Inline, InThread
from mcp_platform.bootstrap.runtime import blocking_strategy


def _thread_of_call(strategy: Blocking) -> tuple[threading.Thread, threading.Thread]:
    async def main() -> tuple[threading.Thread, threading.Thread]:
        ran_on = await strategy(threading.current_thread)
        return threading.current_thread(), ran_on

    return asyncio.run(main())


def test_in_thread_runs_the_call_off_the_event_loops_thread() -> None:
    loop_thread, ran_on = _thread_of_call(InThread())
    assert ran_on is not loop_thread


def test_inline_runs_the_call_on_the_event_loops_thread() -> None:
    loop_thread, ran_on = _thread_of_call(Inline())
    assert ran_on is loop_thread


@pytest.mark.parametrize("strategy", [IN_THREAD, INLINE], ids=["in thread", "inline"])
def test_arguments_results_and_errors_pass_through(strategy: Blocking) -> None:
    def divide(a: int, *, by: int) -> float:
        return a / by

    assert asyncio.run(strategy(divide, 6, by=3)) == 2.0
    with pytest.raises(ZeroDivisionError):
        asyncio.run(strategy(divide, 1, by=0))


def test_in_thread_leaves_the_loop_free_while_the_call_waits() -> None:
    # Given a blocking call that waits until the loop has run something else
    async def main() -> bool:
        loop_ran = threading.Event()
        call = asyncio.ensure_future(IN_THREAD(loop_ran.wait, 5))
        await asyncio.sleep(0)  # the loop serves another request meanwhile
        loop_ran.set()
        return await call

    # Then it returns as soon as the loop ran (inline, it would have waited out its 5 s)
    assert asyncio.run(main()) is True


def test_a_lambda_process_runs_blocking_calls_inline_any_other_in_a_thread() -> None:
    assert blocking_strategy({"AWS_LAMBDA_FUNCTION_NAME": "endpoint"}) is INLINE
    assert blocking_strategy({}) is IN_THREAD
