"""Shared helpers for the benchmark runners: timing, statistics, the JSON result line, paths.

Stdlib only: peer runners import this module from their own virtualenvs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: When this module was first imported: runners import it before any framework, so
#: `now - STARTED` is their cold start (imports + setup + connect).
STARTED = time.perf_counter()

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
FIXTURES_DIR = BENCH_DIR / "fixtures"
RESULTS_DIR = BENCH_DIR / "results"

#: The one prompt every per-request runner sends.
PROMPT = "What is the weather in Paris, and what is 2 + 2?"
#: Words the final answer must contain for a run to count as correct.
EXPECTED_IN_ANSWER = ("sunny", "Paris", "4")
#: The MCP server's name in every config, so this repo's tools are `bench_get_weather`, ...
SERVER_NAME = "bench"

WARMUP = 5
N = 30


def since_start_ms() -> float:
    return (time.perf_counter() - STARTED) * 1000.0


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (`p` in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def peak_rss_mb() -> float:
    """Peak resident set size of this process (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """The latency fields of a result line."""
    return {
        "p50_ms": percentile(samples_ms, 50),
        "p95_ms": percentile(samples_ms, 95),
        "mean_ms": statistics.fmean(samples_ms),
    }


def emit(row: dict[str, Any]) -> None:
    """Print the runner's single JSON result line, numbers rounded for reading."""
    out = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def failed_row(name: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "init_ms": None,
        "p50_ms": None,
        "p95_ms": None,
        "mean_ms": None,
        "rss_mb": round(peak_rss_mb(), 1),
        "ok": False,
        "error": reason,
        **extra,
    }


def answer_ok(text: str) -> bool:
    return all(word in text for word in EXPECTED_IN_ANSWER)


def server_python() -> str:
    """The interpreter that runs the MCP fixture servers: the repo's (mcp 2.x), for every runner."""
    return os.environ.get("BENCH_SERVER_PYTHON") or repo_python()


def mcp_server_command() -> list[str]:
    return [server_python(), str(FIXTURES_DIR / "mcp_server.py")]


def mcp_config(servers: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """An `mcp.json`-shaped config: the fixture server as `bench`, or the given name → command."""
    chosen = servers if servers is not None else {SERVER_NAME: mcp_server_command()}
    return {"mcpServers": {name: {"command": command} for name, command in chosen.items()}}


def distribution_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def repo_python() -> str:
    """The repo's virtualenv interpreter (falls back to the running one)."""
    candidate = REPO_DIR / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


# -- runner scaffolding -------------------------------------------------------------------------


def runner_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every per-request runner takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", help="mock LLM base URL (default: start one)")
    parser.add_argument("-n", type=int, default=N, help="measured requests")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="unmeasured requests first")
    return parser


@contextlib.contextmanager
def mock_llm(base_url: str | None) -> Iterator[str]:
    """Yield a mock LLM base URL: the given one, or a mock started in a child process."""
    if base_url:
        yield base_url
        return
    with MockLLMProcess() as url:
        yield url


class MockLLMProcess:
    """The mock LLM (fixtures/mock_llm.py) in its own process; the context value is its base URL."""

    def __init__(self, python: str | None = None) -> None:
        self._python = python or repo_python()
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        self._proc = subprocess.Popen(
            [self._python, str(FIXTURES_DIR / "mock_llm.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.isdigit():
            self.__exit__()
            raise RuntimeError(f"mock LLM did not print its port (got {line!r})")
        return f"http://127.0.0.1:{line}/v1"

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


@dataclass
class Measured:
    """What `measure_requests` observed."""

    samples_ms: list[float] = field(default_factory=list)
    cpu_ms: float = 0.0  # this process's CPU time over the measured requests
    bad_answers: int = 0
    last_answer: str = ""


async def measure_requests(
    request: Callable[[], Awaitable[str]], *, n: int, warmup: int
) -> Measured:
    """Run `request` `warmup` times, then time it `n` times, one after another."""
    measured = Measured()
    for _ in range(warmup):
        measured.last_answer = await request()
    cpu_start = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        text = await request()
        measured.samples_ms.append((time.perf_counter() - start) * 1000.0)
        measured.last_answer = text
        if not answer_ok(text):
            measured.bad_answers += 1
    measured.cpu_ms = (time.process_time() - cpu_start) * 1000.0
    return measured


def request_row(name: str, init_ms: float, measured: Measured, **extra: Any) -> dict[str, Any]:
    """The result line of a per-request runner."""
    ok = measured.bad_answers == 0 and bool(measured.samples_ms)
    row: dict[str, Any] = {
        "name": name,
        "init_ms": init_ms,
        **summary(measured.samples_ms),
        "rss_mb": peak_rss_mb(),
        "ok": ok,
        # CPU this process spent per request: the framework's own cost, less sensitive to
        # other load on the machine than wall-clock latency (the mock and MCP server excluded).
        "cpu_ms_per_request": measured.cpu_ms / max(1, len(measured.samples_ms)),
    }
    if not ok:
        row["error"] = (
            f"{measured.bad_answers} of {len(measured.samples_ms)} answers lacked "
            f"{list(EXPECTED_IN_ANSWER)}; last answer: {measured.last_answer[:200]!r}"
        )
    row.update(extra)
    return row


def guarded(name: str, main: Callable[[], Awaitable[dict[str, Any]]]) -> None:
    """Run a runner's async main and print its row; any exception becomes an `ok: false` row."""
    try:
        row = asyncio.run(main())
    except BaseException as exc:  # the harness must get a row whatever happened
        traceback.print_exc(file=sys.stderr)
        row = failed_row(name, describe(exc))
    emit(row)


def describe(exc: BaseException) -> str:
    """`Type: message` of the first leaf exception (task groups wrap the real one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


@contextlib.asynccontextmanager
async def timed() -> AsyncIterator[list[float]]:
    """`async with timed() as t:` leaves the elapsed milliseconds in `t[0]`."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append((time.perf_counter() - start) * 1000.0)
