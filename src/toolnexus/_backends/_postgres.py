"""One pooled PostgreSQL connection (psycopg 3, async) per shared store, opened on first use."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import mark_seen
from toolnexus._backends import SCHEMA_VERSION, redact_dsn
from toolnexus._extras import extra_hint
from toolnexus._secrets import remember_url
from toolnexus.errors import StoreConfigError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresPool"]

T = TypeVar("T")

_SCHEMA_TABLE = """CREATE TABLE IF NOT EXISTS toolnexus_schema (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL
)"""

# Serialises schema creation between processes opening the same database at once.
_MIGRATION_LOCK = 0x746F6F6C6E6578  # "toolnex"


def _import_drivers() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreConfigError(
            f"PostgreSQL stores need psycopg 3 and psycopg-pool: {extra_hint('postgres')}"
        ) from exc
    return psycopg, psycopg_pool


class PostgresPool:
    """A psycopg connection pool for `dsn`, with `schema` applied once under `component`.

    Nothing connects before the first `run`; then one connection checks the server and brings
    the schema to `SCHEMA_VERSION` (a `StoreConfigError` naming the URL, password hidden, when
    the server cannot be reached or has a newer schema), and the pool opens. `run(fn)` lends
    `fn` a connection (autocommit) and retries once on a connection that the server dropped;
    all of it, waits for a connection included, ends within `timeout_ms` (`TimeoutError`).
    """

    def __init__(
        self,
        dsn: str,
        *,
        label: str,
        component: str,
        schema: Sequence[str],
        min_size: int = 1,
        max_size: int = 10,
        timeout_ms: float = 10_000,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise StoreConfigError(f"{label}: the PostgreSQL URL must be a non-empty string")
        self.dsn = dsn
        remember_url(dsn)  # its password never reaches a log line or an error
        self.label = f"{label} {redact_dsn(dsn)}"
        self.component = component
        self.schema = tuple(schema)
        self.min_size = min_size
        self.max_size = max_size
        self.timeout_s = timeout_ms / 1000
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening = asyncio.Lock()
        self._closing: set[asyncio.Future[None]] = set()
        self._abandoned: set[asyncio.Future[Any]] = set()  # work past its timeout, unwinding
        self._opened = False  # once: later failures to connect are outages, not bad config
        self._closed = False

    def _scrub(self, text: str) -> str:
        psycopg, _ = _import_drivers()
        try:
            password = psycopg.conninfo.conninfo_to_dict(self.dsn).get("password")
        except Exception:
            password = None
        return text.replace(str(password), "***") if password else text

    async def _open(self) -> AsyncConnectionPool[Any]:
        psycopg, psycopg_pool = _import_drivers()
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self.timeout_s))
            )
        except Exception as exc:
            detail = self._scrub(str(exc)).strip()
            if self._opened:  # an outage: the caller's error names what it was doing
                raise ConnectionError(f"cannot reach the server again: {detail}") from None
            raise StoreConfigError(f"cannot reach {self.label}: {detail}") from None
        try:
            await self._migrate(conn)
        finally:
            await conn.close()
        pool: AsyncConnectionPool[Any] = psycopg_pool.AsyncConnectionPool(
            self.dsn,
            kwargs={"autocommit": True},
            min_size=self.min_size,
            max_size=self.max_size,
            timeout=self.timeout_s,
            open=False,
        )
        await pool.open(wait=False)
        self._opened = True
        return pool

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute(_SCHEMA_TABLE)
            cursor = await conn.execute(
                "SELECT version FROM toolnexus_schema WHERE component = %s", (self.component,)
            )
            row = await cursor.fetchone()
            version = row[0] if row is not None else 0
            if version > SCHEMA_VERSION:
                raise StoreConfigError(
                    f"{self.label} has schema version {version} for {self.component}, newer "
                    f"than this toolnexus knows ({SCHEMA_VERSION}): upgrade toolnexus"
                )
            if version == SCHEMA_VERSION:
                return
            for statement in self.schema:
                await conn.execute(statement)  # type: ignore[arg-type]
            await conn.execute(
                "INSERT INTO toolnexus_schema (component, version) VALUES (%s, %s)"
                " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (self.component, SCHEMA_VERSION),
            )

    async def pool(self) -> AsyncConnectionPool[Any]:
        """The open pool (opening it, and creating the schema, on first use)."""
        pool = self._pool
        if pool is not None:
            return pool
        return await self._within(self._open_once())

    async def _open_once(self) -> AsyncConnectionPool[Any]:
        async with self._opening:
            if self._closed:
                raise StoreConfigError(f"{self.label} is closed")
            if self._pool is None:
                self._pool = await self._open()
            return self._pool

    async def run(self, fn: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        """`fn(connection)` on a pooled connection; once more on a fresh pool if it broke."""
        return await self._within(self._run(fn))

    async def _within(self, work: Awaitable[T]) -> T:
        """`work`, given up after the store's timeout.

        A server that stops answering (paused, or its host gone) never holds the caller past
        the timeout: the work runs in a task of its own, and at the timeout (or when the caller
        is cancelled, e.g. by a run's deadline) it is abandoned at once rather than waited for.
        It unwinds in the background: psycopg asks the server to cancel the statement for a few
        seconds, then the connection is closed, never handed back to the pool.
        """
        task = asyncio.ensure_future(work)
        try:
            done, _ = await asyncio.wait((task,), timeout=self.timeout_s)
        except BaseException:
            self._abandon(task)
            raise
        if done:
            return task.result()
        self._abandon(task)
        silent = f"the server did not answer within {self.timeout_s * 1000:g} ms"
        if not self._opened:
            raise StoreConfigError(f"cannot reach {self.label}: {silent}")
        raise TimeoutError(silent)

    def _abandon(self, task: asyncio.Future[T]) -> None:
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(self._abandoned.discard)
        task.add_done_callback(mark_seen)

    async def _run(self, fn: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        psycopg, psycopg_pool = _import_drivers()
        for attempt in range(2):
            pool = self._pool or await self._open_once()
            try:
                async with pool.connection() as conn:
                    try:
                        return await fn(conn)
                    except asyncio.CancelledError:
                        # Stopped waiting mid-statement: what the connection has sent and will
                        # read is unknown, so it goes, never back to the pool.
                        await conn.close()
                        raise
            except psycopg.OperationalError as exc:
                # The server went away or restarted: the pool's own reconnection backs off for
                # seconds, so it is replaced by a fresh one, which reconnects at once. Waiting
                # for a free connection is not retried (it already took the whole timeout).
                self._discard(pool)
                if attempt or self._closed or isinstance(exc, psycopg_pool.PoolTimeout):
                    raise type(exc)(self._scrub(str(exc))) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def listen(self, channel: str, on_ready: Callable[[], None]) -> AsyncIterator[str]:
        """The payloads of `NOTIFY channel`, on a connection of its own (not the pool's):
        `on_ready()` once the connection listens. Raises when the connection is lost, or when
        the server leaves a `SELECT 1` (sent after `timeout_ms` of silence) unanswered for
        `timeout_ms`: a server that stopped answering would otherwise keep the listener waiting
        forever, unnoticed."""
        psycopg, _ = _import_drivers()
        await self.pool()  # the schema exists and the server was reachable once
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self.timeout_s))
            )
        except psycopg.OperationalError as exc:
            raise ConnectionError(self._scrub(str(exc)).strip()) from None
        try:
            await conn.execute(f'LISTEN "{channel}"')  # type: ignore[arg-type]  # ours, constant
            on_ready()
            while True:
                # Notices that arrive during the probe wait in psycopg's backlog for the next round.
                async for notice in conn.notifies(timeout=self.timeout_s):
                    yield notice.payload
                try:
                    await self._within(conn.execute("SELECT 1"))
                except TimeoutError as exc:
                    raise ConnectionError(f"{self.label}: {exc}") from None
        except psycopg.OperationalError as exc:
            raise ConnectionError(self._scrub(str(exc)).strip()) from None
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    def _discard(self, pool: AsyncConnectionPool[Any]) -> None:
        if self._pool is pool:
            self._pool = None
            closing = asyncio.ensure_future(pool.close(timeout=1))
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """Close the pool's connections. Idempotent."""
        async with self._opening:
            self._closed = True
            pool, self._pool = self._pool, None
        for work in list(self._abandoned):
            work.cancel()
        if pool is not None:
            await pool.close()
        if self._abandoned:
            await asyncio.wait(list(self._abandoned), timeout=self.timeout_s)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
