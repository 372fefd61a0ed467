"""The cost of durability: a run as a DBOS workflow (`toolnexus.durable`) against it plain.

    python bench/durable.py [-n 200] [--rounds 3] [--no-postgres]

The scenario is the main bench's (two LLM round trips against the mock LLM, two parallel tool
calls), with the tools as native functions so the difference is the journal alone: each run as a
workflow records its input, two model-call steps, two tool steps and its result in the DBOS
system database. Measured on SQLite (a file in a temporary folder) and, when the PostgreSQL
binaries are there, on a real PostgreSQL started as the store tests start one. A third kind,
`streamed`, is the durable run through `DurableClient.stream` (each event also written to the
run's DBOS stream and read back). Rounds interleave plain, durable and streamed runs; the
figures are the medians over rounds of each round's p50/p95, and the CPU time of this process
per run (the steadiest figure on a loaded machine).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import _common as c

_runs = itertools.count()  # one workflow name per measured database

PROMPT = "What is the weather in Paris, and what is 2 + 2?"


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


async def sample(run: Callable[[], Awaitable[str]], n: int) -> dict[str, float]:
    latencies: list[float] = []
    cpu = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        answer = await run()
        latencies.append((time.perf_counter() - started) * 1000)
        if "sunny" not in answer or "4" not in answer:
            raise RuntimeError(f"unexpected answer {answer!r}")
    cpu_ms = (time.process_time() - cpu) * 1000 / n
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[int(len(latencies) * 0.95)],
        "cpu_ms": cpu_ms,
    }


async def measure(base_url: str, db_url: str, n: int, rounds: int) -> dict[str, dict[str, float]]:
    from dbos import DBOS

    from toolnexus import Toolkit, define_tool
    from toolnexus.client import create_client
    from toolnexus.durable import DurableClient

    DBOS(config={"name": "toolnexus-bench", "system_database_url": db_url, "log_level": "ERROR"})
    toolkit = Toolkit(extra_tools=[define_tool(get_weather), define_tool(add)])
    client = create_client(base_url=base_url, style="openai", model="m", api_key="k")
    durable = DurableClient(client, toolkit, name=f"bench-{next(_runs)}")
    DBOS.launch()

    async def plain() -> str:
        return (await client.run(PROMPT, toolkit)).text

    async def journaled() -> str:
        return (await durable.run(PROMPT)).text

    async def streamed() -> str:  # every event also written to the run's DBOS stream, and read
        async for event in durable.stream(PROMPT):
            if event["type"] == "done":
                return event["result"].text
        raise RuntimeError("the stream ended without done")

    kinds = {"plain": plain, "durable": journaled, "streamed": streamed}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in kinds}
    try:
        for run in kinds.values():  # warm-up: connections, imports, the system database
            await sample(run, 10)
        for _ in range(rounds):
            for name, run in kinds.items():
                rows[name].append(await sample(run, n))
    finally:
        await client.aclose()
        DBOS.destroy(destroy_registry=True)
    return {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in rows.items()
    }


def report(label: str, figures: dict[str, dict[str, float]]) -> None:
    plain = figures["plain"]
    print(f"{label}:")
    for name, row in figures.items():
        print(
            f"  {name:8} p50 {row['p50_ms']:7.2f} ms   p95 {row['p95_ms']:7.2f} ms   "
            f"CPU {row['cpu_ms']:6.2f} ms/run"
        )
    for name in ("durable", "streamed"):
        row = figures[name]
        print(
            f"  {name}/plain: p50 x{row['p50_ms'] / plain['p50_ms']:.2f} "
            f"(+{row['p50_ms'] - plain['p50_ms']:.2f} ms), "
            f"CPU x{row['cpu_ms'] / plain['cpu_ms']:.2f}"
        )


def run_one(label: str, base_url: str, db_url: str, n: int, rounds: int) -> None:
    report(label, asyncio.run(measure(base_url, db_url, n, rounds)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=200, help="runs per round and kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with c.mock_llm(None) as base_url, tempfile.TemporaryDirectory() as folder:
        run_one("SQLite", base_url, f"sqlite:///{folder}/system.sqlite", args.n, args.rounds)
        if args.no_postgres:
            return
        from support.db_servers import PostgresServer, postgres_bin

        if postgres_bin() is None:
            print("PostgreSQL: skipped (no binaries)")
            return
        server: Any = PostgresServer()
        try:
            run_one("PostgreSQL", base_url, server.database("dbos_bench"), args.n, args.rounds)
        finally:
            server.close()


if __name__ == "__main__":
    main()
