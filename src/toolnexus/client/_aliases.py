"""Type names for the client's options and events, and the run's status and limit values."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias, TypedDict

from toolnexus.client._events import MetricEvent, OnMetric
from toolnexus.types import Request

__all__ = [
    "LIMIT_COMPLETION",
    "LIMIT_MAX_TURNS",
    "LIMIT_TIMEOUT",
    "RUN_STATUSES",
    "RUN_STATUS_DONE",
    "RUN_STATUS_INCOMPLETE",
    "RUN_STATUS_PENDING",
    "ClientStyle",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "MetricEvent",
    "OnMetric",
    "WaitFor",
]

ClientStyle: TypeAlias = Literal["openai", "anthropic", "openai-responses"]
"""The wire a client speaks: OpenAI chat completions, Anthropic messages or OpenAI responses."""


class ErrorInfo(TypedDict, total=False):
    """What `on_error` is told about a failed LLM call: the HTTP `status` (an error answer) or
    the `error` raised (a network failure), the 0-based `attempt`, and whether it is
    `retryable` by default."""

    error: Any
    status: int
    attempt: int
    retryable: bool


ErrorTier: TypeAlias = Literal["retry", "fail"]
"""`on_error`'s verdict."""

ErrorClassifier: TypeAlias = Callable[[ErrorInfo], "ErrorTier | Awaitable[ErrorTier]"]
"""`create_client(on_error=...)`: decides whether a failed LLM call is retried."""

WaitFor: TypeAlias = Callable[[Request], Any]
"""`wait_for=`: answers a suspended tool's `Request` with an `Answer` (or `None`), sync or
async."""

RUN_STATUS_DONE = "done"
RUN_STATUS_PENDING = "pending"
RUN_STATUS_INCOMPLETE = "incomplete"
RUN_STATUSES = (RUN_STATUS_DONE, RUN_STATUS_PENDING, RUN_STATUS_INCOMPLETE)
"""The values of `RunResult.status`."""

LIMIT_MAX_TURNS = "maxTurns"
LIMIT_TIMEOUT = "timeout"
LIMIT_COMPLETION = "completion"
"""Values of `RunResult.limit` (which bound ended an incomplete run)."""
