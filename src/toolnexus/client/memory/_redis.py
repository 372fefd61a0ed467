"""Conversations in Redis, shared by every client and process that uses the server."""

from __future__ import annotations

from toolnexus._backends._redis import RedisPool
from toolnexus.client.memory._lease import LeasedStore

__all__ = ["RedisConversationStore"]

# KEYS: lease, conversation. ARGV: owner, payload. Writes only while `owner` holds the lease.
_FENCED_SET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2])
  return 1
end
return 0
"""
# KEYS: lease. ARGV: owner, lease ms.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS: lease. ARGV: owner.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
# KEYS: lease. ARGV: owner, lease ms. Free, expired (gone) or already ours.
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


class RedisConversationStore(LeasedStore):
    """Transcripts in Redis, one string of compact JSON per conversation.

    `url` is a `redis://[user:password@]host:port/db` (or `rediss://`, `unix://`) URL. Keys are
    `<prefix>conv:<id>` for transcripts and `<prefix>conv-lease:<id>` for claims (expiring
    keys, so a holder that dies frees its id after `lease_ms`); `<prefix>schema` records the
    layout version. The first use pings the server: unreachable ⇒ `StoreConfigError` naming the
    URL without its password. Saves through a claim check the lease and write in one Lua
    script. Durability is the server's (enable AOF with `appendfsync always` to lose nothing on
    a crash). Needs the `redis` extra.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolnexus:",
        lease_ms: float = 15_000,
        max_connections: int = 50,
        timeout_ms: float = 10_000,
    ) -> None:
        super().__init__(lease_ms=lease_ms)
        self._db = RedisPool(
            url,
            label="Redis conversation store",
            component="conversations",
            prefix=prefix,
            max_connections=max_connections,
            timeout_ms=timeout_ms,
        )

    @property
    def name(self) -> str:
        return self._db.label

    async def open(self) -> None:
        """Connect now rather than on first use."""
        await self._db.client()

    def _keys(self, id: str) -> tuple[str, str]:
        return self._db.key("conv-lease", id), self._db.key("conv", id)

    async def _read(self, id: str) -> bytes | str | None:
        client = await self._db.client()
        raw: bytes | str | None = await client.get(self._db.key("conv", id))
        return raw

    async def _write(self, id: str, payload: str, owner: str | None) -> bool:
        lease, conversation = self._keys(id)
        if owner is None:
            client = await self._db.client()
            await client.set(conversation, payload)
            return True
        return bool(await self._db.script(_FENCED_SET, [lease, conversation], [owner, payload]))

    async def _acquire(self, id: str, owner: str) -> bool:
        lease, _ = self._keys(id)
        return bool(await self._db.script(_ACQUIRE, [lease], [owner, int(self.lease_ms)]))

    async def _renew(self, id: str, owner: str) -> bool:
        lease, _ = self._keys(id)
        return bool(await self._db.script(_RENEW, [lease], [owner, int(self.lease_ms)]))

    async def _release(self, id: str, owner: str) -> None:
        lease, _ = self._keys(id)
        await self._db.script(_RELEASE, [lease], [owner])

    async def _remove(self, id: str) -> None:
        client = await self._db.client()
        await client.delete(self._db.key("conv", id))

    async def aclose(self) -> None:
        """Close the connections. Idempotent."""
        await self._db.aclose()

    async def __aenter__(self) -> RedisConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
