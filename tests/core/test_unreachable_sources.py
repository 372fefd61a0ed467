"""A tool source fetched while it is added (an A2A Agent Card, an OpenAPI spec) at an address
nothing answers raises `SourceConnectionError`, naming the URL without its credentials; never
the HTTP client's own exception."""

from __future__ import annotations

import socket

import pytest

from toolnexus import (
    SourceConnectionError,
    Toolkit,
    ToolnexusError,
    http_tools_from_openapi,
)


@pytest.fixture
def dead_origin() -> str:
    """`http://127.0.0.1:<port>` with nothing listening on the port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def test_add_agent_on_a_dead_url(dead_origin: str) -> None:
    with_credentials = (
        dead_origin.replace("http://", "http://ada:hunter2-pw@") + "/?token=t0ps3cret"
    )
    async with Toolkit(builtins=False) as toolkit:
        with pytest.raises(SourceConnectionError) as caught:
            await toolkit.add_agent(with_credentials)
        assert toolkit.tools() == []
    error = caught.value
    assert isinstance(error, ToolnexusError) and isinstance(error, ConnectionError)
    assert error.url == dead_origin + "/"
    message = str(error)
    assert message.startswith(f"cannot reach the Agent Card at {dead_origin}/: ")
    for secret in ("ada", "hunter2-pw", "t0ps3cret"):
        assert secret not in message and secret not in repr(error)
    assert error.__cause__ is not None  # the transport's own exception, for the curious


async def test_add_agent_names_the_card_url_it_tried(dead_origin: str) -> None:
    async with Toolkit(builtins=False) as toolkit:
        with pytest.raises(SourceConnectionError, match="cannot reach the Agent Card at ") as c:
            await toolkit.add_agent(dead_origin)
    assert c.value.url == dead_origin + "/.well-known/agent-card.json"


async def test_openapi_spec_on_a_dead_url(dead_origin: str) -> None:
    with pytest.raises(SourceConnectionError) as caught:
        await http_tools_from_openapi(dead_origin + "/openapi.json")
    assert caught.value.url == dead_origin + "/openapi.json"
    assert str(caught.value).startswith(f"cannot reach the OpenAPI spec at {dead_origin}/")
