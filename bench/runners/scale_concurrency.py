"""`scale_concurrency`: 200 concurrent `client.run` calls on one `Client` against the mock.

Same toolkit as the `toolnexus` runner (the stdio MCP server), so each run is 2 LLM round
trips + 2 MCP calls; all runs of a burst start together. Figures: runs per second (runs /
burst wall time, median over bursts), per-run p50/p99 over all bursts, and errors (a run that
raised or whose answer is wrong). p50 is the per-run latency under that load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from toolnexus import create_client, create_toolkit

    latencies: list[float] = []
    rates: list[float] = []
    errors: list[str] = []
    with c.mock_llm(args.base_url) as base_url:
        toolkit = await create_toolkit(c.mcp_config(), builtins=False)
        try:
            client = create_client(base_url=base_url, style="openai", model="mock", api_key="bench")

            async def one(record: bool) -> None:
                start = time.perf_counter()
                try:
                    result = await client.run(c.PROMPT, toolkit)
                except Exception as exc:
                    errors.append(c.describe(exc))
                    return
                if record:
                    latencies.append((time.perf_counter() - start) * 1000)
                    if not c.answer_ok(result.text):
                        errors.append(f"wrong answer: {result.text[:120]!r}")

            await asyncio.gather(*(one(False) for _ in range(20)))  # warm pools and caches
            errors.clear()
            cpu_start = time.process_time()
            for _ in range(args.bursts):
                start = time.perf_counter()
                await asyncio.gather(*(one(True) for _ in range(args.runs)))
                rates.append(args.runs / (time.perf_counter() - start))
            cpu_ms = (time.process_time() - cpu_start) * 1000
        finally:
            await toolkit.close()
    total = args.runs * args.bursts
    stats = c.summary(latencies) if latencies else {"p50_ms": None, "p95_ms": None, "mean_ms": None}
    p99 = c.percentile(latencies, 99) if latencies else None
    rate = statistics.median(rates)
    row: dict[str, Any] = {
        "name": "scale_concurrency",
        "init_ms": None,
        **stats,
        "rss_mb": c.peak_rss_mb(),
        "ok": not errors,
        "concurrency": args.runs,
        "bursts": args.bursts,
        "runs": total,
        "runs_per_s": rate,
        "cpu_ms_per_run": cpu_ms / total,
        "p99_ms": p99,
        "errors": len(errors),
        "headline": (
            f"{args.runs} concurrent runs x{args.bursts}: {rate:.0f} runs/s, "
            f"p50 {stats['p50_ms'] or 0:.0f} ms, p99 {p99 or 0:.0f} ms, {len(errors)} errors; "
            f"{cpu_ms / total:.1f} ms CPU per run in the client process"
        ),
    }
    if errors:
        row["error"] = f"{len(errors)} of {total} runs failed; first: {errors[0]}"
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200, help="concurrent runs per burst")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--base-url", help="mock LLM base URL (default: start one)")
    parser.add_argument("--quick", action="store_true", help="one burst of 50")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.runs, ARGS.bursts = min(ARGS.runs, 50), 1
    c.guarded("scale_concurrency", lambda: main(ARGS))
