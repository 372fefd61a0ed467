"""`scale_tools`: a toolkit of 2,000 native tools — declaration and dispatch cost.

Tools are made with `define_tool` (schema inferred from `(a: int, b: int)`, async body).
Figures: defining them, `create_toolkit`, the first `to_openai()` (builds 2,000 declarations)
and a cached one, then `toolkit.execute` on every tool once (cold: each tool's argument
validator is built on first use) and warm calls after that. p50 is the warm `execute`
per call, arguments validated, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c


def make_fn(i: int) -> Callable[..., Awaitable[int]]:
    async def fn(a: int, b: int) -> int:
        """Add two integers with a fixed offset."""
        return a + b + i

    return fn


def per_call_us(samples_s: list[float]) -> float:
    return statistics.median(samples_s) * 1e6


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from toolnexus import create_toolkit, define_tool

    count = args.tools
    start, cpu_start = time.perf_counter(), time.process_time()
    tools = [define_tool(make_fn(i), name=f"tool_{i:04d}") for i in range(count)]
    define_ms = (time.perf_counter() - start) * 1000
    define_cpu_ms = (time.process_time() - cpu_start) * 1000  # steadier on a busy machine

    start = time.perf_counter()
    toolkit = await create_toolkit(extra_tools=tools, builtins=False)
    create_ms = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    declared = toolkit.to_openai()
    first_ms = (time.perf_counter() - start) * 1000
    cached: list[float] = []
    for _ in range(1000):
        start = time.perf_counter()
        toolkit.to_openai()
        cached.append(time.perf_counter() - start)

    names = [t.name for t in toolkit.tools()]
    args_ = {"a": 2, "b": 2}
    start = time.perf_counter()
    for name in names:
        await toolkit.execute(name, args_)
    cold_us = (time.perf_counter() - start) / len(names) * 1e6

    warm: list[float] = []
    errors = 0
    for k in range(args.calls):
        name = names[(k * 7919) % len(names)]  # spread over the whole toolkit
        start = time.perf_counter()
        result = await toolkit.execute(name, args_)
        warm.append(time.perf_counter() - start)
        errors += result.is_error

    fn = make_fn(0)
    direct: list[float] = []
    for _ in range(args.calls):
        start = time.perf_counter()
        await fn(2, 2)
        direct.append(time.perf_counter() - start)
    await toolkit.close()

    ok = len(declared) == count and errors == 0
    warm_ms = [s * 1000 for s in warm]
    row: dict[str, Any] = {
        "name": "scale_tools",
        "init_ms": None,
        **c.summary(warm_ms),
        "rss_mb": c.peak_rss_mb(),
        "ok": ok,
        "tools": count,
        "define_ms": define_ms,
        "define_cpu_ms": define_cpu_ms,
        "create_toolkit_ms": create_ms,
        "to_openai_first_ms": first_ms,
        "to_openai_cached_us": per_call_us(cached),
        "execute_cold_us": cold_us,
        "execute_warm_us": per_call_us(warm),
        "direct_call_us": per_call_us(direct),
        "errors": errors,
        "headline": (
            f"{count} tools: to_openai() first {first_ms:.1f} ms, cached "
            f"{per_call_us(cached):.2f} µs; execute {per_call_us(warm):.1f} µs/call warm, "
            f"{cold_us:.0f} µs cold (direct call {per_call_us(direct):.2f} µs); "
            f"define {define_ms:.0f} ms ({define_cpu_ms:.0f} ms CPU)"
        ),
    }
    if not ok:
        row["error"] = f"{len(declared)} declarations, {errors} error results"
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="200 tools, 1,000 warm calls")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.tools, ARGS.calls = min(ARGS.tools, 200), min(ARGS.calls, 1000)
    c.guarded("scale_tools", lambda: main(ARGS))
