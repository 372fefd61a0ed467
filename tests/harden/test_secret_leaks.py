"""Secret-leak harness: a distinctive secret in every credential path, each failure forced, and
every visible surface grepped — exceptions (str, repr, args), DEBUG logs of every logger,
metrics, tool outputs, reprs and the CLI.

The endpoints on 127.0.0.1 are hostile: they echo every request header (and the URL) back in
their error bodies and stream error events.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.cli_runner import clean_env, toolnexus
from support.serve_hardening import EchoingHandler, threaded_http
from toolnexus import create_toolkit, http_tool
from toolnexus.client import create_client
from toolnexus.errors import ToolnexusError

SECRET = "tnx-SECRET-7f3a9c1e5b"
ENV_SECRET = "tnx-ENVSECRET-0c4d2e8a"


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with threaded_http(EchoingHandler) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def seen(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Everything visible: the test appends what it observed; DEBUG logs of all loggers join."""
    monkeypatch.setenv("TNX_LEAK_ENV", ENV_SECRET)
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    yield texts
    texts.append(caplog.text)
    texts.extend(r.getMessage() for r in caplog.records)
    for text in texts:
        assert SECRET not in text, text[:400]
        assert ENV_SECRET not in text, text[:400]


def surfaces(exc: BaseException) -> list[str]:
    return [str(exc), repr(exc), repr(exc.args), *(str(v) for v in vars(exc).values())]


@pytest.mark.parametrize("path", ["401", "stream"])
async def test_api_key_echoed_by_the_provider(echo: str, seen: list[str], path: str) -> None:
    metrics: list[dict[str, Any]] = []
    client = create_client(
        base_url=f"http://{echo}/{path}",
        style="openai",
        model="m",
        api_key=SECRET,
        retries=0,
        on_metric=metrics.append,
    )
    seen.append(repr(client))
    with pytest.raises(ToolnexusError) as info:
        if path == "stream":
            async for event in client.stream("hi"):
                seen.append(repr(event))
        else:
            await client.run("hi")
    seen.extend(surfaces(info.value))
    seen.append(repr(metrics))
    assert metrics


async def test_api_key_from_the_environment_echoed(
    echo: str, seen: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = create_client(base_url=f"http://{echo}/401", style="openai", model="m", retries=0)
    with pytest.raises(ToolnexusError) as info:
        await client.run("hi")
    seen.extend(surfaces(info.value))


@pytest.mark.parametrize("key", [SECRET + "\n", SECRET + "\r\nX: y", "\x00" + SECRET])
def test_api_key_with_a_control_character_is_refused_up_front(seen: list[str], key: str) -> None:
    with pytest.raises(ValueError) as info:
        create_client(base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key=key)
    seen.extend(surfaces(info.value))


def test_userinfo_never_shows_in_a_client_repr(seen: list[str]) -> None:
    client = create_client(
        base_url=f"http://me:{SECRET}@127.0.0.1:9/v1", style="openai", model="m", api_key="k" * 9
    )
    seen.append(repr(client))
    seen.append(str(client))


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer ${TNX_LEAK_ENV}"},
        {"X-Custom-Token": SECRET},
        {"X-Custom-Token": "${TNX_LEAK_ENV}"},
    ],
    ids=["env-bearer", "custom-literal", "custom-env"],
)
async def test_http_tool_credentials_echoed(
    echo: str, seen: list[str], headers: dict[str, str]
) -> None:
    tool = http_tool(
        name="leaky",
        description="echoes",
        method="GET",
        url=f"http://user:{SECRET}@{echo}/401",
        headers=headers,
    )
    toolkit = await create_toolkit(extra_tools=[tool], builtins=False)
    try:
        result = await toolkit.execute("leaky", {})
        assert result.is_error
        seen.extend([result.output, repr(result), repr(tool)])
    finally:
        await toolkit.close()


async def test_mcp_remote_credentials_echoed(echo: str, seen: list[str]) -> None:
    config = {
        "mcpServers": {
            "env": {
                "url": f"http://{echo}/401/mcp",
                "headers": {"Authorization": "${TNX_LEAK_ENV}"},
            },
            "custom": {"url": f"http://{echo}/500/mcp", "headers": {"X-Custom-Token": SECRET}},
            "userinfo": {"url": f"http://u:{SECRET}@{echo}/500/mcp"},
        },
        "builtins": False,
    }
    toolkit = await create_toolkit(config)
    try:
        seen.append(repr(toolkit.mcp_status()))
        seen.append(repr(toolkit))
    finally:
        await toolkit.close()


async def test_env_header_with_a_newline_is_refused_and_never_shown(
    seen: list[str], monkeypatch: pytest.MonkeyPatch, echo: str, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TNX_LEAK_NL", SECRET + "\n")
    config = {
        "mcpServers": {
            "nl": {"url": f"http://{echo}/mcp", "headers": {"Authorization": "${TNX_LEAK_NL}"}},
        },
        "agents": {"nl": {"card": f"http://{echo}/card", "headers": {"X-Key": "${TNX_LEAK_NL}"}}},
        "builtins": False,
    }
    toolkit = await create_toolkit(config)
    try:
        seen.append(repr(toolkit.mcp_status()))
        refusals = [r for r in caplog.records if "control character" in r.getMessage()]
        assert len(refusals) == 2, caplog.text  # the MCP server and the agent, each named
    finally:
        await toolkit.close()


async def test_a2a_card_fetch_failure_echoing_credentials(echo: str, seen: list[str]) -> None:
    config = {
        "agents": {
            "a": {"card": f"http://u:{SECRET}@{echo}/500/card", "headers": {"X-Api-Key": SECRET}},
            "b": {
                "card": f"http://{echo}/401/card",
                "headers": {"Authorization": "${TNX_LEAK_ENV}"},
            },
        },
        "builtins": False,
    }
    toolkit = await create_toolkit(config)
    seen.append(repr(toolkit))
    await toolkit.close()


def test_log_records_of_every_logger_are_redacted(seen: list[str]) -> None:
    from toolnexus._secrets import remember

    remember(SECRET)
    logging.getLogger("httpx").debug("sent %s", SECRET)
    logging.getLogger("some.library.deep").warning("token=" + SECRET)
    try:
        raise RuntimeError(SECRET)
    except RuntimeError:
        logging.getLogger("toolnexus").exception("failed")


async def test_cli_output_never_shows_a_secret(echo: str, tmp_path: Any) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "r": {"url": f"http://{echo}/401/mcp", "headers": {"X-Custom-Token": SECRET}},
                    "e": {
                        "url": f"http://{echo}/500/mcp",
                        "headers": {"Authorization": "${TNX_NL}"},
                    },
                }
            }
        )
    )
    done = await asyncio.to_thread(
        toolnexus, "tools", "--config", str(config), "-v", env=clean_env(TNX_NL=SECRET + "\n")
    )
    assert SECRET not in done.stdout + done.stderr, done.stdout + done.stderr
    assert sys.executable  # the run happened with this interpreter
