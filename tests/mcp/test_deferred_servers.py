"""`"deferLoading": true` on an MCP server entry: its tools are deferred, callable as ever."""

from __future__ import annotations

import pytest

from support.mcp_fixtures import ErasShared
from toolnexus import create_toolkit
from toolnexus.mcp_source._config import ServerConfigError, check_server


async def test_a_deferred_server_lists_deferred_tools(eras: ErasShared) -> None:
    url = eras.http["dual"].url()
    config = {"lazy": {"url": url, "deferLoading": True}, "eager": {"url": url}}
    async with await create_toolkit(config, builtins=False) as toolkit:
        deferred = {t.name for t in toolkit.deferred()}
        assert deferred and all(name.startswith("lazy_") for name in deferred)
        assert toolkit.get("eager_echo") is not None
        assert not toolkit.get("eager_echo").defer_loading  # type: ignore[union-attr]
        found = toolkit.search_tools("weather report", limit=2)
        assert {t.name for t in found} == {"lazy_weather", "eager_weather"}
        assert found[0].title == "Weather report"
        result = await toolkit.execute("lazy_echo", {"text": "hi"})
        assert not result.is_error, result.output


def test_defer_loading_must_be_a_boolean() -> None:
    assert check_server("a", {"command": "x", "deferLoading": True}).defer_loading is True
    assert check_server("a", {"command": "x"}).defer_loading is False
    with pytest.raises(ServerConfigError, match='"deferLoading" must be true or false'):
        check_server("a", {"command": "x", "deferLoading": "yes"})
