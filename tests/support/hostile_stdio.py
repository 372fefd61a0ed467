"""A stdlib-only MCP stdio server that misbehaves on request, for the hardening tests.

    python hostile_stdio.py MARKER [--stubborn] [--non-finite]

`MARKER` is put on the command line of every process it starts (so a test can count them in
/proc). `--stubborn` ignores SIGTERM and the end of stdin (it must be killed). `--non-finite` also
lists `measure`, whose input schema holds NaN and Infinity, written as `json.dumps` writes them
(`NaN`, `Infinity`: not JSON; an SDK server would write `null`).

Tools (all take an object):
- `spawn` — starts a grandchild in a session of its own (`setsid`) and answers its pid;
- `crash` — starts such a grandchild, then dies mid-call without answering;
- `hang` — never answers;
- `flood {"bytes"}` — writes that many bytes without a newline, then hangs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MARKER = sys.argv[1]
STUBBORN = "--stubborn" in sys.argv
TOOLS: list[dict[str, object]] = [
    {"name": n, "inputSchema": {"type": "object"}} for n in ("spawn", "crash", "hang", "flood")
]
if "--non-finite" in sys.argv:
    TOOLS.append(
        {
            "name": "measure",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "size": {"type": "number", "minimum": 0, "maximum": float("inf")},
                    "ratio": {
                        "type": "number",
                        "default": float("nan"),
                        "enum": [1, float("-inf")],
                    },
                },
            },
        }
    )


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def grandchild() -> int:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(1)", MARKER],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return child.pid


def main() -> None:
    if STUBBORN:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": msg_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "spawn":
                text = str(grandchild())
                content = [{"type": "text", "text": text}]
                send({"jsonrpc": "2.0", "id": msg_id, "result": {"content": content}})
            elif name == "crash":
                grandchild()
                os._exit(3)
            elif name == "flood":
                size = int(message["params"].get("arguments", {}).get("bytes", 0))
                block = b"x" * 65536
                while size > 0:
                    sys.stdout.buffer.write(block[:size])
                    size -= len(block)
                sys.stdout.flush()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {}})
        elif msg_id is not None:  # e.g. the 2026-07-28 probe: refused at once, as servers do
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": msg_id, "error": error})
    while STUBBORN:  # end of input ignored
        time.sleep(1)


if __name__ == "__main__":
    main()
