"""`serve --acp`: each kind of tool suspension reaches the editor in the ACP form that fits it,
against the SDK's client side on a real served process (tests/support/acp_served.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.support.acp_served import LOGIN_URL, PROFILE_FORM, REDIRECT_URI
from tests.support.cli_runner import clean_env
from tests.support.fake_llm import Call, FakeLLM, call, text, tools
from tests.support.polling import wait_until

import acp
from acp import schema

SERVED = str(Path(__file__).parents[1] / "support" / "acp_served.py")
FORMS = schema.ClientCapabilities(
    elicitation=schema.ElicitationCapabilities(
        form=schema.ElicitationFormCapabilities(), url=schema.ElicitationUrlCapabilities()
    )
)


class Editor:
    """An editor whose user answers permission requests and forms from scripted replies, and
    which records what it was asked and every session update."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.choices: list[str] = []  # option ids to pick, in order
        self.forms: list[Any] = []  # elicitation replies, in order
        self.permissions: list[Any] = []
        self.elicitations: list[tuple[str, Any]] = []
        self.released = asyncio.Event()
        self.completed: list[str] = []  # elicitation ids the agent said are complete

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, **kwargs: Any) -> Any:
        self.permissions.append(schema.RequestPermissionRequest.model_validate(kwargs))
        if self.choices and self.choices[0] == "fail":
            self.choices.pop(0)
            raise acp.RequestError.internal_error({"why": "no permission view"})
        if not self.choices:  # the user has not decided (yet): the editor waits
            await self.released.wait()
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.choices.pop(0))
        )

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self.completed.append(elicitation_id)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicitations.append((message, mode))
        reply = self.forms.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def statuses(self, call_id: str) -> list[str]:
        return [
            u.status
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
        ]

    def result(self, call_id: str) -> str:
        done = [
            u
            for u in self.updates
            if u.session_update == "tool_call_update"
            and u.tool_call_id == call_id
            and u.status in ("completed", "failed")
        ]
        return str(done[-1].raw_output)


@contextlib.asynccontextmanager
async def served(
    llm: FakeLLM, editor: Editor, capabilities: Any = None
) -> AsyncIterator[tuple[Any, str]]:
    async with acp.spawn_agent_process(
        editor, sys.executable, SERVED, llm.url + "/v1", env=clean_env(), use_unstable_protocol=True
    ) as (conn, _process):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities
        )
        session = await conn.new_session(cwd=str(Path.cwd()), mcp_servers=[])
        yield conn, session.session_id


async def run_call(conn: Any, session_id: str, llm: FakeLLM, editor: Editor, asked: Call) -> str:
    """One prompt whose model calls `asked`, then answers; the call's result as the editor saw
    it."""
    llm.push(tools(asked), text("ok"))
    done = await conn.prompt(session_id=session_id, prompt=[acp.text_block("go")])
    assert done.stop_reason == "end_turn"
    assert asked.id is not None
    return editor.result(asked.id)


def questions(*items: dict[str, Any]) -> dict[str, Any]:
    return {"questions": list(items)}


async def test_without_forms_choices_and_sign_ins_are_permission_requests() -> None:
    editor = Editor()
    with FakeLLM() as llm:
        async with served(llm, editor) as (conn, sid):
            # An approval: allow / reject, on the very tool call the editor was shown.
            editor.choices = ["allow", "reject"]
            assert (
                await run_call(conn, sid, llm, editor, call("deploy", {"target": "prod"}, id="d1"))
                == "deployed to prod"
            )
            assert editor.statuses("d1") == ["in_progress", "pending", "completed"]
            approval = editor.permissions[0]
            assert approval.tool_call.tool_call_id == "d1"
            assert approval.tool_call.title == "Deploy to prod?"
            assert [(o.option_id, o.kind) for o in approval.options] == [
                ("allow", "allow_once"),
                ("reject", "reject_once"),
            ]
            rejected = await run_call(
                conn, sid, llm, editor, call("deploy", {"target": "eu"}, id="d2")
            )
            assert rejected == "declined/expired: Deploy to eu?"
            editor.choices = ["fail"]  # an editor answering with an error declines
            to_us = call("deploy", {"target": "us"}, id="d3")
            failed = await run_call(conn, sid, llm, editor, to_us)
            assert failed == "declined/expired: Deploy to us?"

            # A question with choices: the choices are the options.
            editor.choices = ["choice-1"]
            color = questions({"question": "Pick a color?", "options": ["red", "green"]})
            answered = await run_call(conn, sid, llm, editor, call("question", color, id="q1"))
            assert json.loads(answered) == {
                "answers": [{"question": "Pick a color?", "answer": "green"}]
            }
            asked = editor.permissions[-1]
            assert asked.tool_call.tool_call_id == "q1"
            assert asked.tool_call.title == "Pick a color?"
            assert [(o.option_id, o.name, o.kind) for o in asked.options] == [
                ("choice-0", "red", "allow_once"),
                ("choice-1", "green", "allow_once"),
                ("decline", "Decline", "reject_once"),
            ]

            # Free text needs a form this editor has not: declined, nobody asked.
            before = len(editor.permissions)
            free = questions({"question": "Your name?"})
            declined = await run_call(conn, sid, llm, editor, call("question", free, id="q2"))
            assert declined == "declined/expired: Your name?"
            form = await run_call(conn, sid, llm, editor, call("profile", {}, id="p1"))
            assert form == "declined/expired: Who are you?"
            assert len(editor.permissions) == before

            # A sign-in: the tool call carries the URL (text and resource link) to show.
            editor.choices = ["done"]
            assert (
                await run_call(conn, sid, llm, editor, call("sign_in", {}, id="s1")) == "signed in"
            )
            sign_in = editor.permissions[-1]
            assert sign_in.tool_call.tool_call_id == "s1"
            assert sign_in.tool_call.title == "Sign in to Example"
            shown = [c.content for c in sign_in.tool_call.content]
            assert [b.type for b in shown] == ["text", "resource_link"]
            assert LOGIN_URL in shown[0].text and shown[1].uri == LOGIN_URL
            assert [o.kind for o in sign_in.options] == ["allow_once", "reject_once"]

            # A prompt left waiting for the user ends at session/cancel; the session goes on.
            editor.updates.clear()
            asked_so_far = len(editor.permissions)
            llm.push(tools(call("deploy", {"target": "prod"}, id="d9")))
            running = asyncio.ensure_future(
                conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
            )
            await wait_until(lambda: len(editor.permissions) == asked_so_far + 1)
            await conn.cancel(session_id=sid)
            assert (await running).stop_reason == "cancelled"
            editor.released.set()  # the editor answers the request it was left with
            # The session takes the next prompt.
            llm.push(text("next"))
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("again")])
            assert done.stop_reason == "end_turn"
            said = [u.content for u in editor.updates if u.session_update == "agent_message_chunk"]
            assert "".join(c.text for c in said) == "next"

            # An OAuth sign-in's code comes back to a redirect URI: without a form to paste
            # where the browser landed, it is declined (the log says to sign in ahead).
            asked_before = len(editor.permissions)
            oauth = await run_call(conn, sid, llm, editor, call("oauth", {}, id="o1"))
            assert oauth == 'declined/expired: Sign in to MCP server "db"'
            assert len(editor.permissions) == asked_before
    assert editor.elicitations == []


async def test_an_editor_with_forms_gets_forms_and_opens_sign_in_urls() -> None:
    editor = Editor()
    with FakeLLM() as llm:
        async with served(llm, editor, FORMS) as (conn, sid):
            editor.forms = [
                schema.AcceptElicitationResponse(
                    action="accept", content={"q1": "red", "q2": ["cats", "dogs"], "q3": "Ada"}
                )
            ]
            asked = questions(
                {"question": "Pick a color?", "header": "Color", "options": ["red", "green"]},
                {"question": "Pets?", "options": ["cats", "dogs", "fish"], "multiple": True},
                {"question": "Your name?"},
            )
            answered = await run_call(conn, sid, llm, editor, call("question", asked, id="q1"))
            assert json.loads(answered) == {
                "answers": [
                    {"question": "Pick a color?", "answer": "red"},
                    {"question": "Pets?", "answer": ["cats", "dogs"]},
                    {"question": "Your name?", "answer": "Ada"},
                ]
            }
            message, mode = editor.elicitations[0]
            assert message.splitlines() == [
                "Pick a color? (options: red, green)",
                "Pets? (options: cats, dogs, fish)",
                "Your name?",
            ]
            assert (mode.session_id, mode.tool_call_id) == (sid, "q1")
            form = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)
            assert form["required"] == ["q1", "q2", "q3"]
            assert form["properties"]["q1"] == {
                "type": "string",
                "title": "Color",
                "description": "Pick a color?",
                "enum": ["red", "green"],
            }
            assert form["properties"]["q2"]["type"] == "array"
            assert form["properties"]["q2"]["items"]["enum"] == ["cats", "dogs", "fish"]
            assert form["properties"]["q3"]["type"] == "string"

            # A tool's own form is asked as it is; a declined form declines the call.
            editor.forms = [
                schema.AcceptElicitationResponse(action="accept", content={"name": "Ada"}),
                schema.DeclineElicitationResponse(action="decline"),
            ]
            filled = await run_call(conn, sid, llm, editor, call("profile", {}, id="p1"))
            assert filled == 'profile: {"name": "Ada"}'
            message, mode = editor.elicitations[-1]
            assert message == "Who are you?"
            assert mode.requested_schema.model_dump(by_alias=True, exclude_none=True) == {
                **PROFILE_FORM,
                "properties": {"name": {"type": "string", "title": "Your name"}},
            }
            refused = await run_call(conn, sid, llm, editor, call("profile", {}, id="p2"))
            assert refused == "declined/expired: Who are you?"
            # An editor answering with an error declines too: the run goes on.
            editor.forms = [acp.RequestError.internal_error({"why": "no form view"})]
            failed = await run_call(conn, sid, llm, editor, call("profile", {}, id="p3"))
            assert failed == "declined/expired: Who are you?"

            # A sign-in URL is given to the editor to open.
            editor.forms = [schema.AcceptElicitationResponse(action="accept")]
            assert (
                await run_call(conn, sid, llm, editor, call("sign_in", {}, id="s1")) == "signed in"
            )
            message, mode = editor.elicitations[-1]
            assert message == "Sign in to Example"
            assert str(mode.url) == LOGIN_URL and mode.tool_call_id == "s1"
            assert editor.completed == [mode.elicitation_id]  # the tool ran again: done

            # An OAuth sign-in: the form asks for the address the browser landed on.
            landed = REDIRECT_URI + "?code=c0de&state=s1"
            editor.forms = [
                schema.AcceptElicitationResponse(action="accept", content={"callbackUrl": landed})
            ]
            back = await run_call(conn, sid, llm, editor, call("oauth", {}, id="o1"))
            assert back == "came back to " + landed
            message, mode = editor.elicitations[-1]
            assert LOGIN_URL in message and mode.tool_call_id == "o1"
            assert mode.requested_schema.required == ["callbackUrl"]
    assert editor.permissions == []
