"""`scale_gateway`: MCP `tools/call` through `toolkit.serve(..., mcp={})` versus direct.

Direct: the SDK `ClientSession` over stdio to the fixture server. Gateway: the same SDK
client over streamable HTTP to a toolnexus gateway process (fixtures/gateway.py) whose toolkit
holds that server over stdio. Latency is sequential calls of `add`; throughput keeps
`--inflight` calls outstanding. p50 is the gateway's; `added_ms` = gateway p50 − direct p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c


async def measure(session: Any, tool: str, args: argparse.Namespace) -> dict[str, float]:
    """Sequential latency samples (ms) and concurrent throughput (calls/s) of one session."""

    async def call() -> None:
        result = await session.call_tool(tool, {"a": 2, "b": 2})
        text = "".join(getattr(p, "text", "") for p in result.content)
        if result.is_error or text != "4":
            raise RuntimeError(f"{tool} answered {text!r}")

    for _ in range(args.warmup):
        await call()
    samples: list[float] = []
    for _ in range(args.calls):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)

    remaining = args.calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.inflight)))
    rate = args.calls / (time.perf_counter() - start)
    return {**c.summary(samples), "calls_per_s": rate}


async def direct(args: argparse.Namespace) -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = c.mcp_server_command()
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await measure(session, "add", args)


async def through_gateway(args: argparse.Namespace) -> tuple[dict[str, float], float | None]:
    from mcp.client.streamable_http import streamable_http_client

    from mcp import ClientSession

    gateway = subprocess.Popen(
        [c.repo_python(), str(c.FIXTURES_DIR / "gateway.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert gateway.stdin is not None and gateway.stdout is not None
    try:
        url = gateway.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"gateway did not start (printed {url!r})")
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            tool = next((n for n in names if n.endswith("add")), None)
            if tool is None:
                raise RuntimeError(f"the gateway exposes no add tool: {names}")
            stats = await measure(session, tool, args)
        gateway.stdin.close()
        tail = gateway.stdout.read().strip().splitlines()
        gateway.wait(timeout=30)
        rss = json.loads(tail[-1])["rss_mb"] if tail else None
        return stats, rss
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    base = await direct(args)
    gate, gateway_rss = await through_gateway(args)
    added = gate["p50_ms"] - base["p50_ms"]
    return {
        "name": "scale_gateway",
        "init_ms": None,
        "p50_ms": gate["p50_ms"],
        "p95_ms": gate["p95_ms"],
        "mean_ms": gate["mean_ms"],
        "rss_mb": c.peak_rss_mb(),
        "ok": True,
        "calls": args.calls,
        "gateway_calls_per_s": gate["calls_per_s"],
        "direct_p50_ms": base["p50_ms"],
        "direct_p95_ms": base["p95_ms"],
        "direct_calls_per_s": base["calls_per_s"],
        "added_ms": added,
        "inflight": args.inflight,
        "gateway_rss_mb": gateway_rss,
        "headline": (
            f"tools/call p50 {gate['p50_ms']:.2f} ms via gateway vs {base['p50_ms']:.2f} ms "
            f"direct (+{added:.2f} ms); {gate['calls_per_s']:.0f} vs "
            f"{base['calls_per_s']:.0f} calls/s with {args.inflight} in flight"
        ),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="100 calls")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.calls = min(ARGS.calls, 100)
    c.guarded("scale_gateway", lambda: main(ARGS))
