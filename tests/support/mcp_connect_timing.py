"""Connect-time figures for the MCP source (run: `python tests/support/mcp_connect_timing.py`).

1. Concurrency: `load_mcp` with 1 and with 8 stdio servers that each sleep 0.5 s before speaking
   (`mcp_servers/slow_start_stdio.py`, stdlib only, so the figure is not Python SDK import time).
   With concurrent connects, 8 servers should take about as long as 1 (goal: ≤ 1.5×).
2. Overhead: one instant stdio server loaded with `load_mcp` (connect, initialize, list, close)
   versus the same steps done by hand with a bare SDK `stdio_client` + `ClientSession`.
3. Cold start: a fresh interpreter that has imported only `toolnexus.mcp_source` loads one
   server that takes 0.5 s to come up. The MCP SDK import (over a second) happens inside
   `load_mcp`; when the child is spawned before the SDK loads, the two overlap and the load
   takes about max(import, 0.5 s) instead of their sum.

Figures 1 and 2 import the SDK before any clock starts. Prints medians over several runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

SERVER = str(Path(__file__).parent / "mcp_servers" / "slow_start_stdio.py")


def config(count: int, delay: float) -> dict[str, object]:
    command = [sys.executable, SERVER, "--delay", str(delay)]
    return {"mcpServers": {f"s{i}": {"command": command} for i in range(count)}}


async def timed_load(count: int, delay: float) -> tuple[float, float]:
    """Seconds to load (all connected) and then to close."""
    from toolnexus.mcp_source import load_mcp

    start = time.perf_counter()
    source = await load_mcp(config(count, delay))
    loaded = time.perf_counter() - start
    assert set(source.status.values()) == {"connected"}, source.servers
    start = time.perf_counter()
    await source.close()
    return loaded, time.perf_counter() - start


async def timed_bare_sdk() -> tuple[float, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        loaded = time.perf_counter() - start
        start = time.perf_counter()
    return loaded, time.perf_counter() - start


COLD = """
import asyncio, sys, time
from toolnexus.mcp_source import load_mcp

async def main():
    config = {"s": {"command": [sys.executable, SERVER, "--delay", DELAY]}}
    start = time.perf_counter()
    source = await load_mcp(config)
    print(time.perf_counter() - start)
    assert source.status == {"s": "connected"}, source.servers
    await source.close()

asyncio.run(main())
"""


COLD_IMPORT = """
import time
import toolnexus.mcp_source
start = time.perf_counter()
import toolnexus.mcp_source._connection
print(time.perf_counter() - start)
"""


def run_fresh(code: str) -> float:
    """Seconds a fresh interpreter running `code` printed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0])


def timed_cold_load(delay: float) -> float:
    """Seconds a fresh interpreter's `load_mcp` takes, SDK import included."""
    return run_fresh(COLD.replace("SERVER", repr(SERVER)).replace("DELAY", repr(str(delay))))


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms"


async def main(runs: int) -> None:
    import mcp.client.session
    import mcp.client.stdio  # noqa: F401

    from toolnexus.mcp_source import _connection  # noqa: F401

    await timed_load(1, 0.0)  # warm-up: page cache, interpreter start
    one = [(await timed_load(1, 0.5))[0] for _ in range(runs)]
    eight = [(await timed_load(8, 0.5))[0] for _ in range(runs)]
    ratio = statistics.median(eight) / statistics.median(one)
    print("concurrency (servers that take 0.5 s to come up):")
    print(f"  1 server : {median_ms(one)}")
    print(f"  8 servers: {median_ms(eight)}  ({ratio:.2f}x)")
    ours = [await timed_load(1, 0.0) for _ in range(runs)]
    bare = [await timed_bare_sdk() for _ in range(runs)]
    print("overhead (instant server: spawn, initialize, tools/list):")
    for label, runs_ in (("bare SDK session", bare), ("load_mcp        ", ours)):
        opened = median_ms([r[0] for r in runs_])
        closed = median_ms([r[1] for r in runs_])
        print(f"  {label}: {opened}   close {closed}")
    added = statistics.median([o[0] for o in ours]) - statistics.median([b[0] for b in bare])
    print(f"  load_mcp adds   : {added * 1000:7.1f} ms")
    cold: list[float] = []
    imports: list[float] = []
    for _ in range(runs):  # interleaved, so load drift hits both alike
        cold.append(timed_cold_load(0.5))
        imports.append(run_fresh(COLD_IMPORT))
    print("cold start (fresh interpreter, SDK not imported yet, server takes 0.5 s):")
    print(f"  SDK import alone: {median_ms(imports)}")
    print(f"  load_mcp        : {median_ms(cold)}   (with the SDK imported: {median_ms(one)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
