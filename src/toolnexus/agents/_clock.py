"""The runtime's clock: every timer (waits, close grace, wall budgets, heartbeats) goes here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = ["AsyncioClock", "Clock", "TimerHandle"]


@runtime_checkable
class TimerHandle(Protocol):
    def cancel(self) -> Any: ...


@runtime_checkable
class Clock(Protocol):
    """Monotonic time in seconds, a sleep, and a one-shot timer. Tests inject a virtual one."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> TimerHandle: ...


class AsyncioClock:
    """The running event loop's clock."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, seconds), callback)
