"""The default conversation store: a dict in this process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from toolnexus.client.memory._lease import KeyedLock, LockedLease
from toolnexus.client.memory._protocol import ConversationLease, Messages

__all__ = ["InMemoryConversationStore"]


def _copy(value: Any) -> Any:
    """Copy the containers of JSON-shaped data (dicts and lists); leave the leaves shared."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class InMemoryConversationStore:
    """The default store: a dict living as long as the client.

    `get` and `save` copy every list and dict, so mutating a saved or returned transcript never
    changes what the store holds. Its claims are an in-process lock per id, so any number of
    clients sharing one instance never lose a turn.
    """

    def __init__(self) -> None:
        self._conversations: dict[str, Messages] = {}
        self._locks = KeyedLock()

    async def get(self, id: str) -> Messages | None:
        messages = self._conversations.get(id)
        return None if messages is None else _copy(messages)

    async def save(self, id: str, messages: Messages) -> None:
        self._conversations[id] = [_copy(m) for m in messages]

    async def delete(self, id: str) -> None:
        """Forget the transcript of `id` (no error when there is none)."""
        self._conversations.pop(id, None)

    @contextlib.asynccontextmanager
    async def claim(self, id: str) -> AsyncIterator[ConversationLease]:
        """Hold `id` against every other claim on this instance for the `async with` block."""
        async with self._locks.hold(id):
            yield LockedLease(self, id)
