"""The exceptions a run raises: provider failures, the run deadline, cancellation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "NO_API_KEY_MESSAGE",
    "MissingApiKey",
    "ProviderError",
    "RunCancelled",
    "RunTimeout",
    "is_error_payload",
    "provider_message_of",
]

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
    """`error.message` of a JSON error body when present, else the body text cut to 500 chars.

    `""` for an empty body (the error then reads just `LLM <status>`).
    """
    if not body.strip():
        return ""
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body[:_BODY_CUT]
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else body[:_BODY_CUT]


def is_error_payload(data: Any) -> bool:
    """A decoded body or stream event that is an error object rather than a response.

    `{"error": {...}}` / `{"error": "..."}` (OpenAI and most gateways) or Anthropic's
    `{"type": "error", ...}`; an `"error": null` next to a real response is not one.
    """
    if not isinstance(data, dict):
        return False
    error = data.get("error")
    return (bool(error) and isinstance(error, dict | str)) or data.get("type") == "error"


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
