"""Where OAuth credentials live between runs: a pluggable store of one JSON record per
protected resource URL, with a file store (the default) and an in-memory one.

A record is plain JSON: `{"url", "tokens", "clientInfo"}` plus what lets a later process
refresh without asking again (`expiresAt`, the discovered `authorizationServer` and
`protectedResource` metadata). Records hold secrets: stores never log them.

Authorization servers rotate refresh tokens and may revoke a whole grant when one is spent
twice, so whoever renews a record holds the store's lock for that URL meanwhile: the file store
locks a file beside the record (`flock`, so other processes wait too), the memory store an
`asyncio.Lock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolnexus.errors import ConfigError, ToolnexusError

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "TokenStore",
    "TokenStoreError",
    "default_token_dir",
    "token_store",
]

Record = dict[str, Any]

LOCK_WAIT_S = 120.0
"""How long a renewal waits for another holder of a record's lock before giving up."""
_POLL_FIRST_S, _POLL_MAX_S = 0.002, 0.05


class TokenStoreError(ToolnexusError):
    """A token store could not read or write a record (the message never holds its content)."""


@runtime_checkable
class TokenStore(Protocol):
    """Keeps one credentials record per protected resource URL.

    Implement these three coroutines to keep credentials elsewhere (a keyring, a database);
    records are JSON-ready dicts and must be kept as secret as passwords. A store shared by
    several toolkits should also offer `locked(url)`, an async context manager that gives one
    holder at a time the right to renew `url`'s record (as `FileTokenStore` and
    `MemoryTokenStore` do); without it two toolkits renewing at the same moment may both spend
    the same refresh token.
    """

    async def load(self, url: str) -> Record | None:
        """The record for `url`, or `None` when there is none."""
        ...

    async def save(self, url: str, record: Record) -> None:
        """Replace the record for `url`."""
        ...

    async def delete(self, url: str) -> bool:
        """Forget the record for `url`; true when there was one."""
        ...


def default_token_dir() -> Path:
    """`$TOOLNEXUS_HOME/mcp-auth`, `$TOOLNEXUS_HOME` defaulting to `~/.toolnexus`."""
    home = os.environ.get("TOOLNEXUS_HOME") or os.path.join(os.path.expanduser("~"), ".toolnexus")
    return Path(home) / "mcp-auth"


class FileTokenStore:
    """One JSON file per URL, `<first 16 hex digits of sha256(url)>.json`, in `directory`
    (default `default_token_dir()`), created `0700`; files are `0600` and replaced atomically,
    so a reader never sees half a record."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_token_dir()

    def path_for(self, url: str) -> Path:
        """The file that holds the record for `url`."""
        return self.directory / f"{_digest(url)}.json"

    @contextlib.asynccontextmanager
    async def locked(self, url: str) -> AsyncIterator[None]:
        """Hold the lock on `url`'s record: an exclusive `flock` on `<digest>.lock` beside it,
        so every process (and every store object) using this directory takes its turn.

        Waits without blocking the event loop; raises `TokenStoreError` after `LOCK_WAIT_S`.
        The kernel releases the lock of a process that dies holding it."""
        opening = asyncio.ensure_future(asyncio.to_thread(self._open_lock, url))
        try:
            fd = await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)
            raise
        try:
            delay = _POLL_FIRST_S
            deadline = asyncio.get_running_loop().time() + LOCK_WAIT_S
            while not _try_flock(fd):
                if asyncio.get_running_loop().time() > deadline:
                    raise TokenStoreError(
                        f"another holder kept the credentials lock in {self.directory} for "
                        f"over {LOCK_WAIT_S:g} s"
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX_S)
            yield
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    def _open_lock(self, url: str) -> int:
        directory = self.directory
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            return os.open(directory / f"{_digest(url)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise TokenStoreError(
                f"cannot lock credentials in {directory}: {exc.strerror}"
            ) from None

    async def load(self, url: str) -> Record | None:
        return await asyncio.to_thread(self._load, url)

    async def save(self, url: str, record: Record) -> None:
        await asyncio.to_thread(self._save, url, record)

    async def delete(self, url: str) -> bool:
        return await asyncio.to_thread(self._delete, url)

    def _load(self, url: str) -> Record | None:
        path = self.path_for(url)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TokenStoreError(f"cannot read {path}: {exc.strerror}") from None
        try:
            record = json.loads(text)
        except ValueError:
            raise TokenStoreError(f"{path} is not a JSON credentials record") from None
        if not isinstance(record, dict) or record.get("url") != url:
            return None  # another URL's record (a digest clash) or not ours: start afresh
        return record

    def _save(self, url: str, record: Record) -> None:
        directory = self.directory
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                directory.chmod(0o700)
            # `mkstemp` creates the file readable and writable by its owner only (0600).
            fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({**record, "url": url}, out, separators=(",", ":"))
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temp, self.path_for(url))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            raise TokenStoreError(
                f"cannot write credentials to {directory}: {exc.strerror}"
            ) from None

    def _delete(self, url: str) -> bool:
        try:
            self.path_for(url).unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise TokenStoreError(
                f"cannot delete credentials in {self.directory}: {exc.strerror}"
            ) from None
        return True

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"


class MemoryTokenStore:
    """Records in this process's memory only: nothing survives the process."""

    def __init__(self) -> None:
        self._records: dict[str, Record] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def locked(self, url: str) -> AsyncIterator[None]:
        """Hold the lock on `url`'s record (toolkits of this process sharing the store)."""
        async with self._locks.setdefault(url, asyncio.Lock()):
            yield

    async def load(self, url: str) -> Record | None:
        record = self._records.get(url)
        return copy.deepcopy(record) if record is not None else None

    async def save(self, url: str, record: Record) -> None:
        self._records[url] = copy.deepcopy({**record, "url": url})

    async def delete(self, url: str) -> bool:
        return self._records.pop(url, None) is not None

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {len(self._records)} record(s)>"


def _digest(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def _close_opened(opening: asyncio.Future[int]) -> None:
    """Close the lock file a cancelled waiter opened (it never locked it)."""
    if not opening.cancelled() and opening.exception() is None:
        os.close(opening.result())


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        raise TokenStoreError(f"cannot lock credentials: {exc.strerror}") from None
    return True


def token_store(spec: str | TokenStore | None) -> TokenStore:
    """The store a config value or argument names: `None` (the default file store),
    `"memory"`, `"file:<dir>"`, or a `TokenStore` itself."""
    if spec is None:
        return FileTokenStore()
    if isinstance(spec, str):
        if spec == "memory":
            return MemoryTokenStore()
        if spec.startswith("file:") and spec[5:]:
            return FileTokenStore(os.path.expanduser(spec[5:]))
        raise ConfigError('a token store is "memory", "file:<directory>" or a TokenStore')
    if isinstance(spec, TokenStore):
        return spec
    raise ConfigError(f"not a token store: {type(spec).__name__}")
