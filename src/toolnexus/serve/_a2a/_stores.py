"""`resolve_store`: the A2A task store a config value names, shared servers included."""

from __future__ import annotations

from typing import Any

from toolnexus._backends import backend_of, redact_dsn
from toolnexus.errors import ConfigError
from toolnexus.serve._a2a._shared_tasks import PostgresTaskStore, RedisTaskStore
from toolnexus.serve._a2a._tasks import TaskStore, resolve_local_store

__all__ = ["resolve_store"]


def resolve_store(store: Any = None) -> TaskStore:
    """The task store an `a2a["store"]` value (or `toolnexus serve --store`) names:
    `None`/`"memory"`, `"file:<dir>"`, a `postgres://…`/`postgresql://…` URL or libpq
    `host=…` string, a
    `redis://…`/`rediss://…` URL, or any object with async `get`/`save` (optionally `list`)."""
    if isinstance(store, str):
        backend = backend_of(store)
        if backend == "postgres":
            return PostgresTaskStore(store)
        if backend == "redis":
            return RedisTaskStore(store)
        try:
            return resolve_local_store(store)
        except ValueError:
            raise ConfigError(
                f'Unknown A2A store: "{redact_dsn(store)}" (expected "memory", "file:<dir>", '
                "postgres://… or redis://…)"
            ) from None
    return resolve_local_store(store)
