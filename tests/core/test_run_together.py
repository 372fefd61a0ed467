"""`run_together`: a turn's tool calls run concurrently with TaskGroup semantics, one task fewer."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus._aio import run_together


async def test_results_come_in_order_and_the_calls_start_in_order() -> None:
    started: list[int] = []

    async def call(i: int, pause: float) -> int:
        started.append(i)
        await asyncio.sleep(pause)
        return i * 10

    assert await run_together([call(0, 0.02), call(1, 0), call(2, 0.01)]) == [0, 10, 20]
    assert started == [0, 1, 2]
    assert await run_together([]) == []
    assert await run_together([call(7, 0)]) == [70]


async def test_a_failure_elsewhere_cancels_the_first_call_at_once() -> None:
    never = asyncio.Event()
    seen: list[str] = []

    async def waits() -> None:
        try:
            await never.wait()
        except asyncio.CancelledError:
            seen.append("first cancelled")
            raise

    async def fails() -> None:
        await asyncio.sleep(0)
        raise LookupError("hook failed")

    with pytest.raises(LookupError, match="hook failed"):
        await asyncio.wait_for(run_together([waits(), fails()]), timeout=30)
    assert seen == ["first cancelled"]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # our own cancel was taken back
    await asyncio.sleep(0)  # and nothing is left pending on the caller


async def test_a_failure_of_the_first_cancels_and_awaits_the_others() -> None:
    unwound: list[str] = []

    async def fails() -> None:
        await asyncio.sleep(0.01)
        raise KeyError("first")

    async def slow(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # unwinding takes a step: it is still awaited
            unwound.append(name)

    with pytest.raises(KeyError, match="first"):
        await run_together([fails(), slow("a"), slow("b")])
    assert sorted(unwound) == ["a", "b"]


async def test_a_failure_while_waiting_for_a_later_call_cancels_that_one() -> None:
    seen: list[str] = []

    async def quick() -> str:
        return "done"

    async def hangs() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("hangs cancelled")
            raise

    async def fails() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("third")

    with pytest.raises(ValueError, match="third"):
        await asyncio.wait_for(run_together([quick(), hangs(), fails()]), timeout=30)
    assert seen == ["hangs cancelled"]


async def test_cancelling_the_caller_cancels_every_call() -> None:
    cancelled: list[int] = []
    entered = asyncio.Event()

    async def hangs(i: int) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    runner = asyncio.ensure_future(run_together([hangs(0), hangs(1), hangs(2)]))
    await entered.wait()
    await asyncio.sleep(0)  # the spawned calls start too
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert sorted(cancelled) == [0, 1, 2]


async def test_a_call_that_swallows_its_cancellation_still_ends_in_the_failure() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "kept going"
        return "unreachable"

    async def fails() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(run_together([stubborn(), fails()]), timeout=30)


class _Abort(BaseException):
    """Neither an `Exception` nor a cancellation: it must pass through as it is."""


async def test_a_base_exception_of_a_later_call_cancels_the_others_and_is_raised() -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("first cancelled")
            raise

    async def aborts() -> None:
        await asyncio.sleep(0)
        raise _Abort("stop")

    with pytest.raises(_Abort, match="stop"):
        await asyncio.wait_for(run_together([waits(), aborts()]), timeout=30)
    assert seen == ["first cancelled"]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_base_exception_of_the_first_call_cancels_and_awaits_the_others() -> None:
    unwound: list[str] = []

    async def aborts() -> None:
        await asyncio.sleep(0.01)
        raise _Abort("first")

    async def slow(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)
            unwound.append(name)

    with pytest.raises(_Abort, match="first"):
        await run_together([aborts(), slow("a"), slow("b")])
    assert sorted(unwound) == ["a", "b"]


async def test_cancelling_the_caller_stays_a_cancellation_of_the_caller() -> None:
    entered = asyncio.Event()
    cancelling: list[int] = []

    async def hangs() -> None:
        entered.set()
        await asyncio.Event().wait()

    async def quick() -> str:
        return "done"

    async def caller() -> None:
        try:
            await run_together([hangs(), quick(), quick()])
        except asyncio.CancelledError:
            task = asyncio.current_task()
            assert task is not None
            cancelling.append(task.cancelling())  # the outside request is not taken back
            raise

    runner = asyncio.ensure_future(caller())
    await entered.wait()
    await asyncio.sleep(0)  # the spawned calls finish first: only the caller's call is left
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert cancelling == [1]


async def test_a_failure_at_the_moment_the_caller_is_cancelled_ends_in_the_cancellation() -> None:
    runner: asyncio.Future[None] | None = None
    entered = asyncio.Event()

    async def hangs() -> None:
        entered.set()
        await asyncio.Event().wait()

    async def cancels_then_fails() -> None:
        await entered.wait()
        assert runner is not None
        runner.cancel()  # the outside cancellation, before the failure's own
        raise LookupError("lost in the cancellation")

    runner = asyncio.ensure_future(run_together([hangs(), cancels_then_fails()]))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(runner, timeout=30)


async def test_cancelling_the_caller_while_the_calls_unwind_after_a_failure() -> None:
    unwinding = asyncio.Event()
    release = asyncio.Event()
    unwound: list[str] = []

    async def fails() -> None:
        await asyncio.sleep(0)
        raise KeyError("first failure")

    async def slow_to_unwind() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            unwinding.set()
            await release.wait()  # still awaited after the caller's own cancellation
            unwound.append("slow")

    runner = asyncio.ensure_future(run_together([fails(), slow_to_unwind()]))
    await asyncio.wait_for(unwinding.wait(), timeout=30)
    runner.cancel()
    await asyncio.sleep(0)
    assert not runner.done()  # the group waits for its calls, as a TaskGroup does
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(runner, timeout=30)
    assert unwound == ["slow"]
