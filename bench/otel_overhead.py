"""CPU per request of a toolnexus run with OpenTelemetry absent, installed without a provider,
and configured with the SDK and an in-memory span exporter (and metric reader).

    python bench/otel_overhead.py [-n 3000] [--rounds 3]

Each mode runs in a fresh interpreter. A request is one run: a model turn asking for a native
tool call, the call, and a final turn; the model is in-process, so no network time hides the
instrumentation's cost (the share printed is an upper bound for a run over HTTP).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    modes = ("absent", "no-provider", "sdk")
    best = {mode: min(measure(m, args.n) for m in [mode] * args.rounds) for mode in modes}
    base = best["absent"]
    for mode in modes:
        share = (best[mode] - base) / base * 100
        print(f"{mode:12} {best[mode]:8.1f} us CPU/request  {share:+6.1f}%")


if __name__ == "__main__":
    main()
