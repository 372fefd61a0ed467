"""Request bodies checked against the official SDKs' request types: the oracle of the wire.

`check_request(style, body)` validates one body the client sent against the `openai` SDK's
`CompletionCreateParams` (chat) or `ResponseCreateParams` (Responses), or the `anthropic` SDK's
`MessageCreateParams`, with a pydantic `TypeAdapter`, and raises `AssertionError` listing every
field that does not fit. Keys the SDK types do not declare are not errors: providers take
extras (reasoning fields echoed back, `extra_content`), and the SDKs pass them through too.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from anthropic.types.message_create_params import MessageCreateParams
from openai.types.chat.completion_create_params import CompletionCreateParams
from openai.types.responses.response_create_params import ResponseCreateParams
from pydantic import TypeAdapter, ValidationError

__all__ = ["check_request"]

_TYPES: dict[str, Any] = {
    "openai": CompletionCreateParams,
    "anthropic": MessageCreateParams,
    "openai-responses": ResponseCreateParams,
}


@functools.cache
def _adapter(style: str) -> TypeAdapter[Any]:
    return TypeAdapter(_TYPES[style])


def _drain(value: Any) -> None:
    """Validate what pydantic left lazy: the SDKs type arrays as `Iterable[...]`, which a
    `TypeAdapter` checks only as they are iterated."""
    if isinstance(value, dict):
        for item in value.values():
            _drain(item)
    elif isinstance(value, list | tuple | Iterator):
        for item in value:
            _drain(item)


def check_request(style: str, body: Any) -> None:
    """Raise `AssertionError` unless `body` is a valid `style` request per the official SDK."""
    try:
        _drain(_adapter(style).validate_python(body, strict=False))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10]
        )
        raise AssertionError(
            f"the {style} request body does not fit the SDK type: {problems}"
        ) from None
