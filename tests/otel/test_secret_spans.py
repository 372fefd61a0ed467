"""No secret reaches a span or a metric: credentials in URLs, headers, `${ENV}` values and API
keys, sent to hostile endpoints on 127.0.0.1 that echo every header and the URL back in their
error answers, while a run, an HTTP tool and MCP servers fail on them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.serve_hardening import EchoingHandler, threaded_http
from toolnexus import create_toolkit, http_tool
from toolnexus.client import create_client
from toolnexus.errors import ToolnexusError

Recorded = Any  # conftest's `Recorded`: `.spans` (span exporter), `.metrics` (metric reader)

SECRET = "tnx-SPANSECRET-5d1e9b"
ENV_SECRET = "tnx-SPANENV-a4c70f"


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with threaded_http(EchoingHandler) as port:
        yield f"127.0.0.1:{port}"


async def test_failing_calls_on_credentials_leave_no_secret_in_spans_or_metrics(
    otel: Recorded, echo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TNX_SPAN_ENV", ENV_SECRET)
    leaky = http_tool(
        name="leaky",
        description="Echoes its credentials in an error.",
        method="GET",
        url=f"http://user:{SECRET}@{echo}/401/tool?key={SECRET}",
        headers={"X-Token": "${TNX_SPAN_ENV}"},
    )
    stderr_echo = (
        "import os, sys; print('bad key', os.environ['KEY'], file=sys.stderr); sys.exit(1)"
    )
    config = {
        "mcpServers": {
            "remote": {
                "url": f"http://u:{SECRET}@{echo}/500/mcp",
                "headers": {"Authorization": "Bearer ${TNX_SPAN_ENV}"},
            },
            "local": {
                "command": [sys.executable, "-c", stderr_echo],
                "env": {"KEY": "${TNX_SPAN_ENV}"},
            },
        },
        "builtins": False,
    }
    toolkit = await create_toolkit(config, extra_tools=[leaky])
    client = create_client(
        base_url=f"http://me:{SECRET}@{echo}/401", style="openai", model="m", api_key=SECRET,
        retries=0,
    )  # fmt: skip
    try:
        assert (await toolkit.execute("leaky", {})).is_error
        with pytest.raises(ToolnexusError):
            await client.run("hi", toolkit)
    finally:
        await client.aclose()
        await toolkit.close()

    spans = otel.spans.get_finished_spans()
    assert {s.name.split()[0] for s in spans} >= {"execute_tool", "chat"}
    data = otel.metrics.get_metrics_data()
    recorded = "\n".join([*(s.to_json() for s in spans), data.to_json() if data else ""])
    assert SECRET not in recorded
    assert ENV_SECRET not in recorded
