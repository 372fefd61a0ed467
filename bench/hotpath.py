"""Profile the toolnexus request hot path: where this process's CPU goes, by package.

    python bench/hotpath.py [-n 300] [--top 25]

Runs the `toolnexus` scenario (mock LLM in a child process, the stdio MCP server) under
cProfile with a CPU clock, then prints the self time summed per top-level package (toolnexus,
httpx2, httpcore2, h11, anyio, mcp, asyncio, ...) and the functions with the most self time.
Stdlib only on the harness side; no profiler to install.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

import _common as c


def package_of(filename: str) -> str:
    """`httpx2` for .../site-packages/httpx2/_client.py, `stdlib:asyncio` for the stdlib's;
    this repo's subpackages apart (`toolnexus.client`; its top-level modules are `toolnexus`)."""
    parts = Path(filename).parts
    for anchor in ("site-packages", "src"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            if len(rest) > 2 and rest[0] == "toolnexus":  # toolnexus.client, toolnexus.mcp_source
                return f"toolnexus.{rest[1]}"
            return rest[0].removesuffix(".py") if rest else filename
    for i, part in enumerate(parts):
        if part.startswith("python3") and i + 1 < len(parts):
            return "stdlib:" + parts[i + 1].removesuffix(".py")
    return Path(filename).stem


def self_time_by_package(stats: pstats.Stats) -> dict[str, float]:
    """Self time per package; a C builtin's time goes to the package of whoever called it."""
    totals: dict[str, float] = defaultdict(float)
    table = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, callers) in table.items():
        if filename == "~" and callers:
            for (caller_file, _l, _n), caller_stats in callers.items():
                totals[package_of(caller_file)] += caller_stats[2]
        else:
            totals[package_of(filename)] += tottime
    return totals


async def scenario(n: int) -> cProfile.Profile:
    from toolnexus import create_client, create_toolkit

    with c.MockLLMProcess() as base_url:
        toolkit = await create_toolkit(c.mcp_config(), builtins=False)
        try:
            client = create_client(base_url=base_url, style="openai", model="mock", api_key="x")
            for _ in range(c.WARMUP * 4):
                await client.run(c.PROMPT, toolkit)
            profile = cProfile.Profile(time.process_time)
            start = time.process_time()
            profile.enable()
            for _ in range(n):
                await client.run(c.PROMPT, toolkit)
            profile.disable()
            cpu = time.process_time() - start
        finally:
            await toolkit.close()
    print(f"{n} requests, {cpu * 1000 / n:.2f} ms CPU per request under cProfile\n")
    return profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300, help="profiled requests")
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    args = parser.parse_args()
    profile = asyncio.run(scenario(args.n))
    stats = pstats.Stats(profile)
    by_package = self_time_by_package(stats)
    total = sum(by_package.values())
    print("self CPU by package")
    for package, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {seconds / total:6.1%}  {seconds * 1000 / args.n:6.3f} ms/request  {package}")
    print()
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    sys.exit(main())
