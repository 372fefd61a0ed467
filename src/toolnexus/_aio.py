"""Small async helpers: call sync-or-async callbacks, run blocking work off the event loop."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call `fn(*args)`; await the result when it is awaitable. Sync callables run inline."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


async def call_in_thread_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Like `call_maybe_async`, but a sync callable runs in a worker thread (it may block)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        return await result
    return result
