"""`import_<x>`: how long `import <module>` takes in a fresh interpreter (median of 10).

Runs with the interpreter whose package it measures (the repo's or a peer's virtualenv). Each
sample is a new process timing the import statement itself (interpreter start-up excluded);
bytecode caches are warmed by one unmeasured import first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

PROBE = """
import json, resource, sys, time
t = time.perf_counter()
import {module}
ms = (time.perf_counter() - t) * 1000
heavy = sorted(m for m in ("mcp", "httpx", "httpx2", "pydantic", "jsonschema", "starlette",
                           "uvicorn", "openai") if m in sys.modules)
first = sys.modules["{first}"]
print(json.dumps({{"ms": ms, "modules": len(sys.modules), "heavy": heavy,
                  "file": getattr(first, "__file__", None),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def sample(module: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, first=module.split(",")[0].strip())],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path.home(),  # never pick up a same-named folder from the working directory
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def main(args: argparse.Namespace) -> dict[str, Any]:
    sample(args.module)  # warm the bytecode cache
    runs = [sample(args.module) for _ in range(args.samples)]
    ms = [r["ms"] for r in runs]
    stats = c.summary(ms)
    return {
        "name": args.name,
        "init_ms": None,
        **stats,
        "rss_mb": statistics.median(r["rss_mb"] for r in runs),
        "ok": True,
        "module": args.module,
        "samples": len(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "file": runs[-1]["file"],
        "modules_loaded": runs[-1]["modules"],
        "heavy_loaded": runs[-1]["heavy"],
        "headline": (
            f"import {args.module}: {stats['p50_ms']:.0f} ms median of {len(ms)} "
            f"({min(ms):.0f}–{max(ms):.0f}), {runs[-1]['modules']} modules, "
            f"heavy: {', '.join(runs[-1]['heavy']) or 'none'}"
        ),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--module", default="toolnexus", help="what follows `import`")
    parser.add_argument("--name", help="row name (default import_<module>)")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="3 samples")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.samples = min(ARGS.samples, 3)
    ARGS.name = ARGS.name or f"import_{ARGS.module}"
    c.guarded(ARGS.name, lambda: main(ARGS))
