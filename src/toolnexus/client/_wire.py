"""What every wire dialect shares: the parsed assistant turn, URL joining, header merging."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolnexus.adapters import ToolCall
from toolnexus.client._errors import ProviderError, error_text

__all__ = ["Turn", "append_path", "as_int", "decode_event", "merge_headers"]


@dataclass(slots=True)
class Turn:
    """One assistant turn, parsed from a response or assembled from a stream."""

    message: dict[str, Any]  # the transcript entry, as the provider returned it
    text: str
    calls: list[ToolCall]
    usage: dict[str, int] | None  # this call's normalised usage; `None` when none was reported
    finish_reason: str | None
    raw: Any


def append_path(base_url: str, path: str) -> str:
    """`base_url` with one trailing `/` removed and `path` appended; a query string is kept."""
    parts = urlsplit(base_url)
    base_path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    return urlunsplit(parts._replace(path=base_path + path))


def url_path(base_url: str) -> str:
    path = urlsplit(base_url).path
    return path[:-1] if path.endswith("/") else path


def merge_headers(library: Mapping[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The library's headers, then `extra`; an extra header replaces one of the same name."""
    if not extra:
        return dict(library)
    overridden = {k.lower() for k in extra}
    out = {k: v for k, v in library.items() if k.lower() not in overridden}
    out.update(extra)
    return out


def as_int(value: Any) -> int:
    """A token count from provider data; anything unusable counts 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def decode_event(status: int, data: str) -> Any:
    """Decode one SSE `data:` payload; an error event or bad JSON raises `ProviderError`."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise ProviderError(status, data, f"malformed stream event ({exc})") from None
    message = error_text(obj)
    if message is not None or (isinstance(obj, dict) and obj.get("type") == "error"):
        raise ProviderError(status, data, message or "error event")
    return obj
