"""A minimal MCP stdio server using only the standard library (starts in milliseconds).

Run it as a script::

    python slow_start_stdio.py                    # answers at once
    python slow_start_stdio.py --delay 0.5        # sleeps 0.5 s before reading anything
    python slow_start_stdio.py --tools 3          # tools ping0..ping2
    python slow_start_stdio.py --hang initialize  # never answers `initialize`
    python slow_start_stdio.py --hang tools/list  # answers `initialize`, never `tools/list`
    python slow_start_stdio.py --bare-tools       # tools listed with no description or schema
    python slow_start_stdio.py --endless          # every tools/list page has a new nextCursor

It speaks just enough MCP (newline-delimited JSON-RPC 2.0) for `initialize`, `tools/list`,
`tools/call` (each `pingN` answers `pong`) and `ping`; it exits when stdin closes. Made for
timing how a client connects without measuring Python SDK import time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def reply(msg_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--tools", type=int, default=1)
    parser.add_argument("--hang", choices=["initialize", "tools/list"], default=None)
    parser.add_argument("--bare-tools", action="store_true", help="list tools without a schema")
    parser.add_argument("--endless", action="store_true", help="a new nextCursor on every page")
    args = parser.parse_args()
    time.sleep(args.delay)
    tools = [
        {
            "name": f"ping{i}",
            "description": "Answer pong.",
            "inputSchema": {"type": "object", "properties": {}},
        }
        for i in range(args.tools)
    ]
    if args.bare_tools:
        tools = [{"name": t["name"]} for t in tools]
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method == args.hang:
            continue  # notifications need no answer; a "hung" method never gets one
        if method == "initialize":
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
            reply(message["id"], page)
        elif method == "tools/call":
            reply(message["id"], {"content": [{"type": "text", "text": "pong"}]})
        else:
            reply(message["id"], {})


if __name__ == "__main__":
    main()
