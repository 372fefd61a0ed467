"""A2A task and MCP `tools/call` throughput with 1 and 2 replicas of `toolnexus serve`.

    python bench/replicas.py [--tasks 200] [--calls 2000] [--inflight 16]

Starts the mock LLM (`bench/fixtures/mock_llm.py`), a real Redis and PostgreSQL (the store
tests' `tests/support/db_servers.py`) and `toolnexus serve` processes over the bench's MCP
fixture server, then:

- A2A: `--tasks` blocking `SendMessage`s, `--inflight` at a time, alternating between the
  replicas, which share the task store (Redis, then PostgreSQL); each task is the bench's run
  (a model turn asking for two tool calls, the calls, the final turn);
- MCP: `--calls` `tools/call`s of `bench_add`, `--inflight` at a time, alternating between
  replicas of the (stateless) gateway.

Prints tasks or calls per second, the p50/p95 latency, and the CPU the replicas spent per
task or call (the steadiest figure on a loaded machine: wall-clock rates depend on what else
runs on the cores).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))

import httpx2  # noqa: E402

import _common as c  # noqa: E402
from support.cli_runner import clean_env, start_serve, stop_serve  # noqa: E402
from support.db_servers import PostgresServer, RedisServer  # noqa: E402

_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    """User + system CPU time of process `pid` so far, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_MS


async def drive(
    count: int, inflight: int, one: Callable[[int], Awaitable[None]], pids: list[int]
) -> dict[str, Any]:
    """`count` calls of `one(i)`, `inflight` at a time: rate, latency, replicas' CPU per call."""
    numbers = iter(range(count))
    latencies: list[float] = []
    retried = 0

    async def worker() -> None:
        nonlocal retried
        for i in numbers:
            started = time.perf_counter()
            try:
                await one(i)
            except httpx2.TransportError:  # counted and shown: a reset keep-alive connection
                retried += 1
                await one(i)
            latencies.append((time.perf_counter() - started) * 1000)

    cpu_before = sum(cpu_ms(p) for p in pids)
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    wall = time.perf_counter() - started
    cpu = sum(cpu_ms(p) for p in pids) - cpu_before
    return {
        "per_s": count / wall,
        "p50_ms": c.percentile(latencies, 50),
        "p95_ms": c.percentile(latencies, 95),
        "cpu_ms": cpu / count,
        "retried": retried,
    }


async def replicas_of(n: int, *args: str) -> list[tuple[Any, dict[str, str]]]:
    env = clean_env()
    return [await start_serve(*args, "--port", "0", env=env) for _ in range(n)]


async def stop_all(started: list[tuple[Any, dict[str, str]]]) -> None:
    for proc, _ in started:
        await stop_serve(proc, signal.SIGTERM)


async def a2a_row(
    config: Path, mock: str, store: str, n: int, args: argparse.Namespace
) -> dict[str, Any]:
    started = await replicas_of(
        n, "--a2a", "--config", str(config), "--store", store,
        "--base-url", mock, "--style", "openai", "--model", "m", "--api-key", "k-bench",
    )  # fmt: skip
    urls = [urls["a2a"] for _, urls in started]
    limits = httpx2.Limits(max_connections=args.inflight * 2)
    ids = itertools.count()
    try:
        async with httpx2.AsyncClient(timeout=120, limits=limits) as http:

            async def task(i: int) -> None:
                body = {
                    "jsonrpc": "2.0",
                    "id": next(ids),
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": f"m{i}",
                            "role": "ROLE_USER",
                            "parts": [{"text": c.PROMPT}],
                        }
                    },
                }
                reply = await http.post(urls[i % n], json=body, headers={"A2A-Version": "1.0"})
                done = reply.json()["result"]["task"]
                text = done["artifacts"][0]["parts"][0]["text"]
                if done["status"]["state"] != "TASK_STATE_COMPLETED" or not c.answer_ok(text):
                    raise RuntimeError(f"task answered {json.dumps(done)[:300]}")

            for i in range(2 * n):
                await task(i)
            return await drive(args.tasks, args.inflight, task, [p.pid for p, _ in started])
    finally:
        await stop_all(started)


async def mcp_row(config: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    started = await replicas_of(n, "--mcp", "--config", str(config))
    urls = [urls["mcp"] for _, urls in started]
    limits = httpx2.Limits(max_connections=args.inflight * 2)
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    ids = itertools.count()
    try:
        async with httpx2.AsyncClient(timeout=60, limits=limits, headers=headers) as http:

            async def call(i: int) -> None:
                body = {
                    "jsonrpc": "2.0",
                    "id": next(ids),
                    "method": "tools/call",
                    "params": {"name": "bench_add", "arguments": {"a": 2, "b": 2}},
                }
                reply = await http.post(urls[i % n], json=body)
                result = reply.json()["result"]
                if result.get("isError") or result["content"][0]["text"] != "4":
                    raise RuntimeError(f"tools/call answered {reply.text[:300]}")

            for i in range(10 * n):
                await call(i)
            return await drive(args.calls, args.inflight, call, [p.pid for p, _ in started])
    finally:
        await stop_all(started)


def line(name: str, row: dict[str, Any]) -> None:
    print(
        f"{name:<28}{row['per_s']:>10.1f}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}"
        f"{row['cpu_ms']:>12.2f}{row['retried']:>9}",
        flush=True,
    )


async def main(args: argparse.Namespace) -> None:
    postgres, redis = PostgresServer(), RedisServer()
    try:
        with tempfile.TemporaryDirectory() as folder, c.MockLLMProcess() as mock:
            config = Path(folder) / "mcp.json"
            config.write_text(json.dumps(c.mcp_config()))
            print(f"{args.inflight} in flight; load average {os.getloadavg()[0]:.1f}")
            print(
                f"{'':<28}{'per s':>10}{'p50 ms':>10}{'p95 ms':>10}{'CPU ms/op':>12}{'retried':>9}"
            )
            stores = (("redis", redis.url), ("postgres", postgres.database("bench")))
            for kind, url in stores if args.only in (None, "a2a") else ():
                for n in (1, 2):
                    line(f"A2A tasks, {kind}, {n} repl.", await a2a_row(config, mock, url, n, args))
            for n in (1, 2) if args.only in (None, "mcp") else ():
                line(f"MCP tools/call, {n} repl.", await mcp_row(config, n, args))
    finally:
        postgres.close()
        redis.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=16)
    parser.add_argument("--only", choices=("a2a", "mcp"), help="measure only this protocol")
    asyncio.run(main(parser.parse_args()))
