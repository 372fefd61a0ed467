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
