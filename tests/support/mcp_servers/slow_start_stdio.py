"""A minimal MCP stdio server using only the standard library (starts in milliseconds).

Run it as a script::

    python slow_start_stdio.py                    # answers at once
    python slow_start_stdio.py --delay 0.5        # sleeps 0.5 s before reading anything
    python slow_start_stdio.py --tools 3          # tools ping0..ping2
    python slow_start_stdio.py --hang initialize  # never answers `initialize`
    python slow_start_stdio.py --hang tools/list  # answers `initialize`, never `tools/list`
    python slow_start_stdio.py --hang server/discover  # never answers the 2026-07-28 probe
    python slow_start_stdio.py --odd-schemas      # tools whose inputSchema the SDK would reject
    python slow_start_stdio.py --endless          # every tools/list page has a new nextCursor
    python slow_start_stdio.py --dup-cursor       # every tools/list page has nextCursor "page-1"
    python slow_start_stdio.py --life-tools       # adds echo, pid, spawn_child, exit_later
    python slow_start_stdio.py --phase-delay 0.9  # waits 0.9 s before answering initialize,
                                                  # and again before answering tools/list
    python slow_start_stdio.py --fail-while FILE  # exits at once (code 1) while FILE exists
    python slow_start_stdio.py --barrier DIR --count 4
        # leaves a file in DIR as soon as it runs, then answers `initialize` only once DIR
        # holds 4 files: it loads only if all 4 are started before any is initialized

It speaks just enough MCP (newline-delimited JSON-RPC 2.0) for `initialize`, `tools/list`,
`tools/call` (each `pingN` answers `pong`) and `ping`; it exits when stdin closes. Made for
timing how a client connects without measuring Python SDK import time, and for life-cycle
tests that need a server process but not the SDK's features (`--life-tools`):

- `echo {"text"}` answers the text; `pid` answers the server's process id;
- `spawn_child {"detach", "hold_mb"}` starts a long-sleeping grandchild (`detach`: in a session
  of its own; `hold_mb`: holding that many MiB of written memory) and answers its pid;
- `exit_later {"code", "message"}` answers `bye`, then writes `message` to stderr and exits
  with `code`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# --odd-schemas: one tool per way a server gets `inputSchema` wrong or unusual.
ODD_TOOLS: list[dict[str, object]] = [
    {"name": "bare"},
    {"name": "null_schema", "inputSchema": None},
    {"name": "not_a_schema", "inputSchema": "nope"},
    {"name": "typeless", "inputSchema": {"properties": {"q": {"type": "string"}}}},
    {"name": "loose", "inputSchema": {"type": "object", "properties": {"q": "string"}}},
    {"name": "array_root", "inputSchema": {"type": "array"}},
]


LIFE_TOOLS: list[dict[str, object]] = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "pid", "spawn_child", "exit_later")
]


def reply(msg_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def text(value: object) -> dict[str, object]:
    return {"content": [{"type": "text", "text": str(value)}]}


def call_life_tool(name: str, args: dict[str, object]) -> dict[str, object]:
    if name == "echo":
        return text(args.get("text", ""))
    if name == "pid":
        return text(os.getpid())
    if name == "spawn_child":
        hold = int(str(args.get("hold_mb", 0))) << 20
        child = subprocess.Popen(
            [sys.executable, "-c", f"import time; held = b'1' * {hold}; time.sleep(300)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=bool(args.get("detach")),
        )
        return text(child.pid)
    return text("pong")


def exit_later(msg_id: object, args: dict[str, object]) -> None:
    reply(msg_id, text("bye"))
    time.sleep(0.05)
    if args.get("message"):
        print(args["message"], file=sys.stderr, flush=True)
    os._exit(int(str(args.get("code", 0))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--tools", type=int, default=1)
    parser.add_argument(
        "--hang", choices=["initialize", "tools/list", "server/discover"], default=None
    )
    parser.add_argument("--odd-schemas", action="store_true")
    parser.add_argument("--endless", action="store_true", help="a new nextCursor on every page")
    parser.add_argument("--dup-cursor", action="store_true")
    parser.add_argument("--life-tools", action="store_true")
    parser.add_argument("--phase-delay", type=float, default=0.0)
    parser.add_argument("--barrier", default=None, metavar="DIR")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--fail-while", default=None, metavar="FILE")
    args = parser.parse_args()
    if args.fail_while is not None and os.path.exists(args.fail_while):
        sys.stderr.write("cannot start: broken\n")
        sys.exit(1)
    if args.barrier:
        Path(args.barrier, str(os.getpid())).touch()
    time.sleep(args.delay)
    tools = [
        {
            "name": f"ping{i}",
            "description": "Answer pong.",
            "inputSchema": {"type": "object", "properties": {}},
        }
        for i in range(args.tools)
    ]
    if args.odd_schemas:
        tools = ODD_TOOLS
    if args.life_tools:
        tools = tools + LIFE_TOOLS
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method == args.hang:
            continue  # notifications need no answer; a "hung" method never gets one
        if method in ("initialize", "tools/list"):
            time.sleep(args.phase_delay)
        if method == "initialize":
            while args.barrier and len(os.listdir(args.barrier)) < args.count:
                time.sleep(0.01)
            reply(
                message["id"],
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "slow-start", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            page: dict[str, object] = {"tools": tools}
            if args.endless:
                cursor = (message.get("params") or {}).get("cursor") or "page-0"
                page["nextCursor"] = f"page-{int(cursor.split('-')[1]) + 1}"
            elif args.dup_cursor:
                page["nextCursor"] = "page-1"
            reply(message["id"], page)
        elif method == "tools/call":
            params = message["params"]
            arguments = params.get("arguments") or {}
            if params["name"] == "exit_later":
                exit_later(message["id"], arguments)
            reply(message["id"], call_life_tool(params["name"], arguments))
        else:
            reply(message["id"], {})


if __name__ == "__main__":
    main()
