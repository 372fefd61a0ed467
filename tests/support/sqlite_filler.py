"""Saves to a SQLite conversation store once the process may write no more than 200 kB to any
file (RLIMIT_FSIZE: a disk that fills up, without mounting one): prints the error of a claimed
save and of a plain one, then the earlier transcript, which must be intact."""

from __future__ import annotations

import asyncio
import resource
import signal
import sys

from toolnexus.client.memory import SQLiteConversationStore


async def main(path: str) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, not the process
    store = SQLiteConversationStore(path)
    await store.save("kept", [{"role": "user", "content": "hi"}])
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    big = [{"role": "user", "content": "x" * 500_000}]
    try:
        async with store.claim("big") as lease:
            await lease.save(big)
    except Exception as exc:
        print(f"claimed: {type(exc).__name__}: {exc}")
    try:
        await store.save("big", big)
    except Exception as exc:
        print(f"plain: {type(exc).__name__}: {exc}")
    print(f"kept: {await store.get('kept')}")
    await store.aclose()


asyncio.run(main(sys.argv[1]))
