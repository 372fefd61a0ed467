"""Retries of one LLM call: which failures retry, how long to wait, the `on_error` classifier."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from toolnexus._aio import call_maybe_async
from toolnexus.client._errors import ProviderError, RunCancelled, RunTimeout
from toolnexus.client._scope import RunScope

__all__ = ["RETRYABLE_STATUSES", "RetryPolicy", "parse_retry_after"]

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
_MAX_RETRY_AFTER = 2147483647


def parse_retry_after(value: str | None) -> int | None:
    """Seconds from a delay-seconds `Retry-After` value; `None` for every other form."""
    if value is None:
        return None
    text = value.strip()
    # str.isdigit() accepts non-ASCII digits; the contract wants ASCII 0-9 only.
    if not text or not text.isascii() or not text.isdigit():
        return None
    seconds = int(text)
    return seconds if seconds <= _MAX_RETRY_AFTER else None


def _retry_after_header(headers: Mapping[str, str] | None) -> str | None:
    if headers is None:
        return None
    value = headers.get("retry-after")  # httpx headers are case-insensitive
    if value is None and not hasattr(headers, "multi_items"):
        for key, val in headers.items():
            if key.lower() == "retry-after":
                return val
    return value


class RetryPolicy:
    """How one client retries: `retries` extra attempts, backoff base, statuses, classifier."""

    __slots__ = ("base_ms", "inline", "on_error", "retries", "statuses", "transport_errors")

    def __init__(
        self,
        *,
        retries: int,
        base_ms: float,
        extra_statuses: Iterable[int] | None,
        on_error: Callable[[dict[str, Any]], Any] | None,
        transport_errors: tuple[type[BaseException], ...],
        inline: bool = False,
    ) -> None:
        self.retries = retries
        self.base_ms = base_ms
        self.statuses = RETRYABLE_STATUSES | frozenset(int(s) for s in extra_statuses or ())
        self.on_error = on_error
        self.transport_errors = transport_errors
        # Attempts run in the caller's task (`RunScope.inline`): the transport unwinds at once.
        self.inline = inline

    def backoff_s(self, attempt: int) -> float:
        return float(self.base_ms * (2.0**attempt) + random.uniform(0, 100)) / 1000

    async def _decide(self, info: dict[str, Any]) -> bool:
        if self.on_error is None:
            return bool(info["retryable"])
        return bool(await call_maybe_async(self.on_error, info) == "retry")

    async def call(self, attempt: Callable[[], Awaitable[T]], scope: RunScope) -> T:
        """Run `attempt` until it succeeds, a failure is final, or the run is aborted."""
        a = 0
        while True:
            try:
                if self.inline:
                    return await scope.inline(attempt())
                return await scope.race(attempt())
            except (RunTimeout, RunCancelled):
                raise  # aborts are never retried nor classified
            except ProviderError as exc:
                info: dict[str, Any] = {
                    "status": exc.status,
                    "attempt": a,
                    "retryable": exc.status in self.statuses,
                }
                after = parse_retry_after(_retry_after_header(exc.headers))
                if not await self._decide(info) or a >= self.retries:
                    raise
                delay = float(after) if after is not None else self.backoff_s(a)
            except self.transport_errors as exc:
                info = {"error": exc, "attempt": a, "retryable": True}
                if not await self._decide(info) or a >= self.retries:
                    raise
                delay = self.backoff_s(a)
            if delay > 0:
                await scope.inline(asyncio.sleep(delay))
            else:
                scope.check()
            a += 1
