"""Reading provider answers for errors; the exception classes live in `toolnexus.errors`."""

from __future__ import annotations

from typing import Any

from toolnexus.errors import (
    NO_API_KEY_MESSAGE,
    MissingApiKey,
    ProviderConnectionError,
    ProviderError,
    RunCancelled,
    RunTimeout,
    provider_message_of,
)

__all__ = [
    "NO_API_KEY_MESSAGE",
    "MissingApiKey",
    "ProviderConnectionError",
    "ProviderError",
    "RunCancelled",
    "RunTimeout",
    "is_error_payload",
    "provider_message_of",
]


def is_error_payload(data: Any) -> bool:
    """A decoded body or stream event that is an error object rather than a response.

    `{"error": {...}}` / `{"error": "..."}` (OpenAI and most gateways) or Anthropic's
    `{"type": "error", ...}`; an `"error": null` next to a real response is not one.
    """
    if not isinstance(data, dict):
        return False
    error = data.get("error")
    return (bool(error) and isinstance(error, dict | str)) or data.get("type") == "error"
