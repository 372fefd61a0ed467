"""The shapes a conversation store has: the two-method protocol and the atomic one."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

__all__ = ["AtomicConversationStore", "ConversationLease", "ConversationStore", "Messages"]

Messages = list[dict[str, Any]]


@runtime_checkable
class ConversationStore(Protocol):
    """Where `ask(id=...)` keeps transcripts: two async methods, keyed by conversation id.

    A store with only these two is made atomic per id by each client on its own (a lock per
    client): right for a store one client uses. Stores shared by several clients or processes
    also implement `AtomicConversationStore`.
    """

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        """The saved transcript of `id`, or `None` when there is none."""
        ...

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        """Replace the transcript of `id` with `messages`."""
        ...


class ConversationLease(Protocol):
    """The exclusive right to read and then replace one id's transcript, while it is held."""

    async def get(self) -> list[dict[str, Any]] | None:
        """The transcript as it is now (nobody else can change it while the lease is held)."""
        ...

    async def save(self, messages: list[dict[str, Any]]) -> None:
        """Replace the transcript; raises `StoreError` when the lease was lost meanwhile."""
        ...


@runtime_checkable
class AtomicConversationStore(ConversationStore, Protocol):
    """A store that makes load → run → save atomic per id for every client and process using it.

    `async with store.claim(id) as lease:` waits until no one else holds `id` (cancelling the
    wait is safe), then holds it until the block ends; `lease.save` refuses to write once the
    claim was lost (its holder stalled past the lease and another took over), so a save never
    overwrites a turn it did not see. The client uses `claim` for `ask`/`stream(id=...)` when
    the store has it.
    """

    def claim(self, id: str) -> AbstractAsyncContextManager[ConversationLease]:
        """Hold `id` for the `async with` block and give the lease to read and save through."""
        ...
