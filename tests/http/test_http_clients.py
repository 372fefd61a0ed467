"""Each toolkit owns the HTTP clients its tools open: closing one never breaks another."""

from __future__ import annotations

import asyncio

import httpx2

from support.local_http import LocalServer
from support.polling import wait_until
from toolnexus import create_toolkit, http_tool


def _delay_tool(server: LocalServer, name: str, ms: int) -> object:
    return http_tool(
        name=name, description="wait", method="GET", url=f"{server.url}/delay?ms={ms}&who={name}"
    )


async def test_closing_one_toolkit_leaves_another_toolkits_call_running(server: LocalServer):
    server.state.delays.clear()
    first = await create_toolkit(builtins=False, extra_tools=[_delay_tool(server, "a", 1)])
    second = await create_toolkit(builtins=False, extra_tools=[_delay_tool(server, "b", 400)])
    try:
        assert (await first.execute("a")).output == "done"  # the first toolkit's client is open
        call = asyncio.ensure_future(second.execute("b"))
        await wait_until(lambda: any("who=b" in q for q in server.state.delays))
        await first.close()  # mid-call of the second toolkit's tool
        result = await call
        assert (result.output, result.is_error) == ("done", False)
        assert (await second.execute("b")).output == "done"
    finally:
        await first.close()
        await second.close()


async def test_a_closed_toolkit_opens_a_fresh_client_if_used_again(server: LocalServer):
    toolkit = await create_toolkit(builtins=False, extra_tools=[_delay_tool(server, "c", 1)])
    assert (await toolkit.execute("c")).output == "done"
    await toolkit.close()
    assert (await toolkit.execute("c")).output == "done"
    await toolkit.close()


async def test_a_callers_http_client_is_never_closed_by_the_llm_client(server: LocalServer):
    from toolnexus import create_client

    given = httpx2.AsyncClient()
    client = create_client(
        base_url=f"{server.url}/v1", style="openai", model="m", api_key="k", http_client=given
    )
    await client.aclose()
    assert not given.is_closed
    response = await given.get(f"{server.url}/delay?ms=1")
    assert response.text == "done"
    await given.aclose()
