"""A stdlib-only MCP stdio server (2025-11-25) that frames its output awkwardly on purpose,
for the stdio transport's tests.

    python stdio_framing.py EXIT_MARKER_FILE

Tools (all take an object):
- `echo {"text"}` — answers the text;
- `burst {"n"}` — answers after `n` log notifications, all in one write;
- `dribble {"text"}` — answers the text, writing the reply a few bytes at a time.

At the end of stdin it writes 2 MiB of blank lines to stdout (more than a pipe holds, so it
blocks unless its reader keeps reading), then writes `clean exit` to EXIT_MARKER_FILE and exits 0.
"""

from __future__ import annotations

import json
import sys
import time

EXIT_MARKER = sys.argv[1]
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "burst", "dribble")]


def line(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def answer(msg_id: object, text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}]}
    return line({"jsonrpc": "2.0", "id": msg_id, "result": result})


def call(msg_id: object, name: str, args: dict[str, object]) -> None:
    if name == "echo":
        write(answer(msg_id, str(args.get("text", ""))))
    elif name == "burst":
        count = int(str(args.get("n", 0)))
        logs = b"".join(
            line(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "warning", "data": f"burst {i}"},
                }
            )
            for i in range(count)
        )
        write(logs + answer(msg_id, f"after {count}"))
    elif name == "dribble":
        data = answer(msg_id, str(args.get("text", "")))
        for start in range(0, len(data), 7):
            write(data[start : start + 7])
            time.sleep(0.001)


def main() -> None:
    for raw in sys.stdin:
        message = json.loads(raw)
        method, msg_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "framing", "version": "1"},
            }
            write(line({"jsonrpc": "2.0", "id": msg_id, "result": result}))
        elif method == "tools/list":
            write(line({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": TOOLS}}))
        elif method == "tools/call":
            params = message["params"]
            call(msg_id, params["name"], params.get("arguments") or {})
        elif method == "ping":
            write(line({"jsonrpc": "2.0", "id": msg_id, "result": {}}))
        elif msg_id is not None:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            write(line({"jsonrpc": "2.0", "id": msg_id, "error": error}))
    write(b"\n" * (2 << 20))
    with open(EXIT_MARKER, "w") as fh:
        fh.write("clean exit")


if __name__ == "__main__":
    main()
