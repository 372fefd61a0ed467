"""Where OAuth credentials live between runs: a pluggable store of one JSON record per
protected resource URL, with a file store (the default) and an in-memory one.

A record is plain JSON: `{"url", "tokens", "clientInfo"}` plus what lets a later process
refresh without asking again (`expiresAt`, the discovered `authorizationServer` and
`protectedResource` metadata). Records hold secrets: stores never log them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import tempfile
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


class TokenStoreError(ToolnexusError):
    """A token store could not read or write a record (the message never holds its content)."""


@runtime_checkable
class TokenStore(Protocol):
    """Keeps one credentials record per protected resource URL.

    Implement these three coroutines to keep credentials elsewhere (a keyring, a database);
    records are JSON-ready dicts and must be kept as secret as passwords.
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
        digest = hashlib.sha256(url.encode()).hexdigest()[:16]
        return self.directory / f"{digest}.json"

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

    async def load(self, url: str) -> Record | None:
        record = self._records.get(url)
        return copy.deepcopy(record) if record is not None else None

    async def save(self, url: str, record: Record) -> None:
        self._records[url] = copy.deepcopy({**record, "url": url})

    async def delete(self, url: str) -> bool:
        return self._records.pop(url, None) is not None

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {len(self._records)} record(s)>"


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
