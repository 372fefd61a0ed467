"""One pooled Redis connection (redis-py asyncio) per shared store, opened on first use."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from toolnexus._backends import SCHEMA_VERSION, redact_dsn
from toolnexus._extras import extra_hint
from toolnexus._secrets import remember_url
from toolnexus.errors import StoreConfigError

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["SCHEMA_KEY", "RedisPool"]

# A hash of component → layout version, beside the data under the store's key prefix.
SCHEMA_KEY = "schema"


class RedisPool:
    """A redis-py asyncio client (its own connection pool) for `url`, checked on first use.

    The first `client()` pings the server (a `StoreConfigError` naming the URL, password hidden,
    when it cannot be reached) and records or checks the layout version of `component` under
    `<prefix>schema`. Each operation fails once the server has not answered for `timeout_ms`.
    """

    def __init__(
        self,
        url: str,
        *,
        label: str,
        component: str,
        prefix: str = "toolnexus:",
        max_connections: int = 50,
        timeout_ms: float = 10_000,
    ) -> None:
        if not isinstance(url, str) or not url:
            raise StoreConfigError(f"{label}: the Redis URL must be a non-empty string")
        self.url = url
        remember_url(url)  # its password never reaches a log line or an error
        self.label = f"{label} {redact_dsn(url)}"
        self.component = component
        self.prefix = prefix
        self.max_connections = max_connections
        self.timeout_s = timeout_ms / 1000
        self._client: Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._opening = asyncio.Lock()
        self._closed = False

    async def _open(self) -> Redis:
        try:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialBackoff
            from redis.exceptions import BusyLoadingError, ConnectionError
        except ImportError as exc:
            raise StoreConfigError(f"Redis stores need redis-py: {extra_hint('redis')}") from exc
        try:
            client = Redis.from_url(
                self.url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                max_connections=self.max_connections,
                decode_responses=False,
                # A server restarting (refusing, or loading its data) is retried for about a
                # second before the operation fails. A server that does not answer is not: each
                # attempt would wait the whole socket timeout again (9 attempts took ~28 s
                # against a 3 s timeout), so the operation fails after one timeout, and
                # redis-py drops the connection that timed out.
                retry=Retry(
                    ExponentialBackoff(cap=0.25, base=0.01),
                    8,
                    supported_errors=(BusyLoadingError, ConnectionError),
                ),
            )
        except ValueError as exc:
            raise StoreConfigError(f"{self.label}: bad Redis URL ({exc})") from None
        try:
            await client.ping()
            key = self.prefix + SCHEMA_KEY
            await client.hsetnx(key, self.component, SCHEMA_VERSION)  # type: ignore[misc]
            stored = await client.hget(key, self.component)  # type: ignore[misc]
        except Exception as exc:
            await client.aclose()
            raise StoreConfigError(f"cannot reach {self.label}: {exc}") from None
        version = int(stored or 0)
        if version > SCHEMA_VERSION:
            await client.aclose()
            raise StoreConfigError(
                f"{self.label} has schema version {version} for {self.component}, newer than "
                f"this toolnexus knows ({SCHEMA_VERSION}): upgrade toolnexus"
            )
        return client

    async def client(self) -> Redis:
        """The connected client (connecting, and checking the schema version, on first use)."""
        client = self._client
        if client is not None:
            return client
        async with self._opening:
            if self._closed:
                raise StoreConfigError(f"{self.label} is closed")
            if self._client is None:
                self._client = await self._open()
            return self._client

    async def listen(self, channel: str, on_ready: Callable[[], None]) -> AsyncIterator[str]:
        """The messages published on `channel` (under the prefix), on a connection of its own:
        `on_ready()` each time the subscription is (re-)established, since messages published
        while it was down are lost. Raises when the server stays unreachable, or when it leaves
        a ping unanswered for `timeout_ms` (sent after `timeout_ms` of silence): a server that
        stopped answering would otherwise keep the listener waiting forever, unnoticed."""
        client = await self.client()
        pubsub = client.pubsub()
        pinged = False
        try:
            await pubsub.subscribe(self.key(channel))
            while True:
                message = await pubsub.get_message(timeout=self.timeout_s)
                if message is None:
                    if pinged:
                        raise ConnectionError(
                            f"{self.label} left a ping unanswered for {self.timeout_s:g} s"
                        )
                    await asyncio.wait_for(pubsub.ping(), self.timeout_s)
                    pinged = True
                    continue
                pinged = False
                if message["type"] == "subscribe":
                    on_ready()
                elif message["type"] == "message":
                    yield as_text(message["data"]) or ""
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def script(self, source: str, keys: list[str], args: list[Any]) -> Any:
        """Run the Lua `source` on `keys` and `args`: by its SHA after the first call (redis-py
        loads it again when the server has forgotten it)."""
        client = await self.client()
        runner = self._scripts.get(source)
        if runner is None or runner.registered_client is not client:
            runner = self._scripts[source] = client.register_script(source)
        return await runner(keys=keys, args=args)

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def aclose(self) -> None:
        """Close the client's connections. Idempotent."""
        async with self._opening:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def as_text(value: Any) -> str | None:
    """A Redis reply as text (`None` stays `None`)."""
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
