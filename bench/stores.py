"""Conversation `ask` throughput on each shared store, 50 conversation ids at once.

    python bench/stores.py [--ids 50] [--turns 10]

Starts a real PostgreSQL and Redis (as the store tests do: `tests/support/db_servers.py`), then
for each store runs `--ids` conversations concurrently, each `--turns` asks in sequence, against
an in-process model that answers at once, so the figures are the store's cost per turn (claim,
load, save, release). Prints asks/s and the p50/p95 latency of one ask.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.db_servers import PostgresServer, RedisServer
from toolnexus.client import (
    InMemoryConversationStore,
    PostgresConversationStore,
    RedisConversationStore,
    SQLiteConversationStore,
    create_in_process_client,
)


async def answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "ok"}


async def measure(store: Any, ids: int, turns: int) -> dict[str, float]:
    client = create_in_process_client(model="m", generate=answer, store=store)
    latencies: list[float] = []

    async def conversation(n: int) -> None:
        for turn in range(turns):
            started = time.perf_counter()
            await client.ask(f"turn {turn}", id=f"bench-{n}")
            latencies.append(time.perf_counter() - started)

    await client.ask("warm", id="warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(conversation(n) for n in range(ids)))
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "asks_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(len(latencies) * 0.95)] * 1000,
    }


async def main(ids: int, turns: int) -> None:
    postgres, redis = PostgresServer(), RedisServer()
    try:
        with tempfile.TemporaryDirectory() as folder:
            stores = {
                "memory": InMemoryConversationStore(),
                "sqlite (FULL)": SQLiteConversationStore(Path(folder) / "full.db"),
                "sqlite (NORMAL)": SQLiteConversationStore(
                    Path(folder) / "normal.db", synchronous="NORMAL"
                ),
                "postgres": PostgresConversationStore(postgres.url, max_size=20),
                "redis": RedisConversationStore(redis.url),
            }
            print(f"{ids} ids x {turns} turns each, concurrently")
            print(f"{'store':<18}{'asks/s':>10}{'p50 ms':>10}{'p95 ms':>10}")
            for name, store in stores.items():
                row = await measure(store, ids, turns)
                print(
                    f"{name:<18}{row['asks_per_s']:>10.0f}"
                    f"{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}"
                )
                close = getattr(store, "aclose", None)
                if close is not None:
                    await close()
    finally:
        postgres.close()
        redis.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=50)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.ids, args.turns))
