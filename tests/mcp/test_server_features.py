"""Progress, server logging, tool metadata, task support and result fidelity, against the SDK's
own servers in both eras."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import Any

import pytest

from support.mcp_fixtures import ErasShared
from support.mcp_servers import ERAS, ThreadedHttpServer, command
from support.mcp_servers.sdk_eras import (
    IMAGE_BYTES,
    INSTRUCTIONS,
    SUN_ICON,
    output_schema_app,
    task_answers_app,
    tasks_app,
)
from toolnexus import create_toolkit
from toolnexus.client._loop import compose_system
from toolnexus.mcp_source import list_mcp_tools, load_mcp_with_context
from toolnexus.types import ToolContext

# -- progress -----------------------------------------------------------------------------------

ERA_TRANSPORTS = [("dual", "stdio"), ("dual", "http"), ("legacy", "stdio"), ("legacy", "http")]
# (timeout, maxTimeout, seconds the tool runs): a stdio child needs more than a second to start
# under load, and `timeout` also bounds each load phase
TIMING = {"http": (1500, 2500, 3.0), "stdio": (6000, 7500, 8.4)}


def _entry(era_http: dict[str, ThreadedHttpServer], era: str, transport: str) -> dict[str, Any]:
    if transport == "stdio":
        return {"command": command(ERAS, "--era", era)}
    return {"url": era_http[era].url()}


@pytest.fixture(scope="module")
async def timed(era_http: dict[str, ThreadedHttpServer]) -> Any:
    """Each era and transport with a short `timeout`, and (HTTP) once more with a `maxTimeout`;
    a stdio server's hard cap comes from `ctx.timeout` instead (fewer children to start)."""
    config: dict[str, Any] = {}
    for era, transport in ERA_TRANSPORTS:
        timeout, cap, _ = TIMING[transport]
        entry = {**_entry(era_http, era, transport), "timeout": timeout}
        config[f"{era}_{transport}"] = entry
        if transport == "http":
            config[f"{era}_{transport}_capped"] = {**entry, "maxTimeout": cap}
    # The short `timeout` also bounds each load phase, which a stdio child's start-up (an SDK
    # import) can overrun on a loaded machine: load again until every server fits, for up to
    # two minutes (a machine that slow fails the tests below by a missing tool, not a hang).
    deadline = time.monotonic() + 120
    while True:
        source = await load_mcp_with_context(config)
        connected = all(status == "connected" for status in source.status.values())
        if connected or time.monotonic() > deadline:
            break
        await source.close()
    yield {t.name: t for t in source.tools}
    await source.close()


async def _progress_succeeds(timed: Any, era: str, transport: str) -> None:
    events: list[dict[str, Any]] = []
    ctx = ToolContext(on_progress=events.append)
    seconds = TIMING[transport][2]
    result = await timed[f"{era}_{transport}_progress"].execute(
        {"seconds": seconds, "every": 0.3}, ctx
    )
    assert (result.output, result.is_error) == (f"done after {round(seconds / 0.3)} steps", False)
    assert events[0] == {"progress": 1.0, "total": None, "message": "step 1"}
    assert len(events) >= 6


async def _budgets_end_calls(timed: Any, era: str, transport: str) -> None:
    timeout, cap, seconds = TIMING[transport]
    args = {"seconds": seconds, "every": 0.3}
    capping = (
        timed[f"{era}_{transport}_capped_progress"].execute(args)
        if transport == "http"
        else timed[f"{era}_{transport}_progress"].execute(args, ToolContext(timeout=cap / 1000))
    )
    capped, silent = await asyncio.gather(
        capping, timed[f"{era}_{transport}_silent"].execute({"seconds": seconds})
    )
    assert (capped.output, capped.is_error) == (f"MCP tool progress timed out after {cap} ms", True)
    assert (silent.output, silent.is_error) == (
        f"MCP tool silent timed out after {timeout} ms",
        True,
    )


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_progress_extends_the_idle_budget_over_http(timed: Any, era: str) -> None:
    await _progress_succeeds(timed, era, "http")


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_the_hard_cap_and_silence_still_time_out_over_http(timed: Any, era: str) -> None:
    await _budgets_end_calls(timed, era, "http")


async def test_progress_and_budgets_over_stdio_in_both_eras(timed: Any) -> None:
    # both eras at once: the stdio budgets are long (see TIMING)
    await asyncio.gather(*(_progress_succeeds(timed, era, "stdio") for era in ("dual", "legacy")))
    await asyncio.gather(*(_budgets_end_calls(timed, era, "stdio") for era in ("dual", "legacy")))


async def test_a_raising_progress_callback_is_ignored(timed: Any) -> None:
    def boom(event: dict[str, Any]) -> None:
        raise RuntimeError("no")

    result = await timed["dual_http_progress"].execute(
        {"seconds": 0.4, "every": 0.1}, ToolContext(on_progress=boom)
    )
    assert result.is_error is False


# -- logging ------------------------------------------------------------------------------------


@pytest.mark.parametrize("server", ["s_dual", "h_legacy"])
async def test_server_logs_become_toolnexus_records(
    eras: ErasShared, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        assert (await eras.tool(server, "chatty").execute()).output == "logged"
    # (at 2025-11-25 every message is logged as it comes; at 2026-07-28 warning and up)
    [record] = [
        r
        for r in caplog.records
        if getattr(r, "mcp_server", None) == server and r.levelno == logging.WARNING
    ]
    assert record.getMessage() == f'[toolnexus] MCP server "{server}" (disk): disk almost full'
    assert (record.mcp_logger, record.mcp_level) == ("disk", "warning")


async def test_each_mcp_level_and_data_shape_becomes_one_record(
    eras: ErasShared, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        assert (await eras.tool("s_legacy", "log_shapes").execute()).output == "shaped"
    shaped = [
        (r.levelno, r.mcp_level, r.getMessage())
        for r in caplog.records
        if getattr(r, "mcp_server", None) == "s_legacy"
    ]
    prefix = '[toolnexus] MCP server "s_legacy"'
    assert shaped == [
        (logging.INFO, "notice", f"{prefix}: noted"),
        (logging.ERROR, "error", f'{prefix} (db): {{"code":7,"ok":true}}'),  # compact JSON
        (logging.CRITICAL, "critical", f"{prefix}: {'x' * 2000}…"),  # cut at 2000
        (logging.CRITICAL, "alert", f"{prefix}: alerted"),
        (logging.CRITICAL, "emergency", f"{prefix}: stop"),
    ]


async def test_log_level_opts_in_at_2026(
    era_http: dict[str, ThreadedHttpServer], caplog: pytest.LogCaptureFixture
) -> None:
    source = await load_mcp_with_context(
        {"chat": {"url": era_http["dual"].url(), "logLevel": "debug"}}
    )
    try:
        with caplog.at_level(logging.DEBUG, logger="toolnexus"):
            await next(t for t in source.tools if t.name == "chat_chatty").execute()
    finally:
        await source.close()
    levels = [r.mcp_level for r in caplog.records if hasattr(r, "mcp_level")]
    assert levels == ["warning", "info"]
    info = [r for r in caplog.records if getattr(r, "mcp_level", None) == "info"]
    assert info[0].getMessage() == '[toolnexus] MCP server "chat": all good'


# -- tool metadata and task support -------------------------------------------------------------


async def test_title_annotations_and_output_schema_are_kept(eras: ErasShared) -> None:
    for server in ("h_dual", "h_legacy"):
        weather = eras.tool(server, "weather")
        assert weather.metadata is not None
        assert weather.metadata["server"] == server
        assert weather.metadata["title"] == "Weather report"
        assert weather.metadata["annotations"] == {
            "title": "Weather",
            "readOnlyHint": True,
            "openWorldHint": False,
        }
        assert weather.metadata["outputSchema"]["required"] == ["city", "degrees"]
        assert weather.metadata["icons"] == [{"src": SUN_ICON, "mimeType": "image/svg+xml"}]
        assert weather.description == "Weather for a city (structured, with an output schema)."
        result = await weather.execute({"city": "Oslo"})
        assert result.metadata is not None
        assert result.metadata["structured"] == {"city": "Oslo", "degrees": 21}
    wipe = eras.tool("h_dual", "wipe")
    assert wipe.metadata is not None
    assert wipe.metadata["annotations"] == {"destructiveHint": True}
    assert "title" not in eras.tool("h_dual", "echo").metadata  # type: ignore[operator]


async def test_task_required_tools_are_hidden_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = ThreadedHttpServer(tasks_app())
    try:
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            # `execution.taskSupport` exists at 2025-11-25 only
            source = await load_mcp_with_context({"t": {"url": server.url(), "protocol": "legacy"}})
        try:
            names = [t.name for t in source.tools]
            assert names == ["t_optional_task", "t_forbidden_task"]
            assert (await source.tools[0].execute()).output == "ran optional_task"
        finally:
            await source.close()
        assert (
            '[toolnexus] MCP server "t" tool "required_task" requires task-augmented calls, '
            "which toolnexus does not support; skipped"
        ) in caplog.messages
        inventory = await list_mcp_tools({"t": {"url": server.url(), "protocol": "legacy"}})
        assert [(t.name, t.task_support) for t in inventory.tools["t"]] == [
            ("required_task", "required"),
            ("optional_task", "optional"),
            ("forbidden_task", "forbidden"),
        ]
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_structure_breaking_the_output_schema_is_the_sdk_error(protocol: str) -> None:
    server = ThreadedHttpServer(output_schema_app())
    try:
        source = await load_mcp_with_context({"s": {"url": server.url(), "protocol": protocol}})
        try:
            tools = {t.name: t for t in source.tools}
            wrong = await tools["s_wrong"].execute()
            assert wrong.is_error
            assert wrong.output.startswith(
                "Invalid structured content returned by tool wrong: 'x' is not of type 'integer'"
            )
            assert wrong.metadata == {"server": "s"}
            missing = await tools["s_unstructured"].execute()
            assert (missing.output, missing.is_error) == (
                "Tool unstructured has an output schema but did not return structured content",
                True,
            )
        finally:
            await source.close()
    finally:
        server.stop()


async def test_a_task_answer_is_an_error_naming_tasks() -> None:
    # a server that answers with a task in a shape the extension does not define
    server = ThreadedHttpServer(task_answers_app())
    try:
        source = await load_mcp_with_context({"t": {"url": server.url()}})
        try:
            assert source.servers["t"].protocol == "2026-07-28"
            for tool in source.tools:
                result = await tool.execute()
                assert (result.output, result.is_error) == (
                    'MCP server "t" answered with a task that is not a valid task handle',
                    True,
                ), tool.name
                assert result.metadata == {"server": "t"}
        finally:
            await source.close()
        avoiding = await load_mcp_with_context({"t": {"url": server.url(), "tasks": "avoid"}})
        try:
            result = await avoiding.tools[0].execute()
            assert result.output == (
                'MCP server "t" answered with a task although the Tasks extension was not '
                'declared ("tasks": "avoid")'
            )
        finally:
            await avoiding.close()
    finally:
        server.stop()


# -- fidelity -----------------------------------------------------------------------------------


@pytest.mark.parametrize("server", ["s_dual", "h_legacy"])
async def test_text_beside_structure_is_what_the_model_sees(eras: ErasShared, server: str) -> None:
    both = await eras.tool(server, "both").execute()
    assert (both.output, both.is_error) == ("human readable summary", False)
    assert both.metadata is not None
    assert both.metadata["structured"] == {"summary": "machine", "n": 2}
    alone = await eras.tool(server, "structured_only").execute()
    assert alone.output == '{"result":5}'


@pytest.mark.parametrize("server", ["s_modern", "h_dual"])
async def test_binary_content_is_parts_never_base64_in_text(eras: ErasShared, server: str) -> None:
    picture = await eras.tool(server, "picture").execute()
    encoded = base64.b64encode(IMAGE_BYTES).decode()
    assert picture.output == "[image: image/png, 1024 bytes]"
    assert encoded not in picture.output
    assert picture.parts == [{"type": "image", "mimeType": "image/png", "data": encoded}]
    assert picture.metadata is not None
    assert picture.metadata["structured"]["png"] == encoded  # kept, never rendered
    media = await eras.tool(server, "media").execute()
    assert media.output.splitlines() == [
        "media follows",
        "[image: image/png, 1024 bytes]",
        "[audio: audio/wav, 64 bytes]",
        "[resource link: eras://notes]",
        "[resource: eras://inline]",
        "inline text",
    ]
    assert [p["type"] for p in media.parts or []] == ["image", "audio", "file"]


async def test_a_rejected_argument_still_names_the_server(eras: ErasShared) -> None:
    result = await eras.tool("h_dual", "echo").execute({})
    assert result.is_error
    assert result.metadata is not None and result.metadata["server"] == "h_dual"


# -- instructions -------------------------------------------------------------------------------


async def test_opted_in_instructions_join_the_system_prompt(
    era_http: dict[str, ThreadedHttpServer], tmp_path: Any
) -> None:
    skill = tmp_path / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy up.\n---\nBody.\n")
    toolkit = await create_toolkit(
        mcp_config={
            "first": {"url": era_http["dual"].url(), "instructions": True},
            "quiet": {"url": era_http["dual"].url()},
            "second": {"url": era_http["legacy"].url(), "instructions": True},
        },
        skills_dir=tmp_path / "skills",
        builtins=False,
    )
    try:
        section = (
            "## MCP Server Instructions\n\n### first\nCall echo first.\nThen the rest."
            "\n\n### second\nCall echo first.\nThen the rest."
        )
        assert toolkit.mcp_instructions_prompt() == section
        assert toolkit.mcp_servers()["quiet"].instructions == INSTRUCTIONS
        system = compose_system("Be brief.", toolkit)
        assert system == f"Be brief.\n\n{toolkit.skills_prompt()}\n\n{section}"
    finally:
        await toolkit.close()
    plain = await create_toolkit(mcp_config={"quiet": {"url": era_http["dual"].url()}})
    try:
        assert plain.mcp_instructions_prompt() == ""
        assert compose_system("Be brief.", plain) == "Be brief."
    finally:
        await plain.close()
