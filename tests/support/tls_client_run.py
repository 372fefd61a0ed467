"""Run the client against a fake LLM served over HTTPS; print what it saw as one JSON line.

    python tests/support/tls_client_run.py <folder with ca.pem, server.pem, server.key>

The caller sets `SSL_CERT_FILE` to the CA (the client's own connections trust it only that
way), so this runs in a process of its own. One run with a tool call, then one streamed run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.client_helpers import add_tool, kit
from support.fake_llm import FakeLLM, call, text, tools
from support.tls import TestCertificates
from toolnexus.client import create_client


async def main(folder: Path) -> dict[str, object]:
    certs = TestCertificates(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    with FakeLLM(ssl=certs.server_context()) as llm:
        llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"), text("streamed over TLS"))
        async with create_client(
            base_url=llm.url + "/v1", style="openai", model="m", api_key="k"
        ) as client:
            result = await client.run("1 + 2?", kit(add_tool()))
            deltas = [
                event["delta"] async for event in client.stream("hi") if event["type"] == "text"
            ]
        return {
            "url": llm.url,
            "text": result.text,
            "tool_output": result.tool_calls[0]["output"],
            "streamed": "".join(deltas),
            "requests": len(llm.requests),
            "connections": llm.connections,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
