"""`scale_gateway`: MCP `tools/call` through `toolkit.serve(..., mcp={})` versus direct.

Paths to the same `add` function, each with the SDK's `ClientSession`:
- direct: over stdio to the fixture server;
- SDK HTTP: the fixture server itself on the SDK's streamable-HTTP transport (`MCPServer`);
- gateway: over streamable HTTP to a toolnexus gateway process (fixtures/gateway.py) whose
  toolkit holds the server over stdio; measured again with a bare httpx2 JSON-RPC client
  (no SDK) to separate the gateway's own cost from the SDK client's;
- native gateway: the gateway serving `add` as a native tool (`gateway.py --native`).
Latency is sequential calls of `add`; throughput keeps `--inflight` calls outstanding. p50 is
the gateway's; `added_ms` = gateway p50 − direct p50. The two targets: `native_ratio` =
native gateway p50 / SDK HTTP p50 (≤ 1.1) and `stdio_ratio` = gateway p50 / (SDK HTTP p50 +
direct p50) (≤ 1.2); `stdio_ratio_same_era` takes the direct call at 2026-07-28 instead
(`direct_modern`), the era the gateway's toolkit negotiates upstream: the stdio server's side
of a call costs more there. `--rounds N` measures every path N times in rotating order and
reports medians (steadier on a busy machine). `*_server_cpu_us_per_call` is the server
process's CPU per call with `--inflight` outstanding (Linux), and `native_cpu_ratio` the native
gateway's over the SDK's. With `--modern` the HTTP paths' SDK clients are `mcp.Client`, which
negotiates 2026-07-28 (the direct stdio path stays a 2025-11-25 `ClientSession`).

`--instructions` instead counts each HTTP server process's instructions per call under
callgrind (`valgrind --tool=callgrind --instr-atstart=no`, switched on with `callgrind_control`
only around the measured calls, `--inflight` outstanding): the SDK's HTTP server, the native
gateway and the gateway in front of the stdio server (its own process; the upstream server is
not counted). Unlike wall-clock and `/proc` figures, these do not move with the machine's load.
`--only sdk,native,stdio` picks some of the three; `--callgrind-dir DIR` keeps the dumps for
`callgrind_annotate`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds a process has used (Linux `/proc`), `None` elsewhere."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


async def measure(
    session: Any, tool: str, args: argparse.Namespace, server_pid: int | None = None
) -> dict[str, float | None]:
    """Sequential latency samples (ms) and concurrent throughput (calls/s) of one session, and
    the server process's CPU per call while `--inflight` calls are outstanding (steady on a
    loaded machine, where wall-clock figures are not)."""

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

    cpu_before = process_cpu_s(server_pid)
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.inflight)))
    rate = args.calls / (time.perf_counter() - start)
    cpu_after = process_cpu_s(server_pid)
    cpu_us = (
        (cpu_after - cpu_before) / args.calls * 1e6
        if cpu_before is not None and cpu_after is not None
        else None
    )
    return {**c.summary(samples), "calls_per_s": rate, "server_cpu_us_per_call": cpu_us}


async def direct(args: argparse.Namespace, *, modern: bool = False) -> dict[str, float]:
    """A bare SDK `ClientSession` over stdio: 2025-11-25, or with `modern` 2026-07-28 (the era
    the gateway's own toolkit negotiates with the same server)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = c.mcp_server_command()
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await (session.discover() if modern else session.initialize())
        return await measure(session, "add", args)


class RawSession:
    """A minimal MCP-over-HTTP client (httpx2 POSTs, no SDK) to see the server's own cost."""

    def __init__(self, url: str) -> None:
        import httpx2

        self.url = url
        self.http = httpx2.AsyncClient(timeout=30)
        self.headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self.ids = iter(range(1, 1 << 30))

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        notify = method.startswith("notifications/")
        if not notify:
            message["id"] = next(self.ids)
        response = await self.http.post(self.url, json=message, headers=self.headers)
        if "mcp-session-id" in response.headers:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        if notify:
            return None
        text = response.text
        if not text.lstrip().startswith("{"):  # an SSE answer: the data line holds the JSON
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        return json.loads(text)["result"]

    async def initialize(self) -> None:
        result = await self.rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.headers["mcp-protocol-version"] = result["protocolVersion"]
        await self.rpc("notifications/initialized")

    async def list_tools(self) -> Any:
        result = await self.rpc("tools/list")
        return SimpleNamespace(tools=[SimpleNamespace(name=t["name"]) for t in result["tools"]])

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        result = await self.rpc("tools/call", {"name": name, "arguments": arguments})
        return SimpleNamespace(
            content=[SimpleNamespace(text=p.get("text", "")) for p in result["content"]],
            is_error=result.get("isError", False),
        )

    async def aclose(self) -> None:
        await self.http.aclose()


@contextlib.asynccontextmanager
async def sdk_session(url: str, modern: bool = False) -> AsyncIterator[Any]:
    """The SDK's `ClientSession` after `initialize` (2025-11-25), or with `modern` the SDK's
    `Client`, which negotiates 2026-07-28 (no handshake, per-request `_meta`)."""
    if modern:
        from mcp import Client

        async with Client(url) as client:
            yield client
        return
    from mcp.client.streamable_http import streamable_http_client

    from mcp import ClientSession

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def raw_session(url: str) -> AsyncIterator[Any]:
    session = RawSession(url)
    try:
        await session.initialize()
        yield session
    finally:
        await session.aclose()


@contextlib.contextmanager
def http_server(command: list[str]) -> Any:
    """Start an MCP server process that prints its streamable-HTTP endpoint URL; yield
    `(process, url)`; stop it on the way out (unless it already exited)."""
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        url = ""
        for _ in range(20):  # the endpoint line; stray lines a library prints come first
            url = server.stdout.readline().strip()
            if url.startswith("http") or server.poll() is not None:
                break
        if not url.startswith("http"):
            raise RuntimeError(f"{command[-1]} did not start (printed {url!r})")
        yield server, url
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


async def add_tool(session: Any) -> str:
    names = [t.name for t in (await session.list_tools()).tools]
    tool = next((n for n in names if n == "add" or n.endswith("_add")), None)
    if tool is None:
        raise RuntimeError(f"the server exposes no add tool: {names}")
    return tool


async def over_http(
    command: list[str], args: argparse.Namespace, *, reports_rss: bool = False, raw: bool = False
) -> dict[str, Any]:
    """Measure an MCP server process that prints its streamable-HTTP endpoint URL.

    With `reports_rss` the process exits on stdin EOF after printing `{"rss_mb": ...}`.
    """
    with http_server(command) as (server, url):
        opened = raw_session(url) if raw else sdk_session(url, args.modern)
        async with opened as session:
            stats: dict[str, Any] = await measure(
                session, await add_tool(session), args, server.pid
            )
        stats["rss_mb"] = None
        if reports_rss:
            try:
                out, _ = server.communicate(timeout=10)
                stats["rss_mb"] = json.loads(out.strip().splitlines()[-1])["rss_mb"]
            except (subprocess.TimeoutExpired, ValueError, KeyError, IndexError):
                pass
        return stats


async def server_instructions(command: list[str], args: argparse.Namespace, label: str) -> float:
    """Instructions per `tools/call` the server process spends, `--inflight` outstanding.
    With `--callgrind-dir` the dumps are kept there as `<label>.callgrind.out*`."""
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as folder:
        out = Path(folder) / "callgrind.out"
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            "--log-file=/dev/null",
        ]
        with http_server([*valgrind, *command]) as (server, url):
            async with sdk_session(url, args.modern) as session:
                tool = await add_tool(session)
                for _ in range(args.warmup):
                    await session.call_tool(tool, {"a": 2, "b": 2})
                remaining = args.calls

                async def worker() -> None:
                    nonlocal remaining
                    while remaining > 0:
                        remaining -= 1
                        await session.call_tool(tool, {"a": 2, "b": 2})

                subprocess.run(
                    ["callgrind_control", "-i", "on", str(server.pid)],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                await asyncio.gather(*(worker() for _ in range(args.inflight)))
                subprocess.run(
                    ["callgrind_control", "-i", "off", str(server.pid)],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            # the measured part, written now: the process is stopped on the way out
            subprocess.run(
                ["callgrind_control", "-d", str(server.pid)], check=True, stdout=subprocess.DEVNULL
            )
        totals = 0
        for dump in Path(folder).glob("callgrind.out*"):
            match = re.search(r"^totals: (\d+)", dump.read_text(), re.M)
            totals += int(match.group(1)) if match else 0
            if args.callgrind_dir:
                keep = Path(args.callgrind_dir)
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(dump, keep / f"{label}.{dump.name}")
        if not totals:
            raise RuntimeError(f"no callgrind totals for {command[-1]}")
        return totals / args.calls


async def instructions(args: argparse.Namespace) -> dict[str, Any]:
    """The `--instructions` row: instructions per call in each HTTP server process."""
    gateway = [c.repo_python(), str(c.FIXTURES_DIR / "gateway.py")]
    commands = {
        "sdk": [*c.mcp_server_command(), "--http"],
        "native": [*gateway, "--native"],
        "stdio": gateway,
    }
    wanted = set(args.only.split(",")) if args.only else set(commands)
    counts: dict[str, float] = {}
    for label, command in commands.items():
        if label in wanted:
            counts[label] = await server_instructions(command, args, label)
    if len(counts) < len(commands):  # a partial run: the counts alone
        return {
            "name": "scale_gateway_instructions",
            "ok": True,
            "calls": args.calls,
            "inflight": args.inflight,
            **{f"{label}_instructions_per_call": n for label, n in counts.items()},
            "headline": ", ".join(f"{k} {n / 1e6:.3f} M" for k, n in counts.items()),
        }
    sdk, native, stdio = counts["sdk"], counts["native"], counts["stdio"]
    return {
        "name": "scale_gateway_instructions",
        "ok": True,
        "calls": args.calls,
        "inflight": args.inflight,
        "protocol": "2026-07-28" if args.modern else "2025-11-25",
        "sdk_http_instructions_per_call": sdk,
        "native_gateway_instructions_per_call": native,
        "gateway_instructions_per_call": stdio,
        "native_instructions_ratio": native / sdk,
        "headline": (
            f"instructions per tools/call in the server process, {args.inflight} in flight: "
            f"SDK HTTP server {sdk / 1e6:.2f} M, native gateway {native / 1e6:.2f} M "
            f"({native / sdk:.2f}x), gateway over stdio {stdio / 1e6:.2f} M"
        ),
    }


async def measure_paths(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each path's figures: with `--rounds N`, every path is measured N times, the order
    rotating each round so a slow phase of the machine hits every path, and each figure is the
    median over the rounds."""
    gateway = [c.repo_python(), str(c.FIXTURES_DIR / "gateway.py")]
    paths: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
        "direct": lambda: direct(args),
        "gateway": lambda: over_http(gateway, args, reports_rss=True),
    }
    if not args.quick:
        paths["direct_modern"] = lambda: direct(args, modern=True)
        paths["sdk_http"] = lambda: over_http([*c.mcp_server_command(), "--http"], args)
        paths["gateway_raw"] = lambda: over_http(gateway, args, raw=True)
        paths["native"] = lambda: over_http([*gateway, "--native"], args)
    names = list(paths)
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        turn = round_number % len(names)
        for name in names[turn:] + names[:turn]:
            seen[name].append(await paths[name]())
    return {name: _medians(rows) for name, rows in seen.items()}


def _medians(rows: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key in rows[0]:
        values = [r[key] for r in rows if r.get(key) is not None]
        merged[key] = statistics.median(values) if values else None
    return merged


async def main(args: argparse.Namespace) -> dict[str, Any]:
    measured = await measure_paths(args)
    base, gate = measured["direct"], measured["gateway"]
    added = gate["p50_ms"] - base["p50_ms"]
    row: dict[str, Any] = {
        "name": "scale_gateway",
        "init_ms": None,
        "p50_ms": gate["p50_ms"],
        "p95_ms": gate["p95_ms"],
        "mean_ms": gate["mean_ms"],
        "rss_mb": c.peak_rss_mb(),
        "ok": True,
        "calls": args.calls,
        "inflight": args.inflight,
        "gateway_calls_per_s": gate["calls_per_s"],
        "gateway_rss_mb": gate.get("rss_mb"),
        "direct_p50_ms": base["p50_ms"],
        "direct_p95_ms": base["p95_ms"],
        "direct_calls_per_s": base["calls_per_s"],
        "added_ms": added,
        "headline": (
            f"tools/call p50: gateway {gate['p50_ms']:.2f} ms vs direct stdio "
            f"{base['p50_ms']:.2f} ms (+{added:.2f} ms); {gate['calls_per_s']:.0f} vs "
            f"{base['calls_per_s']:.0f} calls/s with {args.inflight} in flight"
        ),
    }
    if args.quick:  # the smoke test checks that the gateway works, not the breakdown
        return row
    sdk_http, gate_raw, native = measured["sdk_http"], measured["gateway_raw"], measured["native"]
    row["rounds"] = args.rounds
    native_ratio = native["p50_ms"] / sdk_http["p50_ms"]
    stdio_ratio = gate["p50_ms"] / (sdk_http["p50_ms"] + base["p50_ms"])
    # The gateway's toolkit speaks 2026-07-28 to the stdio server, whose side of a call costs
    # more in that era than in the direct path's 2025-11-25: the like-for-like sum.
    direct_modern = measured["direct_modern"]
    stdio_ratio_same_era = gate["p50_ms"] / (sdk_http["p50_ms"] + direct_modern["p50_ms"])
    if native["server_cpu_us_per_call"] and sdk_http["server_cpu_us_per_call"]:
        row["native_cpu_ratio"] = (
            native["server_cpu_us_per_call"] / sdk_http["server_cpu_us_per_call"]
        )
    row.update(
        sdk_http_server_cpu_us_per_call=sdk_http["server_cpu_us_per_call"],
        native_gateway_server_cpu_us_per_call=native["server_cpu_us_per_call"],
        gateway_server_cpu_us_per_call=gate["server_cpu_us_per_call"],
    )
    row.update(
        sdk_http_p50_ms=sdk_http["p50_ms"],
        sdk_http_calls_per_s=sdk_http["calls_per_s"],
        added_vs_sdk_http_ms=gate["p50_ms"] - sdk_http["p50_ms"],
        gateway_raw_client_p50_ms=gate_raw["p50_ms"],
        gateway_raw_client_calls_per_s=gate_raw["calls_per_s"],
        native_gateway_p50_ms=native["p50_ms"],
        native_gateway_calls_per_s=native["calls_per_s"],
        native_ratio=native_ratio,
        stdio_ratio=stdio_ratio,
        direct_modern_p50_ms=direct_modern["p50_ms"],
        stdio_ratio_same_era=stdio_ratio_same_era,
    )
    row["headline"] += (
        f"; the SDK's own HTTP server {sdk_http['p50_ms']:.2f} ms "
        f"({sdk_http['calls_per_s']:.0f} calls/s); gateway with a bare httpx2 client "
        f"{gate_raw['p50_ms']:.2f} ms; native tool through the gateway {native['p50_ms']:.2f} ms "
        f"({native['calls_per_s']:.0f} calls/s): native_ratio {native_ratio:.2f} (target 1.1), "
        f"stdio_ratio {stdio_ratio:.2f} (target 1.2); direct stdio at 2026-07-28 "
        f"{direct_modern['p50_ms']:.2f} ms, stdio_ratio_same_era {stdio_ratio_same_era:.2f}"
    )
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure every path N times, medians reported"
    )
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="50 calls, gateway vs direct only")
    parser.add_argument(
        "--instructions", action="store_true", help="server instructions per call (callgrind)"
    )
    parser.add_argument(
        "--modern", action="store_true", help="SDK clients negotiate 2026-07-28 (mcp.Client)"
    )
    parser.add_argument(
        "--only", help="with --instructions: a comma-separated subset of sdk,native,stdio"
    )
    parser.add_argument(
        "--callgrind-dir", help="with --instructions: keep the callgrind dumps there"
    )
    ARGS = parser.parse_args()
    if ARGS.instructions:
        if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
            sys.exit("--instructions needs valgrind (callgrind and callgrind_control) on PATH")
        c.guarded("scale_gateway_instructions", lambda: instructions(ARGS))
        sys.exit(0)
    if ARGS.quick:
        ARGS.calls, ARGS.warmup, ARGS.rounds = min(ARGS.calls, 50), min(ARGS.warmup, 5), 1
    c.guarded("scale_gateway", lambda: main(ARGS))
