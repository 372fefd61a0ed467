"""Loading and calling real servers over every transport (one shared load for the module)."""

from __future__ import annotations

import asyncio
import base64
import os
import threading

import pytest

from support.mcp_fixtures import TOKEN, Shared
from support.mcp_servers.basic_server import AUDIO_BYTES, IMAGE_BYTES
from toolnexus import __version__
from toolnexus.mcp_source import McpServerState, load_mcp
from toolnexus.types import Answer, Request, ToolContext


async def test_status_and_state_of_every_server(shared: Shared) -> None:
    assert shared.source.status == {
        "basic": "connected",
        "paged": "connected",
        "remote": "connected",
        "legacy": "connected",
        "secure": "connected",
        "off": "disabled",
    }
    servers = shared.source.servers
    basic = servers["basic"]
    assert (basic.status, basic.error, basic.transport) == ("connected", None, "stdio")
    assert basic.protocol == "2025-11-25"  # pinned to the handshake era in the config
    assert servers["basic"].tool_count > 10
    paged = servers["paged"]
    assert (paged.status, paged.error, paged.transport, paged.tool_count) == (
        "connected",
        None,
        "stdio",
        6,
    )
    assert servers["remote"].transport == "streamable-http"
    assert servers["secure"].transport == "streamable-http"
    assert servers["legacy"].transport == "sse"  # POST answered 405: fell back to SSE
    assert servers["off"] == McpServerState("disabled", None, None, 0)


async def test_tools_come_in_config_order_then_listing_order(shared: Shared) -> None:
    names = [t.name for t in shared.source.tools]
    assert names[-1] == "mcp_read_resource"  # after every server's tools
    names = names[:-1]
    servers = [n.split("_", 1)[0] for n in names]
    assert servers == sorted(servers, key=["basic", "paged", "remote", "legacy", "secure"].index)
    assert [n for n in names if n.startswith("paged_")] == [f"paged_t{i}" for i in range(6)]
    assert names[:3] == ["basic_echo", "basic_add", "basic_fail"]


async def test_tool_shape(shared: Shared) -> None:
    tool = shared.tools["paged_t4"]
    assert tool.source == "mcp"
    assert tool.description == "tool number 4"
    assert tool.original_name == "paged_t4"
    # passed through unchanged: no forced additionalProperties, $defs and $ref kept
    assert tool.input_schema == {
        "type": "object",
        "title": "t4 arguments",
        "properties": {"n": {"$ref": "#/$defs/count"}, "label": {"type": "string"}},
        "required": ["n"],
        "additionalProperties": False,
        "$defs": {"count": {"type": "integer", "minimum": 0}},
    }


async def test_text_result(shared: Shared) -> None:
    result = await shared.tools["basic_echo"].execute({"text": "héllo"})
    assert (result.output, result.is_error, result.metadata) == (
        "héllo",
        False,
        {"server": "basic", "content": [{"type": "text", "text": "héllo"}]},
    )


async def test_text_beside_structured_content_is_what_the_model_sees(shared: Shared) -> None:
    result = await shared.tools["basic_add"].execute({"a": 2, "b": 40})
    assert (result.output, result.is_error) == ("42", False)
    assert result.metadata is not None
    assert result.metadata["structured"] == {"sum": 42, "ok": "é"}


async def test_error_result_joins_non_blank_texts(shared: Shared) -> None:
    result = await shared.tools["basic_fail"].execute({"message": "it broke"})
    assert (result.output, result.is_error) == ("it broke\n\nmore", True)
    assert result.metadata is not None and result.metadata["server"] == "basic"


async def test_error_result_without_text_uses_the_fallback(shared: Shared) -> None:
    result = await shared.tools["basic_fail_blank"].execute({})
    assert (result.output, result.is_error) == ("MCP tool returned an error", True)


async def test_image_content_is_kept_and_summarised(shared: Shared) -> None:
    result = await shared.tools["basic_image"].execute()
    assert result.output == "a picture\n[image: image/png, 48213 bytes]"
    [part] = result.parts or []
    assert part["type"] == "image" and part["mimeType"] == "image/png"
    assert base64.b64decode(part["data"]) == IMAGE_BYTES
    assert part["data"] not in result.output


async def test_audio_and_resources_without_text(shared: Shared) -> None:
    result = await shared.tools["basic_media"].execute()
    assert result.output == (
        "[audio: audio/wav, 100 bytes]\n[resource: file:///x.txt]\nhello\n"
        "[resource link: file:///y.md]"
    )
    audio, link = result.parts or []  # the text resource is in the output
    assert base64.b64decode(audio["data"]) == AUDIO_BYTES
    assert link == {"type": "file", "mimeType": "text/markdown", "url": "file:///y.md", "name": "y"}
    assert result.metadata is not None
    assert [block["type"] for block in result.metadata["content"]] == [
        "audio",
        "resource",
        "resource_link",
    ]


async def test_environment_is_merged_over_the_process_environment(shared: Shared) -> None:
    env = shared.tools["basic_env"]
    assert (await env.execute({"name": "TN_A"})).output == "from-environment"
    assert (await env.execute({"name": "TN_B"})).output == "only-env"
    assert (await env.execute({"name": "PATH"})).output == os.environ["PATH"]


async def test_cwd(shared: Shared) -> None:
    assert (await shared.tools["basic_cwd"].execute()).output == str(shared.cwd)


async def test_paginated_tools_are_all_callable(shared: Shared) -> None:
    result = await shared.tools["paged_t5"].execute({"n": 3})
    assert result.output == 't5:{"n":3}'


async def test_same_tools_over_streamable_http_and_sse(shared: Shared) -> None:
    for server in ("remote", "legacy", "secure"):
        result = await shared.tools[f"{server}_echo"].execute({"text": server})
        assert result.output == server
        assert result.metadata is not None and result.metadata["server"] == server


async def test_bearer_header_from_env_reaches_the_server(shared: Shared) -> None:
    assert (await shared.tools["secure_auth_header"].execute()).output == "present"
    assert TOKEN not in repr(shared.source.servers)


async def test_client_info_names_toolnexus(shared: Shared) -> None:
    # wait_for was given, so the elicitation capability is advertised
    result = await shared.tools["basic_client_info"].execute()
    assert result.output == f"toolnexus {__version__} elicitation=True"


async def test_ctx_timeout_bounds_the_call(shared: Shared) -> None:
    for server in ("basic", "remote"):
        result = await shared.tools[f"{server}_slow"].execute(
            {"seconds": 30}, ToolContext(timeout=0.3)
        )
        assert (result.output, result.is_error) == ("MCP tool slow timed out after 300 ms", True)
        assert result.metadata == {"server": server}
    # the session is still usable afterwards
    assert (await shared.tools["basic_echo"].execute({"text": "ok"})).output == "ok"


async def test_the_server_timeout_is_the_default_call_timeout(shared: Shared) -> None:
    source = await load_mcp({"quick": {"url": shared.http["http"].url(), "timeout": 1000}})
    try:
        slow = next(t for t in source.tools if t.name == "quick_slow")
        result = await slow.execute({"seconds": 30})
        assert (result.output, result.is_error) == ("MCP tool slow timed out after 1000 ms", True)
    finally:
        await source.close()


async def test_signal_cancels_the_call_promptly(shared: Shared) -> None:
    signal = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, signal.set)
    call = shared.tools["basic_slow"].execute({"seconds": 30}, ToolContext(signal=signal))
    result = await asyncio.wait_for(call, 10)
    assert (result.output, result.is_error) == ("MCP tool slow was cancelled", True)


async def test_a_threading_event_works_as_a_signal(shared: Shared) -> None:
    signal = threading.Event()
    asyncio.get_running_loop().call_later(0.1, signal.set)
    result = await shared.tools["remote_slow"].execute({"seconds": 30}, ToolContext(signal=signal))
    assert result.output == "MCP tool slow was cancelled"


async def test_an_already_set_signal_does_not_call(shared: Shared) -> None:
    signal = asyncio.Event()
    signal.set()
    result = await shared.tools["basic_echo"].execute({"text": "x"}, ToolContext(signal=signal))
    assert (result.output, result.is_error) == ("MCP tool echo was cancelled", True)


async def test_calls_from_other_tasks_and_concurrently(shared: Shared) -> None:
    echo = shared.tools["basic_echo"]
    results = await asyncio.gather(
        *(asyncio.create_task(echo.execute({"text": str(i)})) for i in range(20))
    )
    assert [r.output for r in results] == [str(i) for i in range(20)]


async def test_a_protocol_error_is_an_error_result(shared: Shared) -> None:
    result = await shared.tools["basic_echo"].execute({})  # the server rejects a missing "text"
    assert result.is_error is True
    assert result.metadata is not None and result.metadata["server"] == "basic"
    assert "text" in result.output


async def test_form_elicitation_goes_through_wait_for(shared: Shared) -> None:
    shared.asker.answer = lambda request: Answer(request.id, True, {"name": "Ann", "age": 7})
    result = await shared.tools["basic_ask"].execute()
    assert result.output == "accept:[('age', 7), ('name', 'Ann')]"
    request = shared.asker.requests[-1]
    assert request.kind == "input"
    assert request.prompt == "Who are you?"
    assert request.url is None
    assert request.data == {
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"],
        }
    }
    assert request.id.startswith("elc-")


async def test_elicitation_decline_and_cancel(shared: Shared) -> None:
    shared.asker.answer = lambda request: Answer(request.id, False, reason="declined")
    assert (await shared.tools["remote_ask"].execute()).output == "decline:[]"
    shared.asker.answer = lambda request: Answer(request.id, False, reason="expired")
    assert (await shared.tools["basic_ask"].execute()).output == "cancel:[]"
    shared.asker.answer = None  # wait_for returned nothing
    assert (await shared.tools["basic_ask"].execute()).output == "cancel:[]"


async def test_an_answer_that_does_not_fit_the_form_is_refused(shared: Shared) -> None:
    shared.asker.answer = lambda request: Answer(request.id, True, {"name": {"nested": 1}})
    result = await shared.tools["remote_ask"].execute()
    assert result.is_error is True


async def test_a_raising_wait_for_cancels_the_elicitation(
    shared: Shared, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(request: Request) -> Answer:
        raise RuntimeError("no human around")

    shared.asker.answer = boom
    assert (await shared.tools["basic_ask"].execute()).output == "cancel:[]"
    assert "wait_for raised while answering an elicitation: no human around" in caplog.text


async def test_url_elicitation_is_an_authorization_request(shared: Shared) -> None:
    shared.asker.answer = lambda request: Answer(request.id, True)
    assert (await shared.tools["legacy_ask_url"].execute()).output == "accept"
    request = shared.asker.requests[-1]
    assert (request.kind, request.prompt, request.url) == (
        "authorization",
        "Please sign in",
        "https://auth.example/authorize?x=1",
    )
    assert request.data == {"elicitationId": "elc-1"}


async def test_a_sync_wait_for_runs_off_the_loop(shared: Shared) -> None:
    threads: list[str] = []

    def blocking(request: Request) -> Answer:
        threads.append(threading.current_thread().name)
        return Answer(request.id, True, {"name": "Sync"})

    source = await load_mcp(
        {"remote": {"url": shared.http["http"].url(), "protocol": "legacy"}}, blocking
    )
    try:
        ask = next(t for t in source.tools if t.name == "remote_ask")
        assert (await ask.execute()).output == "accept:[('name', 'Sync')]"
        assert threads and threads[0] != threading.main_thread().name
    finally:
        await source.close()


async def test_without_wait_for_elicitation_is_still_advertised(shared: Shared) -> None:
    # at 2025-11-25 for the session: a gateway's client may answer a push during its call
    source = await load_mcp({"remote": {"url": shared.http["http"].url(), "protocol": "legacy"}})
    try:
        info = next(t for t in source.tools if t.name == "remote_client_info")
        assert (await info.execute()).output == f"toolnexus {__version__} elicitation=True"
    finally:
        await source.close()
