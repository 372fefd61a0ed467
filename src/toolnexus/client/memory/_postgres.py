"""Conversations in PostgreSQL, shared by every client and process that uses the database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolnexus._backends._postgres import PostgresPool
from toolnexus.client.memory._lease import LeasedStore

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresConversationStore"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS toolnexus_conversations (
        id TEXT PRIMARY KEY,
        messages TEXT NOT NULL,
        updated TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE IF NOT EXISTS toolnexus_conversation_leases (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    )""",
)

_UPSERT = (
    "INSERT INTO toolnexus_conversations (id, messages) VALUES (%s, %s)"
    " ON CONFLICT (id) DO UPDATE SET messages = excluded.messages, updated = now()"
)


class PostgresConversationStore(LeasedStore):
    """Transcripts in a PostgreSQL table, one row of compact JSON text per conversation.

    `dsn` is a `postgres://user:password@host:port/db` URL or a libpq key=value string. The pool
    (`min_size`..`max_size` connections) opens on first use, which also creates the tables
    (`toolnexus_conversations`, `toolnexus_conversation_leases`) and records their schema
    version; a server unreachable then raises `StoreConfigError` naming the URL without its
    password. Claims are lease rows timed by the server's clock; each save through a claim
    checks the lease in the same transaction as the write. Needs the `postgres` extra.
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease_ms: float = 15_000,
        min_size: int = 1,
        max_size: int = 10,
        timeout_ms: float = 10_000,
    ) -> None:
        super().__init__(lease_ms=lease_ms)
        self._db = PostgresPool(
            dsn,
            label="PostgreSQL conversation store",
            component="conversations",
            schema=_SCHEMA,
            min_size=min_size,
            max_size=max_size,
            timeout_ms=timeout_ms,
        )

    @property
    def name(self) -> str:
        return self._db.label

    async def open(self) -> None:
        """Connect and create the schema now rather than on first use."""
        await self._db.pool()

    async def _read(self, id: str) -> str | None:
        async def read(conn: AsyncConnection[Any]) -> str | None:
            cursor = await conn.execute(
                "SELECT messages FROM toolnexus_conversations WHERE id = %s", (id,)
            )
            row = await cursor.fetchone()
            return None if row is None else str(row[0])

        return await self._db.run(read)

    async def _write(self, id: str, payload: str, owner: str | None) -> bool:
        async def write(conn: AsyncConnection[Any]) -> bool:
            if owner is None:
                await conn.execute(_UPSERT, (id, payload))
                return True
            # One statement (one round trip, atomic): the lease row is locked and checked, and
            # the transcript written only while `owner` holds it.
            cursor = await conn.execute(
                "WITH held AS (SELECT id FROM toolnexus_conversation_leases"
                " WHERE id = %s AND owner = %s FOR UPDATE)"
                " INSERT INTO toolnexus_conversations (id, messages) SELECT id, %s FROM held"
                " ON CONFLICT (id) DO UPDATE SET messages = excluded.messages, updated = now()",
                (id, owner, payload),
            )
            return cursor.rowcount == 1

        return await self._db.run(write)

    async def _acquire(self, id: str, owner: str) -> bool:
        async def acquire(conn: AsyncConnection[Any]) -> bool:
            cursor = await conn.execute(
                "INSERT INTO toolnexus_conversation_leases AS l (id, owner, expires)"
                " VALUES (%s, %s, clock_timestamp() + %s * interval '1 millisecond')"
                " ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires"
                " WHERE l.expires <= clock_timestamp() OR l.owner = excluded.owner",
                (id, owner, self.lease_ms),
            )
            return cursor.rowcount == 1

        return await self._db.run(acquire)

    async def _renew(self, id: str, owner: str) -> bool:
        async def renew(conn: AsyncConnection[Any]) -> bool:
            cursor = await conn.execute(
                "UPDATE toolnexus_conversation_leases"
                " SET expires = clock_timestamp() + %s * interval '1 millisecond'"
                " WHERE id = %s AND owner = %s",
                (self.lease_ms, id, owner),
            )
            return cursor.rowcount == 1

        return await self._db.run(renew)

    async def _release(self, id: str, owner: str) -> None:
        async def release(conn: AsyncConnection[Any]) -> None:
            await conn.execute(
                "DELETE FROM toolnexus_conversation_leases WHERE id = %s AND owner = %s",
                (id, owner),
            )

        await self._db.run(release)

    async def _remove(self, id: str) -> None:
        async def remove(conn: AsyncConnection[Any]) -> None:
            await conn.execute("DELETE FROM toolnexus_conversations WHERE id = %s", (id,))

        await self._db.run(remove)

    async def ids(self) -> list[str]:
        """Every stored conversation id, sorted."""

        async def ids(conn: AsyncConnection[Any]) -> list[str]:
            cursor = await conn.execute("SELECT id FROM toolnexus_conversations ORDER BY id")
            return [str(row[0]) for row in await cursor.fetchall()]

        result: list[str] = await self._io("listing", "*", self._db.run(ids))
        return result

    async def aclose(self) -> None:
        """Close the connection pool. Idempotent."""
        await self._db.aclose()

    async def __aenter__(self) -> PostgresConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
