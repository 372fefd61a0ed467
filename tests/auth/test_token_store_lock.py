"""The token stores' per-record lock: whoever renews a record holds it, so toolkits sharing a
store — in other processes too — take turns instead of spending one refresh token twice."""

from __future__ import annotations

import asyncio
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from toolnexus import FileTokenStore, MemoryTokenStore
from toolnexus.oauth import TokenStore

pytestmark = pytest.mark.asyncio(loop_scope="session")

URL = "https://mcp.example/mcp"
ROUNDS = 60

# Each child waits for "go" on stdin, then makes ROUNDS read-modify-write turns on one record,
# each turn under the store's lock; a turn lost to a race would leave the count short.
_COUNTER = textwrap.dedent(
    """
    import asyncio, sys
    from toolnexus import FileTokenStore

    async def main(directory, url, rounds):
        store = FileTokenStore(directory)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for _ in range(rounds):
            async with store.locked(url):
                record = await store.load(url) or {"n": 0}
                await asyncio.sleep(0)  # let the other side run while this one holds the lock
                record["n"] = record.get("n", 0) + 1
                await store.save(url, record)

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


async def _counters(directory: Path, count: int) -> list[asyncio.subprocess.Process]:
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _COUNTER,
            str(directory),
            URL,
            str(ROUNDS),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(count)
    ]
    for child in children:  # every child has imported toolnexus and opened its store
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line == b"ready\n", line
    return children


async def test_processes_sharing_a_file_store_take_turns(tmp_path: Path) -> None:
    directory = tmp_path / "auth"
    children = await _counters(directory, 2)
    for child in children:  # both start at the same moment
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        await child.stdin.drain()
    for child in children:
        _, err = await asyncio.wait_for(child.communicate(), 120)
        assert child.returncode == 0, err.decode()
    record = await FileTokenStore(directory).load(URL)
    assert record is not None and record["n"] == 2 * ROUNDS
    lock = FileTokenStore(directory).path_for(URL).with_suffix(".lock")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert lock.read_bytes() == b""  # the lock file never holds a secret


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_holders_in_one_process_take_turns(tmp_path: Path, kind: str) -> None:
    shared = MemoryTokenStore()

    def store() -> TokenStore:
        # two file-store objects on one directory exclude each other like two processes
        return FileTokenStore(tmp_path) if kind == "file" else shared

    order: list[str] = []
    first, second = store(), store()
    inside = asyncio.Event()

    async def holder() -> None:
        async with first.locked(URL):  # type: ignore[attr-defined]
            order.append("first in")
            inside.set()
            await asyncio.sleep(0.05)  # the scenario: a refresh under way
            order.append("first out")

    async def waiter() -> None:
        await inside.wait()
        async with second.locked(URL):  # type: ignore[attr-defined]
            order.append("second in")

    await asyncio.gather(holder(), waiter())
    assert order == ["first in", "first out", "second in"]


async def test_a_lock_is_per_record(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    other = FileTokenStore(tmp_path).locked("https://other.example/mcp")
    async with store.locked(URL), asyncio.timeout(10), other:
        pass  # another URL's record is not held up


async def test_a_lock_taken_by_a_cancelled_waiter_is_not_kept(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    async with store.locked(URL):
        waiting = asyncio.ensure_future(FileTokenStore(tmp_path).locked(URL).__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    async with asyncio.timeout(10), FileTokenStore(tmp_path).locked(URL):
        pass
    assert [p.suffix for p in tmp_path.iterdir()] == [".lock"]
