"""Conversation memory: the store protocols, the stores, and claims on an id.

`Client.ask(id=...)` claims the id, loads its transcript, runs, and saves the new transcript
through the claim, so load → run → save is atomic per id. Stores that implement
`AtomicConversationStore` (all of ours) make that hold for every client and process sharing
them; a store with only `get`/`save` is guarded by a lock in each client.

`open_conversation_store` turns a config string into a store: `"memory"`, a SQLite path (or
`sqlite:<path>`), `postgres://…`/`postgresql://…` or `redis://…`/`rediss://…`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from toolnexus._backends import backend_of, looks_like_a_path, redact_dsn
from toolnexus.client.memory._lease import KeyedLock, LeasedStore, claim_conversation
from toolnexus.client.memory._memory import InMemoryConversationStore
from toolnexus.client.memory._protocol import (
    AtomicConversationStore,
    ConversationLease,
    ConversationStore,
)
from toolnexus.errors import ConfigTypeError, StoreConfigError, StoreError

if TYPE_CHECKING:
    from toolnexus.client.memory._postgres import PostgresConversationStore
    from toolnexus.client.memory._redis import RedisConversationStore
    from toolnexus.client.memory._sqlite import SQLiteConversationStore

__all__ = [
    "AtomicConversationStore",
    "ConversationLease",
    "ConversationStore",
    "InMemoryConversationStore",
    "KeyedLock",
    "LeasedStore",
    "PostgresConversationStore",
    "RedisConversationStore",
    "SQLiteConversationStore",
    "StoreConfigError",
    "StoreError",
    "claim_conversation",
    "open_conversation_store",
]

# The shared stores load on first use: SQLite's driver, the Postgres and Redis plumbing are
# weight a client that keeps its conversations in memory never needs.
_LAZY = {
    "PostgresConversationStore": "toolnexus.client.memory._postgres",
    "RedisConversationStore": "toolnexus.client.memory._redis",
    "SQLiteConversationStore": "toolnexus.client.memory._sqlite",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def open_conversation_store(store: Any) -> ConversationStore:
    """The store a `store=` value names: a store object as is, or a config string.

    Strings: `"memory"`; `postgres://…`/`postgresql://…` or a libpq `host=… dbname=…` string
    (needs the `postgres` extra); `redis://…`/`rediss://…`/`unix://…` (needs the `redis` extra);
    `sqlite:<path>` or any other
    string or path-like is a SQLite file. Connections open on first use.
    """
    if isinstance(store, os.PathLike):
        return _sqlite(store)
    if not isinstance(store, str):
        if not (callable(getattr(store, "get", None)) and callable(getattr(store, "save", None))):
            raise ConfigTypeError("store must have async get(id) and save(id, messages) methods")
        return store  # type: ignore[no-any-return]
    if store == "memory":
        return InMemoryConversationStore()
    backend = backend_of(store)
    if backend == "postgres":
        from toolnexus.client.memory._postgres import PostgresConversationStore

        return PostgresConversationStore(store)
    if backend == "redis":
        from toolnexus.client.memory._redis import RedisConversationStore

        return RedisConversationStore(store)
    explicit = store.lower().startswith("sqlite:")  # then any printable name is a file's
    path = store[len("sqlite:") :] if explicit else store
    if not (path.strip() and path.isprintable()) if explicit else not looks_like_a_path(path):
        raise StoreConfigError(
            f'unknown conversation store {redact_dsn(store)!r}: expected "memory", a SQLite '
            "path, postgres://…, a PostgreSQL host=… connection string, or redis://…"
        )
    return _sqlite(path)


def _sqlite(path: str | os.PathLike[str]) -> ConversationStore:
    from toolnexus.client.memory._sqlite import SQLiteConversationStore

    return SQLiteConversationStore(path)
