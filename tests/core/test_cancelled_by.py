"""`cancelled_by`: work bounded by a cancel signal in the caller's own task."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from toolnexus._aio import CancelSignal, Signalled, cancelled_by


async def test_setting_the_signal_cancels_the_work_and_leaves_the_task_uncancelled() -> None:
    signal = CancelSignal()
    asyncio.get_running_loop().call_soon(signal.set)
    with pytest.raises(Signalled):
        await cancelled_by(asyncio.sleep(30), signal)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # no cancellation left over for the next await


async def test_work_that_absorbs_the_cancellation_is_cancelled_all_the_same() -> None:
    signal = CancelSignal()

    async def stubborn() -> str:
        with contextlib.suppress(asyncio.CancelledError):  # a library that answers anyway
            await asyncio.sleep(30)
        return "finished"

    asyncio.get_running_loop().call_soon(signal.set)
    with pytest.raises(Signalled):
        await cancelled_by(stubborn(), signal)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    async with asyncio.timeout(5):  # the task's own deadlines still work afterwards
        await asyncio.sleep(0.01)


async def test_the_callers_own_cancellation_stays_its_own() -> None:
    signal = CancelSignal()
    started = asyncio.Event()

    async def caller() -> None:
        started.set()
        await cancelled_by(asyncio.sleep(30), signal)

    task = asyncio.create_task(caller())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not signal.is_set()


async def test_work_that_finishes_first_keeps_its_result() -> None:
    signal = CancelSignal()
    assert await cancelled_by(asyncio.sleep(0, "done"), signal) == "done"
    signal.set()  # set afterwards: nothing is cancelled
    await asyncio.sleep(0)
