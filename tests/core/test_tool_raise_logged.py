"""A tool that raises is reported to the developer: one WARNING, the traceback at DEBUG."""

from __future__ import annotations

import logging

import pytest

from toolnexus import Tool, create_in_process_client, create_toolkit, define_tool
from toolnexus.client import create_client

API_KEY = "sk-test-raise-logged-0123456789"


def failing_lookup(city: str) -> str:
    """Look a city up."""
    raise LookupError(f"no row for {city}")


def records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "toolnexus" and r.levelno == level]


async def test_a_raising_tool_is_logged_once_and_the_model_still_gets_the_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    turns = iter(
        [
            {"tool_calls": [{"name": "failing_lookup", "arguments": {"city": "Oslo"}}]},
            {"content": "sorry"},
        ]
    )
    client = create_in_process_client(model="m", generate=lambda request: next(turns))
    async with await create_toolkit(
        extra_tools=[define_tool(failing_lookup)], builtins=False
    ) as toolkit:
        result = await client.run("weather?", toolkit)
    assert result.text == "sorry"
    tool_message = next(m for m in result.messages if m.get("role") == "tool")
    assert "no row for Oslo" in str(tool_message["content"])

    warnings = [r.getMessage() for r in records(caplog, logging.WARNING)]
    assert warnings == ['[toolnexus] tool "failing_lookup" raised LookupError: no row for Oslo']
    debug = [r for r in records(caplog, logging.DEBUG) if r.exc_info]
    assert len(debug) == 1
    assert "failing_lookup" in debug[0].getMessage()
    assert debug[0].exc_info is not None and debug[0].exc_info[0] is LookupError


async def test_a_secret_in_the_exception_is_redacted_in_both_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    create_client(base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key=API_KEY)

    def leaky(args: dict[str, object], ctx: object) -> str:
        raise RuntimeError(f"upstream refused key {API_KEY}")

    caplog.set_level(logging.DEBUG, logger="toolnexus")
    async with await create_toolkit(
        extra_tools=[Tool("leaky", "leaks", None, "custom", leaky)], builtins=False
    ) as toolkit:
        result = await toolkit.execute("leaky", {})
    assert result.is_error and API_KEY not in result.output
    assert API_KEY not in caplog.text
    warnings = [r.getMessage() for r in records(caplog, logging.WARNING)]
    assert warnings == [
        '[toolnexus] tool "leaky" raised RuntimeError: upstream refused key [redacted]'
    ]
    formatter = logging.Formatter("%(message)s")
    for record in records(caplog, logging.DEBUG):
        assert API_KEY not in formatter.format(record)


async def test_a_tool_error_result_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    async with await create_toolkit(builtins=False) as toolkit:
        result = await toolkit.execute("missing", {})
    assert result.is_error
    assert not records(caplog, logging.WARNING)
