"""Input requests ↔ suspension, against the SDK's own servers: 2026-07-28 input requests with and
without `wait_for`, resumes in another process and on a replica, stale state, roots, sampling,
-32042 URL elicitations, and the 2025-11-25 push elicitation beside them."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.mcp_fixtures import Asker, ErasShared
from support.mcp_servers import ERAS, ThreadedHttpServer, command
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus.mcp_source import load_mcp_with_context
from toolnexus.types import Answer, Request, ToolContext, pending_of

RESUME = Path(__file__).parents[1] / "support" / "mcp_resume.py"
KEY = "k" * 40
NAME_FORM = {
    "properties": {"name": {"title": "Name", "type": "string"}},
    "required": ["name"],
    "type": "object",
}
MODERN_SERVERS = ["s_dual", "h_dual", "h_modern"]


def accept(data: dict[str, Any]) -> Any:
    return lambda request: Answer(request.id, True, data)


@pytest.mark.parametrize("server", MODERN_SERVERS)
async def test_a_form_request_goes_through_wait_for(eras: ErasShared, server: str) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = accept({"name": "Ada"})
    result = await eras.tool(server, "greet").execute({"greeting": "Hi"})
    assert (result.output, result.is_error) == ("Hi, Ada!", False)
    [request] = eras.asker.requests
    assert (request.kind, request.prompt, request.url) == ("input", "What is your name?", None)
    assert request.data == {"schema": NAME_FORM}


@pytest.mark.parametrize(("reason", "action"), [("declined", "decline"), ("cancelled", "cancel")])
async def test_declined_and_cancelled_answers_map(
    eras: ErasShared, reason: str, action: str
) -> None:
    eras.asker.answer = lambda request: Answer(request.id, False, reason=reason)
    result = await eras.tool("h_dual", "greet").execute({})
    assert result.is_error
    assert result.output.endswith(f"elicitation was {action}")


async def test_an_answer_that_breaks_the_form_is_never_sent(eras: ErasShared) -> None:
    eras.asker.answer = accept({"name": 7})
    result = await eras.tool("h_dual", "greet").execute({})
    assert result.is_error
    assert result.output == (
        'The answer does not fit the form MCP server "h_dual" asked for; invalid: name'
    )


async def test_a_url_request_is_an_authorization_request(eras: ErasShared) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = accept({})
    result = await eras.tool("h_modern", "visit").execute({})
    assert (result.output, result.is_error) == ("visited: accept", False)
    [request] = eras.asker.requests
    assert (request.kind, request.prompt, request.url) == (
        "authorization",
        "Please sign in",
        "https://example.test/login",
    )
    # 2026-07-28 URL entries carry no elicitationId: the entry's key stands for it
    assert request.data == {"elicitationId": "visit"}


async def test_a_server_that_never_stops_asking_is_cut_after_10_rounds(eras: ErasShared) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = accept({"answer": "yes"})
    result = await eras.tool("h_dual", "nag").execute({})
    assert (result.output, result.is_error) == (
        "MCP tool nag asked for input more than 10 times",
        True,
    )
    assert len(eras.asker.requests) == 10


async def test_two_questions_in_one_round_are_asked_in_server_order(eras: ErasShared) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = lambda r: Answer(
        r.id, True, {"name": "Ada"} if "name" in r.prompt else {"colour": "teal"}
    )
    result = await eras.tool("s_dual", "profile").execute({})
    assert result.output == "Ada likes teal"
    assert [r.prompt for r in eras.asker.requests] == ["What is your name?", "Favourite colour?"]


async def test_the_handshake_era_still_pushes_elicitation(
    eras: ErasShared, caplog: pytest.LogCaptureFixture
) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = accept({"name": "Bo"})
    result = await eras.tool("s_legacy", "greet").execute({})
    assert result.output == "Hello, Bo!"
    eras.asker.answer = accept({})
    with caplog.at_level(logging.DEBUG, logger="toolnexus"):
        assert (await eras.tool("s_legacy", "visit").execute({})).output == "visited: accept"
        # the server's `notifications/elicitation/complete`, sent before its answer
        completed = '[toolnexus] MCP server "s_legacy" completed elicitation el-visit-1'
        deadline = time.monotonic() + 10
        while completed not in caplog.messages:
            assert time.monotonic() < deadline, caplog.messages
            await asyncio.sleep(0.01)
    assert eras.asker.requests[-1].kind == "authorization"


# -- without wait_for: suspensions --------------------------------------------------------------


@pytest.fixture(scope="module")
def replicas() -> Iterator[list[ThreadedHttpServer]]:
    """Two HTTP replicas of one server sharing a request-state key."""
    servers = [ThreadedHttpServer(eras_app("--state-key", KEY, "--stateless")) for _ in range(2)]
    yield servers
    for server in servers:
        server.stop()


def resume_elsewhere(
    url: str, tool: str, args: dict[str, Any], request: Request, answer: Answer
) -> Any:
    job = {
        "url": url,
        "tool": tool,
        "arguments": args,
        "request": request.to_dict(),
        "answer": answer.to_dict(),
    }
    done = subprocess.run(
        [sys.executable, str(RESUME)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


async def test_without_wait_for_the_call_suspends_and_resumes_in_another_process(
    replicas: list[ThreadedHttpServer],
) -> None:
    source = await load_mcp_with_context({"srv": {"url": replicas[0].url()}})
    try:
        greet = next(t for t in source.tools if t.name == "srv_greet")
        result = await greet.execute({"greeting": "Hey"})
    finally:
        await source.close()
    request = pending_of(result)
    assert request is not None
    assert (result.output, result.is_error) == ("What is your name?", True)
    assert result.metadata is not None and result.metadata["server"] == "srv"
    assert (request.kind, request.prompt) == ("input", "What is your name?")
    mcp = request.data["mcp"] if request.data else None
    assert isinstance(mcp, dict)
    assert list(mcp) == [
        "server",
        "tool",
        "arguments",
        "protocol",
        "requestState",
        "inputRequests",
        "key",
        "responses",
    ]
    assert (mcp["server"], mcp["tool"], mcp["arguments"], mcp["protocol"]) == (
        "srv",
        "greet",
        {"greeting": "Hey"},
        "2026-07-28",
    )
    assert mcp["responses"] == {}
    assert list(mcp["inputRequests"]) == [mcp["key"]]
    assert mcp["inputRequests"][mcp["key"]]["method"] == "elicitation/create"
    json.dumps(request.to_dict())  # plain JSON, storable as it is
    answer = Answer(request.id, True, {"name": "Ada"})
    # a fresh process, through the replica that did not mint the state
    done = resume_elsewhere(replicas[1].url(), "srv_greet", {"greeting": "Hey"}, request, answer)
    assert done == {"output": "Hey, Ada!", "is_error": False, "pending": None}


async def test_an_answer_for_another_call_is_refused(replicas: list[ThreadedHttpServer]) -> None:
    source = await load_mcp_with_context({"srv": {"url": replicas[0].url()}})
    try:
        tools = {t.name: t for t in source.tools}
        request = pending_of(await tools["srv_greet"].execute({}))
        assert request is not None
        wrong = await tools["srv_profile"].execute(
            {}, ToolContext(answer=Answer(request.id, True, {"name": "x"}), request=request)
        )
        assert (wrong.output, wrong.is_error) == ("the answer does not belong to this call", True)
        other_id = await tools["srv_greet"].execute(
            {}, ToolContext(answer=Answer("nope", True, {"name": "x"}), request=request)
        )
        assert other_id.output == "the answer does not belong to this call"
        # the answer alone is enough in the process that handed the request out
        alone = await tools["srv_greet"].execute(
            {}, ToolContext(answer=Answer(request.id, True, {"name": "Cy"}))
        )
        assert alone.output == "Hello, Cy!"
    finally:
        await source.close()


async def test_two_host_entries_suspend_twice_then_retry_once(
    replicas: list[ThreadedHttpServer],
) -> None:
    source = await load_mcp_with_context({"srv": {"url": replicas[0].url()}})
    try:
        profile = next(t for t in source.tools if t.name == "srv_profile")
        first = pending_of(await profile.execute({}))
        assert first is not None and first.prompt == "What is your name?"
        step = await profile.execute(
            {}, ToolContext(answer=Answer(first.id, True, {"name": "Ada"}), request=first)
        )
        second = pending_of(step)
        assert second is not None and second.prompt == "Favourite colour?"
        assert second.data is not None
        assert list(second.data["mcp"]["responses"].values()) == [
            {"action": "accept", "content": {"name": "Ada"}}
        ]
        done = await profile.execute(
            {}, ToolContext(answer=Answer(second.id, True, {"colour": "red"}), request=second)
        )
        assert (done.output, done.is_error) == ("Ada likes red", False)
    finally:
        await source.close()


async def test_stale_state_is_asked_afresh_reusing_the_answer() -> None:
    first = ThreadedHttpServer(eras_app("--state-key", "a" * 40, "--stateless"))
    port = first.port
    try:
        source = await load_mcp_with_context({"srv": {"url": first.url()}})
        try:
            profile = next(t for t in source.tools if t.name == "srv_profile")
            asked = pending_of(await profile.execute({}))
            assert asked is not None
            step = await profile.execute(
                {}, ToolContext(answer=Answer(asked.id, True, {"name": "Ada"}), request=asked)
            )
            colour = pending_of(step)
            assert colour is not None
        finally:
            await source.close()
    finally:
        first.stop()
    restarted = ThreadedHttpServer(eras_app("--state-key", "b" * 40, "--stateless"), port=port)
    try:
        source = await load_mcp_with_context({"srv": {"url": restarted.url()}})
        try:
            profile = next(t for t in source.tools if t.name == "srv_profile")
            done = await profile.execute(
                {}, ToolContext(answer=Answer(colour.id, True, {"colour": "red"}), request=colour)
            )
            # the state was refused; asked afresh, both questions were answered already
            assert (done.output, done.is_error) == ("Ada likes red", False)
        finally:
            await source.close()
    finally:
        restarted.stop()


# -- roots, sampling, -32042 --------------------------------------------------------------------


async def test_roots_come_from_config_toolkit_or_workspace(
    era_http: dict[str, ThreadedHttpServer], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {
        "configured_modern": {"url": era_http["dual"].url(), "roots": ["/srv/ws"]},
        "configured_legacy": {"command": command(ERAS, "--era", "legacy"), "roots": ["/srv/ws"]},
        "from_toolkit": {"url": era_http["dual"].url()},
        "none_modern": {"url": era_http["dual"].url(), "roots": False},
        "none_legacy": {"url": era_http["legacy"].url(), "roots": False},
    }
    source = await load_mcp_with_context(
        config, roots=["file:///data", {"uri": "file:///x", "name": "x"}], workspace=ws
    )
    try:
        tools = {t.name: t for t in source.tools}
        for server in ("configured_modern", "configured_legacy"):
            shown = await tools[f"{server}_show_roots"].execute()
            assert (shown.output, shown.is_error) == ("file:///srv/ws", False)
        assert (await tools["from_toolkit_show_roots"].execute()).output == (
            "file:///data\nfile:///x"
        )
        for server in ("none_modern", "none_legacy"):
            refused = await tools[f"{server}_show_roots"].execute()
            assert refused.is_error
            assert refused.output == (
                f'MCP server "{server}" asked for roots; none are configured '
                "(create_toolkit(roots=...))"
            )
    finally:
        await source.close()
    workspace_only = await load_mcp_with_context(
        {"srv": {"url": era_http["dual"].url()}}, workspace=ws
    )
    try:
        shown = await next(t for t in workspace_only.tools if t.name == "srv_show_roots").execute()
        assert shown.output == ws.resolve().as_uri()
    finally:
        await workspace_only.close()


@pytest.mark.parametrize("server", ["s_dual", "h_legacy"])
async def test_sampling_without_a_gateway_client_is_refused(eras: ErasShared, server: str) -> None:
    result = await eras.tool(server, "sampled").execute()
    assert (result.output, result.is_error) == (
        f'MCP server "{server}" asked for sampling, which toolnexus does not provide',
        True,
    )


@pytest.mark.parametrize("server", ["h_dual", "s_legacy"])
async def test_url_elicitation_required_goes_through_wait_for_then_resends(
    eras: ErasShared, server: str
) -> None:
    eras.asker.requests.clear()
    eras.asker.answer = accept({})
    result = await eras.tool(server, "guarded").execute({"key": f"wf-{server}"})
    assert (result.output, result.is_error) == (f"guarded ok wf-{server}", False)
    [request] = eras.asker.requests
    assert (request.kind, request.prompt, request.url, request.data) == (
        "authorization",
        "Authorize the file store",
        "https://example.test/authorize",
        {"elicitationId": f"el-wf-{server}"},
    )


async def test_url_elicitation_declined_names_the_url(eras: ErasShared) -> None:
    eras.asker.answer = lambda r: Answer(r.id, False, reason="declined")
    result = await eras.tool("h_dual", "guarded").execute({"key": "no"})
    assert (result.output, result.is_error) == (
        "URL elicitation required\nhttps://example.test/authorize",
        True,
    )


async def test_url_elicitation_required_without_wait_for_suspends(
    era_http: dict[str, ThreadedHttpServer],
) -> None:
    source = await load_mcp_with_context({"srv": {"url": era_http["dual"].url()}})
    try:
        guarded = next(t for t in source.tools if t.name == "srv_guarded")
        result = await guarded.execute({"key": "later"})
        request = pending_of(result)
        assert request is not None
        assert result.output == "Authorize the file store\nhttps://example.test/authorize"
        assert request.kind == "authorization"
        assert request.data is not None
        assert request.data["mcp"] == {
            "server": "srv",
            "tool": "guarded",
            "arguments": {"key": "later"},
            "elicitationId": "el-later",
        }
        done = await guarded.execute(
            {"key": "later"}, ToolContext(answer=Answer(request.id, True), request=request)
        )
        assert (done.output, done.is_error) == ("guarded ok later", False)
    finally:
        await source.close()


async def test_create_toolkit_passes_roots_and_the_workspace(
    era_http: dict[str, ThreadedHttpServer], tmp_path: Path
) -> None:
    from toolnexus import create_toolkit

    given = await create_toolkit(
        mcp_config={"srv": {"url": era_http["dual"].url()}}, roots=["/srv/ws"], builtins=False
    )
    try:
        assert (await given.execute("srv_show_roots", {})).output == "file:///srv/ws"
    finally:
        await given.close()
    workspace = await create_toolkit(
        mcp_config={"srv": {"url": era_http["dual"].url()}}, builtins={"workspace": str(tmp_path)}
    )
    try:
        shown = await workspace.execute("srv_show_roots", {})
        assert shown.output == tmp_path.resolve().as_uri()
    finally:
        await workspace.close()


async def test_the_declared_capabilities_follow_the_era_and_the_config(
    era_http: dict[str, ThreadedHttpServer],
) -> None:
    async def declared(config: dict[str, Any], wait_for: Any = None) -> dict[str, Any]:
        source = await load_mcp_with_context(config, wait_for)
        try:
            found = {}
            for name in config:
                tool = next(t for t in source.tools if t.name == f"{name}_client_capabilities")
                found[name] = json.loads((await tool.execute()).output)
            return found
        finally:
            await source.close()

    dual, legacy = era_http["dual"].url(), era_http["legacy"].url()
    both_modes = {"form": {}, "url": {}}
    bare = await declared({"modern": {"url": dual}, "legacy": {"url": legacy}})
    # 2026-07-28: elicitation always (a question becomes a suspension), sampling only on the
    # requests of a gateway's client that declared it; 2025-11-25: both for the session (a
    # gateway's client may answer a push while the call is open; else it is refused); roots
    # only when there are some; the Skills and Apps extensions always, and Tasks too at
    # 2026-07-28 unless the server is configured `"tasks": "avoid"`
    ext = {
        "io.modelcontextprotocol/skills": {},
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
    }
    tasks = {"extensions": {**ext, "io.modelcontextprotocol/tasks": {}}}
    pushed = {"elicitation": both_modes, "sampling": {}, "extensions": ext}
    assert bare == {"modern": {"elicitation": both_modes, **tasks}, "legacy": pushed}
    avoided = await declared({"modern": {"url": dual, "tasks": "avoid"}})
    assert avoided == {"modern": {"elicitation": both_modes, "extensions": ext}}
    full = await declared(
        {
            "modern": {"url": dual, "roots": ["/srv/ws"]},
            "legacy": {"url": legacy, "roots": ["/srv/ws"]},
            "rootless": {"url": legacy, "roots": False},
        },
        Asker(),
    )
    assert full == {
        "modern": {"elicitation": both_modes, "roots": {}, **tasks},
        "legacy": {**pushed, "roots": {}},
        "rootless": pushed,
    }


async def test_a_person_answering_a_push_takes_no_time_from_the_call(
    era_http: dict[str, ThreadedHttpServer],
) -> None:
    # a pushed question (2025-11-25) answered more slowly than the server's whole `timeout`:
    # the call still succeeds (at 2026-07-28 the person answers between two requests)
    async def slow_person(request: Request) -> Answer:
        await asyncio.sleep(1.3)
        return Answer(request.id, True, {"name": "Bo"})

    source = await load_mcp_with_context(
        {"srv": {"url": era_http["legacy"].url(), "timeout": 1000}}, slow_person
    )
    try:
        greet = next(t for t in source.tools if t.name == "srv_greet")
        assert (await greet.execute({})).output == "Hello, Bo!"
        silent = next(t for t in source.tools if t.name == "srv_silent")
        late = await silent.execute({"seconds": 1.3})  # the server's own time still counts
        assert (late.output, late.is_error) == ("MCP tool silent timed out after 1000 ms", True)
    finally:
        await source.close()
