"""`toolnexus serve --acp`: a real subprocess driven by the ACP SDK's client side, its model the
scripted LLM endpoint."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli_runner import clean_env
from tests.support.fake_llm import FakeLLM, call, error, text, tools

import acp
from acp import schema


class Editor:
    """The editor's side: records every session update."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, **kwargs: Any) -> Any:
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

    def on_connect(self, conn: Any) -> None:
        pass

    def said(self, kind: str) -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == kind)


def serve_args(llm: FakeLLM, store: Path) -> list[str]:
    return [
        "-m", "toolnexus", "serve", "--acp",
        "--base-url", llm.url + "/v1", "--style", "openai", "--model", "m", "--api-key", "k",
        "--store", f"sqlite:{store}",
    ]  # fmt: skip


async def test_an_editor_drives_the_served_toolkit_and_resumes_the_session(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    store = tmp_path / "conversations.db"
    with FakeLLM() as llm:
        llm.push(
            tools(call("read", {"path": str(tmp_path / "notes.txt")}, id="c1")),
            text("It says 42."),
        )
        editor = Editor()
        async with acp.spawn_agent_process(
            editor, sys.executable, *serve_args(llm, store), env=clean_env(), cwd=tmp_path
        ) as (conn, _process):
            hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert hello.agent_capabilities.load_session is True
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            done = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("What do my notes say?")]
            )
            assert done.stop_reason == "end_turn"
            assert editor.said("agent_message_chunk") == "It says 42."
            started = [u for u in editor.updates if u.session_update == "tool_call"]
            finished = [u for u in editor.updates if u.session_update == "tool_call_update"]
            assert [(u.tool_call_id, u.title, u.status) for u in started] == [
                ("c1", "read", "in_progress")
            ]
            # A built-in's ACP kind, and the file it works on, for the editor to follow.
            assert started[0].kind == "read"
            assert [loc.path for loc in started[0].locations] == [str(tmp_path / "notes.txt")]
            assert finished[0].tool_call_id == "c1" and finished[0].status == "completed"
            assert "the answer is 42" in str(finished[0].raw_output)
        session_id = session.session_id

        # A new process finds the session in the store, replays it, and continues it.
        llm.push(text("Still 42."))
        editor = Editor()
        async with acp.spawn_agent_process(
            editor, sys.executable, *serve_args(llm, store), env=clean_env(), cwd=tmp_path
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            assert editor.said("user_message_chunk") == "What do my notes say?"
            assert editor.said("agent_message_chunk") == "It says 42."
            await conn.prompt(session_id=session_id, prompt=[acp.text_block("And now?")])
            assert editor.said("agent_message_chunk") == "It says 42.Still 42."
        sent = llm.requests[-1].body["messages"]
        assert [m["role"] for m in sent if m["role"] in ("user",)] == ["user", "user"]


async def test_session_cancel_ends_the_running_prompt_and_unknown_sessions_are_refused(
    tmp_path: Path,
) -> None:
    import asyncio

    from tests.support.polling import wait_until

    with FakeLLM() as llm:
        llm.push(text("never", hang=True))
        editor = Editor()
        async with acp.spawn_agent_process(
            editor, sys.executable, *serve_args(llm, tmp_path / "c.db"), env=clean_env()
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            running = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("wait")])
            )
            await wait_until(lambda: len(llm.requests) == 1)
            await conn.cancel(session_id=session.session_id)
            assert (await running).stop_reason == "cancelled"
            llm.push(error(400, "bad request: unknown model"))
            with pytest.raises(acp.RequestError) as failed:
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("x")])
            assert failed.value.code == -32603
            assert "unknown model" in failed.value.data["message"]
            with pytest.raises(acp.RequestError, match="Invalid params"):
                await conn.load_session(cwd=str(tmp_path), session_id="nope", mcp_servers=[])
            with pytest.raises(acp.RequestError, match="Invalid params"):
                await conn.prompt(session_id="nope", prompt=[acp.text_block("hi")])

            # @-mentions: a resource link and an embedded resource reach the model as text;
            # an image (not declared in promptCapabilities) is refused.
            llm.push(text("seen"))
            mentioned = [
                acp.text_block("Compare "),
                acp.resource_link_block(name="a.py", uri="file:///w/a.py"),
                acp.text_block(" with"),
                acp.resource_block(acp.embedded_text_resource("file:///w/notes.md", "# Notes\nhi")),
            ]
            await conn.prompt(session_id=session.session_id, prompt=mentioned)
            asked = llm.requests[-1].body["messages"][-1]["content"]
            assert asked == (
                'Compare [a.py](file:///w/a.py) with\n<resource uri="file:///w/notes.md">\n'
                "# Notes\nhi\n</resource>\n"
            )
            with pytest.raises(acp.RequestError) as refused:
                picture = acp.image_block("iVBORw0KGgo=", "image/png")
                await conn.prompt(session_id=session.session_id, prompt=[picture])
            assert refused.value.code == -32602
            assert "not 'image' content" in refused.value.data["prompt"]


def test_serve_acp_refuses_other_profiles_and_needs_a_model() -> None:
    from tests.support.cli_runner import one_line_error, toolnexus

    mixed = toolnexus("serve", "--acp", "--stdio")
    assert mixed.returncode != 0
    assert "--acp serves one ACP agent over stdin/stdout" in one_line_error(mixed)
    bare = toolnexus("serve", "--acp", "--no-builtins")
    assert bare.returncode != 0
    assert "pass --base-url, --model" in one_line_error(bare)
