"""`scale_mcp_connect`: `create_toolkit` with 8 stdio MCP servers versus 1.

Every server (the MCP tests' stdlib-only `tests/support/mcp_servers/slow_start_stdio.py`, run
with `--delay 0.5`) sleeps 0.5 s before it answers, so the figure measures how concurrently the
servers are connected, not CPU: connected one after another 8 servers would take ~8× one.
p50 is the 8-server build; `ratio` = 8 / 1 (medians).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

SERVER = c.REPO_DIR / "tests" / "support" / "mcp_servers" / "slow_start_stdio.py"


async def build_ms(count: int, delay: float) -> float:
    from toolnexus import create_toolkit

    command = [sys.executable, str(SERVER), "--delay", str(delay)]
    config = c.mcp_config({f"slow{i}": command for i in range(count)})
    start = time.perf_counter()
    toolkit = await create_toolkit(config, builtins=False)
    elapsed = (time.perf_counter() - start) * 1000
    try:
        status = toolkit.mcp_status()
        bad = {name: s for name, s in status.items() if s != "connected"}
        if bad or len(toolkit.tools()) != count:
            raise RuntimeError(f"servers not connected: {bad or status}")
    finally:
        await toolkit.close()
    return elapsed


async def main(args: argparse.Namespace) -> dict[str, Any]:
    await build_ms(1, 0.0)  # warm imports and bytecode caches
    one: list[float] = []
    many: list[float] = []
    for _ in range(args.repeats):  # interleaved, so load drift hits both alike
        one.append(await build_ms(1, args.delay))
        many.append(await build_ms(args.servers, args.delay))
    one_ms, many_ms = statistics.median(one), statistics.median(many)
    ratio = many_ms / one_ms
    return {
        "name": "scale_mcp_connect",
        "init_ms": None,
        **c.summary(many),
        "rss_mb": c.peak_rss_mb(),
        "ok": True,
        "servers": args.servers,
        "startup_delay_s": args.delay,
        "one_server_ms": one_ms,
        "many_servers_ms": many_ms,
        "ratio": ratio,
        "repeats": args.repeats,
        "headline": (
            f"{args.servers} servers {many_ms:.0f} ms vs 1 server {one_ms:.0f} ms "
            f"(each takes {args.delay:g} s to start): ratio {ratio:.2f}"
        ),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="1 repeat")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.repeats = 1
    c.guarded("scale_mcp_connect", lambda: main(ARGS))
