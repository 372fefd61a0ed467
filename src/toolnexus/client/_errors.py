"""The exceptions a run raises: provider failures, the run deadline, cancellation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NO_API_KEY_MESSAGE", "MissingApiKey", "ProviderError", "RunCancelled", "RunTimeout"]

NO_API_KEY_MESSAGE = (
    "No API key: set api_key or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY"
)

_BODY_CUT = 500


class ProviderError(Exception):
    """The LLM provider answered with an error (non-2xx, or an error-shaped 2xx body).

    `status` is the HTTP status, `body` the response text, `message` the whole message
    (`LLM <status>: <provider message>`) and `provider_message` the provider's own words.
    """

    def __init__(
        self,
        status: int,
        body: str,
        provider_message: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if provider_message is None:
            provider_message = provider_message_of(body)
        self.status = status
        self.body = body
        self.provider_message = provider_message
        # The response headers (rate-limit details, `Retry-After`); `None` for a stream error.
        self.headers = headers
        self.message = f"LLM {status}: {provider_message}" if provider_message else f"LLM {status}"
        super().__init__(self.message)


def provider_message_of(body: str) -> str:
    """`error.message` of a JSON error body when present, else the body text cut to 500 chars."""
    if not body:
        return ""
    try:
        import json

        data: Any = json.loads(body)
    except ValueError:
        return body[:_BODY_CUT]
    found = error_text(data)
    return found if found is not None else body[:_BODY_CUT]


def error_text(data: Any) -> str | None:
    """The message of an error-shaped payload (`{"error": {"message": …}}` or `{"error": "…"}`)."""
    if not isinstance(data, dict):
        return None
    err = data.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        if isinstance(msg, str) and msg:
            return msg
        kind = err.get("type") or err.get("code")
        return str(kind) if kind else "error"
    if isinstance(err, str) and err:
        return err
    return None


class MissingApiKey(ValueError):
    """No API key was given and none of the environment variables is set."""

    def __init__(self) -> None:
        super().__init__(NO_API_KEY_MESSAGE)


class RunTimeout(TimeoutError):
    """The run's `timeout_ms` deadline passed (message `run timeout after <ms>ms`)."""

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(f"run timeout after {_ms_text(timeout_ms)}ms")


class RunCancelled(Exception):
    """The run's `cancel` event was set."""

    def __init__(self, message: str = "run cancelled") -> None:
        super().__init__(message)


def _ms_text(ms: float) -> str:
    return str(int(ms)) if float(ms).is_integer() else str(ms)
