"""Claims on a conversation id: in-process locks, and leases kept in a shared store.

A lease is a row (or key) naming its holder and an expiry. It is taken atomically when free or
expired, renewed in the background while held, and released at the end; a holder that dies
(even by `kill -9`) blocks the id for at most one lease period. Every fenced save checks, in the
same transaction as the write, that the writer still holds the lease.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

from toolnexus._backends import RenewalWatch, decode_json_row, guarded
from toolnexus._json import to_compact_json
from toolnexus.client.memory._protocol import ConversationLease, ConversationStore, Messages
from toolnexus.errors import ConfigError, StoreError

__all__ = ["KeyedLock", "LeasedStore", "LockedLease", "claim_conversation"]

_log = logging.getLogger("toolnexus")

# Polling for a lease another process holds: quick at first (the usual wait is one short
# turn), then at most this often.
_POLL_FIRST_S = 0.002
_POLL_MAX_S = 0.05


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0  # tasks holding or waiting for `lock`


class KeyedLock:
    """One asyncio lock per key, created on demand and dropped when nobody holds or awaits it.

    `async with locks.hold(id): ...` serialises work on the same id; different ids run
    concurrently. Memory stays proportional to the ids in use right now.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold the lock of `key` for the `async with` block."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]

    def __len__(self) -> int:
        """How many keys are held or awaited right now."""
        return len(self._entries)


class LockedLease:
    """The lease of a store used by one process: a held in-process lock, plain get and save."""

    __slots__ = ("id", "store")

    def __init__(self, store: ConversationStore, id: str) -> None:
        self.store = store
        self.id = id

    async def get(self) -> Messages | None:
        return await self.store.get(self.id)

    async def save(self, messages: Messages) -> None:
        await self.store.save(self.id, messages)


@contextlib.asynccontextmanager
async def claim_conversation(
    store: ConversationStore, locks: KeyedLock, id: str
) -> AsyncIterator[ConversationLease]:
    """Hold `id` for load → run → save: through the store's own `claim` when it has one, else
    through `locks` (which then only guard the users of that one `KeyedLock`)."""
    claim = getattr(store, "claim", None)
    if callable(claim):
        async with claim(id) as lease:
            yield lease
        return
    async with locks.hold(id):
        yield LockedLease(store, id)


class LeasedStore(abc.ABC):
    """Base of the stores that keep leases beside the transcripts (SQLite, PostgreSQL, Redis).

    Subclasses provide the storage primitives below; this class turns them into `get`, `save`,
    `delete` and `claim` with one error rule: every failure of the backend is a `StoreError`
    naming the store and the id. Within one process, claims on an id also queue on a local lock
    first, so they are served in order and only one of them polls the store.
    """

    #: How long a lease lasts without renewal (it is renewed every third of that while held).
    lease_ms: float

    def __init__(self, *, lease_ms: float) -> None:
        if isinstance(lease_ms, bool) or not lease_ms > 0:
            raise ConfigError(f"lease_ms must be > 0, not {lease_ms!r}")
        self.lease_ms = float(lease_ms)
        self._local = KeyedLock()
        self._background: set[asyncio.Task[Any]] = set()
        self._renewals: RenewalWatch | None = None

    @property
    def renewals(self) -> RenewalWatch:
        """Where failing lease renewals are reported (one WARNING per outage)."""
        if self._renewals is None:
            self._renewals = RenewalWatch(self.name, self.lease_ms)
        return self._renewals

    # -- what a backend provides ----------------------------------------------------------------

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """How errors name this store (e.g. `PostgreSQL conversation store postgres://u:***@h/db`)."""

    @abc.abstractmethod
    async def _read(self, id: str) -> str | bytes | None:
        """The stored JSON text of `id`, or `None`."""

    @abc.abstractmethod
    async def _write(self, id: str, payload: str, owner: str | None) -> bool:
        """Store `payload` under `id`; with `owner`, only while `owner` holds the lease."""

    @abc.abstractmethod
    async def _acquire(self, id: str, owner: str) -> bool:
        """Take the lease of `id` for `owner` if it is free, expired or already `owner`'s."""

    @abc.abstractmethod
    async def _renew(self, id: str, owner: str) -> bool:
        """Extend `owner`'s lease of `id` by `lease_ms`; False when `owner` no longer holds it."""

    @abc.abstractmethod
    async def _release(self, id: str, owner: str) -> None:
        """Drop `owner`'s lease of `id` (nothing when someone else holds it now)."""

    @abc.abstractmethod
    async def _remove(self, id: str) -> None:
        """Delete the transcript of `id`."""

    # -- the store ------------------------------------------------------------------------------

    async def _io(self, action: str, id: str, work: Awaitable[Any]) -> Any:
        return await guarded(self.name, action, f"conversation {id!r}", work)

    async def get(self, id: str) -> Messages | None:
        """The saved transcript of `id`, or `None`; `StoreError` when the row is corrupt."""
        raw = await self._io("reading", id, self._read(id))
        if raw is None:
            return None
        messages: Messages = decode_json_row(
            raw, store=self.name, what=f"conversation {id!r}", kind=list
        )
        return messages

    async def save(self, id: str, messages: Messages) -> None:
        """Replace the transcript of `id` (unconditionally: `claim` is the atomic way)."""
        # Serialised before any await: what is stored is what was passed in, even if the
        # caller changes the list while the write is under way.
        payload = to_compact_json(list(messages))
        await self._io("saving", id, self._write(id, payload, None))

    async def delete(self, id: str) -> None:
        """Forget the transcript of `id` (no error when there is none)."""
        await self._io("deleting", id, self._remove(id))

    async def ping(self) -> None:
        """Raise `StoreError` unless the store answers a read (what `/readyz` asks)."""
        await self._io("reading", "\x00ping", self._read("\x00ping"))

    def claim(self, id: str) -> contextlib.AbstractAsyncContextManager[ConversationLease]:
        """Hold `id` against every client and process sharing this store (see the protocol)."""
        ops = (self._guarded_acquire, self._guarded_write, self._renew, self._release)
        return _Lease(LeaseBackend(self, self._local, *ops, keep=self._keep), id)

    async def _guarded_acquire(self, id: str, owner: str) -> bool:
        return bool(await self._io("claiming", id, self._acquire(id, owner)))

    async def _guarded_write(self, id: str, payload: str, owner: str) -> bool:
        return bool(await self._io("saving", id, self._write(id, payload, owner)))

    def _keep(self, task: asyncio.Task[Any]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)


@dataclass(frozen=True, slots=True)
class LeaseBackend:
    """What one claim uses of its `LeasedStore`, handed over by the store's `claim`.

    `acquire` and `write` turn a backend failure into a `StoreError`; `renew` and `release`
    raise what the backend raises (a claim retries a renewal and lets a lost release expire).
    """

    store: LeasedStore  # its name, lease period, renewal watch and plain reads
    local: KeyedLock  # claims on one id within this process queue here first
    acquire: Callable[[str, str], Awaitable[bool]]  # (id, owner): the lease, if free
    write: Callable[[str, str, str], Awaitable[bool]]  # (id, payload, owner): a fenced save
    renew: Callable[[str, str], Awaitable[bool]]  # (id, owner): False once no longer held
    release: Callable[[str, str], Awaitable[None]]  # (id, owner)
    keep: Callable[[asyncio.Task[Any]], None]  # holds a background task until it ends


class _Lease:
    """One claim on one id of a `LeasedStore`, as an async context manager."""

    def __init__(self, backend: LeaseBackend, id: str) -> None:
        self.backend = backend
        self.store = backend.store
        self.id = id
        self.owner = uuid.uuid4().hex
        self.lost = False
        self._local: contextlib.AbstractAsyncContextManager[None] | None = None
        self._renewer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Lease:
        local = self.backend.local.hold(self.id)
        await local.__aenter__()
        try:
            delay = _POLL_FIRST_S
            while not await self._attempt():
                await asyncio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX_S)
        except BaseException:
            await local.__aexit__(None, None, None)
            raise
        self._local = local
        self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())
        return self

    async def _attempt(self) -> bool:
        attempt = asyncio.ensure_future(self.backend.acquire(self.id, self.owner))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            # The attempt may still succeed after we stopped waiting: give the lease back then.
            attempt.add_done_callback(self._release_if_taken)
            raise

    def _release_if_taken(self, attempt: asyncio.Future[bool]) -> None:
        if not attempt.cancelled() and attempt.exception() is None and attempt.result():
            self.backend.keep(asyncio.ensure_future(self._release()))

    async def _release(self) -> None:
        try:
            await self.backend.release(self.id, self.owner)
        except Exception as exc:  # the lease expires by itself
            _log.debug("[toolnexus] %s: releasing %r failed: %s", self.store.name, self.id, exc)

    async def _renew_forever(self) -> None:
        loop = asyncio.get_running_loop()
        period = self.store.lease_ms / 1000
        renewed = loop.time()
        while True:
            await asyncio.sleep(period / 3)
            try:
                held: bool | None = await self.backend.renew(self.id, self.owner)
            except Exception as exc:
                held = None  # unknown: the store is unreachable; retry until the lease is over
                self.store.renewals.failed(f"renewing the claim on conversation {self.id!r}", exc)
            if held:
                renewed = loop.time()
                self.store.renewals.renewed()
            elif held is False or loop.time() - renewed >= period:
                self.lost = True
                return

    def _lost_error(self) -> StoreError:
        return StoreError(
            f"{self.store.name}: the claim on conversation {self.id!r} was lost (its lease of "
            f"{self.store.lease_ms:g} ms expired before the save); the turn was not saved"
        )

    async def get(self) -> Messages | None:
        return await self.store.get(self.id)

    async def save(self, messages: Messages) -> None:
        if self.lost:
            raise self._lost_error()
        payload = to_compact_json(list(messages))
        if not await self.backend.write(self.id, payload, self.owner):
            self.lost = True
            raise self._lost_error()

    async def __aexit__(self, *exc_info: object) -> None:
        renewer, local = self._renewer, self._local
        self._renewer = self._local = None
        try:
            if renewer is not None:
                renewer.cancel()
                with contextlib.suppress(BaseException):
                    await renewer
            if not self.lost:
                release = asyncio.ensure_future(self._release())
                self.backend.keep(release)
                # A claim left by an error (a run past its deadline, a store that stopped
                # answering) is released in the background: the error is not held up by a
                # store that may not answer. Otherwise the release is awaited, shielded: if the
                # caller is cancelled now it still goes on rather than leaving the id blocked
                # for a whole lease period.
                if exc_info[0] is None:
                    await asyncio.shield(release)
        finally:
            if local is not None:
                await local.__aexit__(None, None, None)
