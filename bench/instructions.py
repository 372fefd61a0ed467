"""Instructions per request in the client process, counted by callgrind: steady under any load.

    python bench/instructions.py                      # every scenario, 50 requests each
    python bench/instructions.py --only run,floor -n 100
    python bench/instructions.py --src /tmp/old/src   # another source tree's toolnexus
    python bench/instructions.py --only llm --keep /tmp/cg   # then callgrind_annotate it

Each scenario runs in its own interpreter under `valgrind --tool=callgrind` with
instrumentation off; after the warm-up requests the process switches it on
(`callgrind_control -i on`) for exactly the measured requests, then off again. The mock LLM
and the MCP server run outside valgrind (their cost is not counted). The count does not
depend on what else the machine is doing, so it can tell a 1% change where wall and CPU time
on a shared machine cannot. Switching instrumentation on and off is counted too (about
0.27 M instructions per scenario, ~0.005 M per request at the default 50). Needs valgrind
(`apt-get install valgrind`).

Scenarios: `run` (the benchmark request: 2 LLM calls, 2 MCP calls), `stream` (the same
through `client.stream`), `llm` (one LLM call, no tools), `mcp` (two concurrent
`toolkit.execute` calls on the MCP server), `floor` (the `floor` runner's request: raw asyncio
HTTP and a bare SDK `ClientSession` at 2025-11-25), `floor_modern` (the same at 2026-07-28, the
era the toolkit negotiates by default). The HTTP layer alone, one POST of a chat request and its
answer read whole: `post_raw` (the floor's hand-written asyncio POST), `post_transport` (a
request built once, sent straight through `Http1Transport.handle_async_request`), `post_http1`
(`httpx2.AsyncClient` on our `Http1Transport`), `post_httpx2` (`httpx2.AsyncClient` on its own
transport: httpcore2 + h11 on anyio), `post_aiohttp` (an `aiohttp.ClientSession`, the other
well-kept asyncio client, when installed), `post_client` (the LLM client's HTTP step alone: its
`HttpxTransport.post`, request building, `AsyncClient.send` and the body read whole and decoded).
`own`: toolnexus's own code alone, `bench/hotpath.py --own`'s request (the model answered
in-process, two plain tools): the loop, endpoint, dialect, hooks, events, metrics, dispatch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "runners"))
import _common as c  # noqa: E402 - bench/ is not a package

SCENARIOS = (
    "run",
    "stream",
    "llm",
    "mcp",
    "floor",
    "floor_modern",
    "post_raw",
    "post_transport",
    "post_http1",
    "post_httpx2",
    "post_aiohttp",
    "post_client",
    "own",
)
_CHAT = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
WARMUP = 20


def _toggle(on: bool) -> None:
    """Switch this process's instrumentation on or off (it must run under callgrind)."""
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
        check=True,
        stdout=subprocess.DEVNULL,
    )


async def _measure(request: Callable[[], Awaitable[Any]], n: int) -> None:
    for _ in range(WARMUP):
        await request()
    _toggle(True)
    for _ in range(n):
        await request()
    _toggle(False)


async def _toolnexus(scenario: str, base_url: str, n: int, protocol: str) -> None:
    from toolnexus import create_client, create_toolkit

    config = c.mcp_config()
    if protocol != "auto":
        for server in config["mcpServers"].values():
            server["protocol"] = protocol
    toolkit = await create_toolkit(config, builtins=False)
    try:
        client = create_client(base_url=base_url, style="openai", model="mock", api_key="bench")

        async def run() -> Any:
            result = await client.run(c.PROMPT, toolkit)
            assert c.answer_ok(result.text), result.text

        async def stream() -> Any:
            async for _event in client.stream(c.PROMPT, toolkit):
                pass

        async def llm() -> Any:
            return await client.run("hi")

        async def mcp() -> Any:
            names = [t.name for t in toolkit.tools()]
            weather = next(n for n in names if n.endswith("get_weather"))
            add = next(n for n in names if n.endswith("add"))
            return await asyncio.gather(
                toolkit.execute(weather, {"city": "Paris"}), toolkit.execute(add, {"a": 2, "b": 2})
            )

        await _measure({"run": run, "stream": stream, "llm": llm, "mcp": mcp}[scenario], n)
        await client.aclose()
    finally:
        await toolkit.close()


async def _floor(base_url: str, n: int, *, modern: bool) -> None:
    from floor import floor_request

    async with floor_request(base_url, modern=modern) as request:
        await _measure(request, n)


async def _post(scenario: str, base_url: str, n: int) -> None:
    if scenario == "post_raw":
        from floor import RawHTTP

        raw = RawHTTP(base_url)
        await raw.connect()
        try:
            await _measure(lambda: raw.post(_CHAT), n)
        finally:
            await raw.close()
        return
    if scenario == "post_client":
        from toolnexus.client._transport import HttpxTransport

        client_transport = HttpxTransport(None, 600.0)
        chat_url = base_url.rstrip("/") + "/chat/completions"
        try:
            await _measure(
                lambda: client_transport.post(chat_url, {"Authorization": "Bearer bench"}, _CHAT),
                n,
            )
        finally:
            await client_transport.aclose()
        return
    if scenario == "post_aiohttp":
        import aiohttp

        chat_url = base_url.rstrip("/") + "/chat/completions"
        async with aiohttp.ClientSession() as session:

            async def post_aiohttp() -> Any:
                async with session.post(
                    chat_url, json=_CHAT, headers={"Authorization": "Bearer bench"}
                ) as response:
                    response.raise_for_status()
                    return json.loads(await response.read())

            await _measure(post_aiohttp, n)
        return
    import httpx2

    from toolnexus._http1 import Http1Transport

    transport = None if scenario == "post_httpx2" else Http1Transport()
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": "Bearer bench"}
    if transport is not None and scenario == "post_transport":
        request = httpx2.Request("POST", url, json=_CHAT, headers=headers)
        content = request.read()

        async def send() -> Any:
            request.stream = httpx2.ByteStream(content)
            response = await transport.handle_async_request(request)
            body = b"".join([part async for part in response.stream])  # type: ignore[union-attr]
            await response.aclose()
            return json.loads(body)

        try:
            await _measure(send, n)
        finally:
            await transport.aclose()
        return
    async with httpx2.AsyncClient(transport=transport) as http:

        async def post() -> Any:
            response = await http.post(url, json=_CHAT, headers=headers)
            response.raise_for_status()
            return response.json()

        await _measure(post, n)


async def _own(n: int) -> None:
    """`bench/hotpath.py --own`'s request: the loop with the model and tools in-process."""
    from hotpath import _own_tools, _ScriptedModel
    from toolnexus import create_toolkit
    from toolnexus.client import Client

    toolkit = await create_toolkit(extra_tools=_own_tools(), builtins=False)
    client = Client._over(_ScriptedModel(), style="openai", model="mock", api_key="x")
    try:
        await _measure(lambda: client.run(c.PROMPT, toolkit), n)
    finally:
        await toolkit.close()


def _child(scenario: str, base_url: str, n: int, protocol: str) -> None:
    if scenario == "own":
        asyncio.run(_own(n))
    elif scenario.startswith("post_"):
        asyncio.run(_post(scenario, base_url, n))
    elif scenario in ("floor", "floor_modern"):
        asyncio.run(_floor(base_url, n, modern=scenario == "floor_modern"))
    else:
        asyncio.run(_toolnexus(scenario, base_url, n, protocol))


def _count(
    scenario: str, base_url: str, n: int, src: str | None, keep: Path | None, protocol: str
) -> float:
    """Instructions per request of `scenario`, from a callgrind child.

    With `keep`, the callgrind output is kept there as `callgrind.<scenario>.out` (for
    `callgrind_annotate`).
    """
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as folder:
        out = (keep or Path(folder)) / f"callgrind.{scenario}.out"
        env = dict(os.environ)
        if src:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            scenario,
            "--base-url",
            base_url,
            "-n",
            str(n),
            "--mcp-protocol",
            protocol,
        ]
        subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
        match = re.search(r"^totals: (\d+)", out.read_text(), re.M)
        if match is None:
            raise RuntimeError(f"no totals in {out}")
        return int(match.group(1)) / n


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("-n", type=int, default=50, help="measured requests per scenario")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="scenarios, comma-separated")
    parser.add_argument("--src", help="the source tree whose toolnexus to measure")
    parser.add_argument(
        "--keep", type=Path, help="keep each scenario's callgrind output in this folder"
    )
    parser.add_argument(
        "--mcp-protocol",
        default="auto",
        choices=("auto", "legacy", "2026-07-28"),
        help="the toolkit's MCP era (auto: 2026-07-28 with this SDK; the floor's bare"
        " ClientSession speaks legacy)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.base_url, args.n, args.mcp_protocol)
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("needs valgrind (callgrind and callgrind_control) on PATH", file=sys.stderr)
        return 2
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    with c.MockLLMProcess() as base_url:
        for scenario in chosen:
            per_request = _count(scenario, base_url, args.n, args.src, args.keep, args.mcp_protocol)
            print(f"{scenario:14} {per_request / 1e6:8.3f} M instructions per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
