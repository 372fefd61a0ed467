"""The gateway's per-server `"prefix"`: tools and prompts under the names the caller sees."""

from __future__ import annotations

import pytest

from mcp import Client
from support.mcp_servers import BASIC, ERAS, command
from toolnexus import create_toolkit
from toolnexus.errors import ConfigError


def _server(script, **extra):
    argv = command(script)
    return {"command": argv[0], "args": argv[1:], "timeout": 20000, **extra}


async def test_no_prefix_serves_upstream_names_and_prompts():
    toolkit = await create_toolkit(
        mcp_config={"eras": _server(ERAS, prefix=False), "basic": _server(BASIC, prefix="b.")},
        builtins=False,
    )
    try:
        names = {t.name for t in toolkit.tools()}
        assert "echo" in names and "b.echo" in names
        assert not any(n.startswith("eras_") for n in names)
        handle = await toolkit.serve("127.0.0.1:0", mcp={})
        try:
            async with Client(handle.url + "/mcp") as client:
                listed = {p.name for p in (await client.list_prompts()).prompts}
                assert "review" in listed
                echoed = await client.call_tool("echo", {"text": "plain"})
                assert echoed.content[0].text == "plain"
        finally:
            await handle.stop()
    finally:
        await toolkit.close()


async def test_a_prefix_collision_is_a_config_error_naming_both_servers():
    with pytest.raises(ConfigError) as caught:
        await create_toolkit(
            mcp_config={"one": _server(BASIC, prefix=""), "two": _server(BASIC, prefix=False)},
            builtins=False,
        )
    message = str(caught.value)
    assert '"one"' in message and '"two"' in message and '"echo"' in message


async def test_a_bad_prefix_is_refused():
    toolkit = await create_toolkit(mcp_config={"bad": _server(BASIC, prefix=3)}, builtins=False)
    try:
        assert toolkit.mcp_status()["bad"] == "failed"
    finally:
        await toolkit.close()


async def test_a_tool_meta_reaches_the_gateway_caller():
    from toolnexus.toolkit import Toolkit
    from toolnexus.types import Tool

    meta = {"ui": {"resourceUri": "ui://app/view"}}
    upstream = Toolkit(
        builtins=False,
        extra_tools=[
            Tool("app", "An app", None, "native", lambda a, c: "ok", metadata={"_meta": meta})
        ],
    )
    up = await upstream.serve("127.0.0.1:0", mcp={})
    try:
        gateway = await create_toolkit(
            mcp_config={"up": {"url": up.url + "/mcp", "prefix": False}}, builtins=False
        )
        try:
            served = await gateway.serve("127.0.0.1:0", mcp={})
            try:
                async with Client(served.url + "/mcp") as client:
                    (tool,) = (await client.list_tools()).tools
            finally:
                await served.stop()
        finally:
            await gateway.close()
    finally:
        await up.stop()
    assert (tool.name, tool.meta) == ("app", meta)
