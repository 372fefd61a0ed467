"""Wait for a condition by polling with a deadline (never a bare sleep)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any


async def wait_until(
    condition: Callable[[], Any | Awaitable[Any]],
    *,
    timeout: float = 10.0,
    check_every: float = 0.01,
    raise_on_timeout: bool = True,
) -> Any:
    """Poll `condition` (sync or async) until it is truthy; return its value.

    After `timeout` seconds: raise `TimeoutError`, or return the last value when
    `raise_on_timeout` is false.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            if raise_on_timeout:
                raise TimeoutError(f"condition not met within {timeout}s")
            return value
        await asyncio.sleep(check_every)
