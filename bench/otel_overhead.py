"""CPU per request of a toolnexus run with OpenTelemetry absent, installed without a provider,
and configured with the SDK and an in-memory span exporter (and metric reader).

    python bench/otel_overhead.py [-n 3000] [--rounds 3]
    python bench/otel_overhead.py --instructions [-n 300]

Each mode runs in a fresh interpreter. A request is one run: a model turn asking for a native
tool call, the call, and a final turn; the model is in-process, so no network time hides the
instrumentation's cost (the share printed is an upper bound for a run over HTTP).

CPU time on a loaded machine moves by tens of percent between runs, far more than the few
percent at stake; `--instructions` counts instructions instead (valgrind's callgrind, which must
be installed): each mode runs twice, with 50 and with 50 + n measured requests after the same
warm-up, and the difference of the two totals divided by n is the cost of one request,
deterministic to a fraction of a percent whatever the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

CHILD = r"""
import asyncio, json, sys, time
mode, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
if mode != "absent":
    import opentelemetry.trace, opentelemetry.metrics  # noqa: F401
if mode == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
from toolnexus import Toolkit, define_tool
from toolnexus.client import create_in_process_client

@define_tool
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

async def model(request):
    if request["messages"][-1]["role"] == "tool":
        return {"content": "4"}
    return {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 2}}]}

async def main():
    client = create_in_process_client(model="m", generate=model)
    kit = Toolkit(extra_tools=[add])
    for _ in range(200):
        await client.run("2+2?", kit)
    if mode == "sdk":
        exporter.clear()
    started = time.process_time()
    for i in range(n):
        result = await client.run("2+2?", kit)
        if mode == "sdk" and i % 500 == 0:
            exporter.clear()
    cpu = time.process_time() - started
    assert result.text == "4", result.text
    print(json.dumps({"us_per_request": cpu / n * 1e6}))

asyncio.run(main())
"""


def measure(mode: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(n), str(SRC)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["us_per_request"])


def instructions(mode: str, n: int) -> int:
    """Instructions callgrind counted for the whole child process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                CHILD,
                mode,
                str(n),
                str(SRC),
            ],
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        for line in out.read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError("callgrind wrote no summary")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    args = parser.parse_args()
    modes = ("absent", "no-provider", "sdk")
    if args.instructions:
        per = {m: (instructions(m, 50 + args.n) - instructions(m, 50)) / args.n for m in modes}
        for mode in modes:
            share = (per[mode] - per["absent"]) / per["absent"] * 100
            print(f"{mode:12} {per[mode] / 1e6:8.3f} M instructions/request  {share:+6.2f}%")
        return
    best = {mode: min(measure(m, args.n) for m in [mode] * args.rounds) for mode in modes}
    base = best["absent"]
    for mode in modes:
        share = (best[mode] - base) / base * 100
        print(f"{mode:12} {best[mode]:8.1f} us CPU/request  {share:+6.1f}%")


if __name__ == "__main__":
    main()
