"""Compact JSON, the contract's one serialisation (same bytes as JavaScript `JSON.stringify`)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """`json.dumps(value, separators=(",", ":"), ensure_ascii=False)` on plain JSON data."""
    return _encoder.encode(value)


_request_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_json(value: Any) -> str:
    """`compact_json` for a body sent to a strict reader: a NaN or Infinity raises `ValueError`
    instead of being written as `NaN`/`Infinity`, which no JSON parser has to accept."""
    return _request_encoder.encode(value)


def _default(value: Any) -> Any:
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # pydantic models
        return model_dump(mode="json")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "value") and hasattr(type(value), "__members__"):  # Enum
        return value.value
    return str(value)


_rich_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_default)


def to_compact_json(value: Any) -> str:
    """Compact JSON of any tool return value: pydantic models, dataclasses, enums, sets..."""
    return _rich_encoder.encode(value)
