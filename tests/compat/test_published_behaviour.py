"""Behaviour a user of the published package relies on, observed on it and kept here.

Each expectation below was observed on the published 0.21.0 package with a small script (the
inputs and what came back); the deliberate differences are in MIGRATING.md.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import mcp_types
import pytest

import toolnexus.translate as tr
from support.client_helpers import add_tool
from toolnexus import (
    Answer,
    SkillDef,
    SkillInfo,
    Toolkit,
    agent,
    agent_tools,
    create_in_process_client,
    define_tool,
    list_skills,
    load_skills,
    tool,
)
from toolnexus.builtin import builtin_shell
from toolnexus.client import TranslateResult
from toolnexus.mcp_source import answer_to_elicit_result, elicitation_to_request
from toolnexus.serve import InMemoryTaskStore, resolve_store, start_a2a_server

# -- native tools ----------------------------------------------------------------------------


async def test_an_integer_for_a_float_parameter_reaches_the_function_unchanged() -> None:
    @tool
    def add(a: float, b: float) -> float:
        return a + b

    assert (await add.execute({"a": 2, "b": 3})).output == "5"
    assert (await add.execute({"a": 2.5, "b": 3})).output == "5.5"
    assert add.input_schema["properties"]["a"] == {"type": "number"}


async def test_integers_stay_integers_inside_containers_of_floats() -> None:
    seen: list[Any] = []

    @tool
    def take(xs: list[float], m: dict[str, float], o: float | None = None) -> str:
        seen.extend([xs, m, o])
        return "ok"

    await take.execute({"xs": [1, 2.5], "m": {"k": 3}, "o": 4})
    assert seen == [[1, 2.5], {"k": 3}, 4]
    assert [type(v) for v in (seen[0][0], seen[1]["k"], seen[2])] == [int, int, int]


def test_define_tool_takes_a_source_label() -> None:
    def echo(text: str) -> str:
        return text

    assert define_tool(echo).source == "native"
    assert define_tool(echo, source="http").source == "http"
    explicit = define_tool(
        name="e", description="", input_schema={"type": "object"}, execute=lambda a, c: "x",
        source="custom",
    )  # fmt: skip
    assert explicit.source == "custom"
    with pytest.raises(TypeError, match="source"):
        define_tool(echo, source="")


# -- the in-process client -------------------------------------------------------------------


def _generate(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "hi"}


async def test_in_process_client_refuses_streaming_with_not_implemented() -> None:
    client = create_in_process_client(model="m", generate=_generate)
    with pytest.raises(NotImplementedError, match="does not support streaming"):
        client.stream("x")
    with pytest.raises(NotImplementedError, match="does not support streaming"):
        await client.ask("x", on_text=print)
    assert (await client.run("x")).text == "hi"


@pytest.mark.parametrize(
    "option", ["base_url", "api_key", "style", "http_client", "http_transport"]
)
def test_in_process_client_says_it_has_no_wire(option: str) -> None:
    with pytest.raises(TypeError, match="has no wire to configure") as caught:
        create_in_process_client(model="m", generate=_generate, **{option: "x"})
    assert option in str(caught.value)


def test_in_process_client_needs_a_callable_generate() -> None:
    with pytest.raises(TypeError, match="callable `generate`"):
        create_in_process_client(model="m", generate=5)  # type: ignore[arg-type]


# -- a list of tools where a toolkit goes ----------------------------------------------------


def _scripted(*replies: dict[str, Any]) -> Any:
    queue = list(replies)
    seen: list[list[str]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append([t["function"]["name"] for t in request["tools"] or []])
        return queue.pop(0)

    return generate, seen


@pytest.mark.parametrize("as_given", [list, tuple, iter])
async def test_run_takes_a_list_of_tools(as_given: Any) -> None:
    generate, seen = _scripted(
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"content": "3"}
    )
    client = create_in_process_client(model="m", generate=generate)
    result = await client.run("1+2?", as_given([add_tool()]))
    assert result.text == "3" and result.tool_calls[0]["output"] == "3"
    assert seen == [["add"], ["add"]]  # exactly the tools given: no built-ins


async def test_ask_stream_conversation_and_translate_take_tools_too() -> None:
    generate, seen = _scripted({"content": "a"}, {"content": "b"})
    client = create_in_process_client(model="m", generate=generate)
    assert (await client.ask("x", [add_tool()])).text == "a"
    assert (await client.conversation([add_tool()]).send("y")).text == "b"
    assert seen == [["add"], ["add"]]


async def test_a_wrong_toolkit_argument_says_what_to_pass() -> None:
    client = create_in_process_client(model="m", generate=_generate)
    with pytest.raises(TypeError, match="Toolkit or a list of Tool"):
        await client.run("x", "add")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must hold Tool objects"):
        await client.run("x", [lambda: 1])  # type: ignore[list-item]


# -- base_url that already is the endpoint ---------------------------------------------------


@pytest.mark.parametrize(
    ("style", "base_url", "endpoint"),
    [
        ("openai", "https://llm.example/v1", "https://llm.example/v1/chat/completions"),
        ("openai", "https://llm.example/v1/chat/completions", "https://llm.example/v1/chat/completions"),
        ("openai", "https://llm.example/v1/chat/completions/", "https://llm.example/v1/chat/completions"),
        ("anthropic", "https://llm.example", "https://llm.example/v1/messages"),
        ("anthropic", "https://llm.example/v1/messages", "https://llm.example/v1/messages"),
    ],
)  # fmt: skip
async def test_a_full_endpoint_url_is_used_as_it_is(
    style: str, base_url: str, endpoint: str
) -> None:
    from toolnexus import create_client

    sent: list[str] = []

    class Recording:
        def post(self, url: str, headers: Any, payload: Any, timeout: float) -> dict[str, Any]:
            sent.append(url)
            if style == "openai":
                return {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
            return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}

    client = create_client(
        base_url=base_url, style=style, model="m", api_key="k", http_transport=Recording()
    )
    assert (await client.run("x")).text == "ok"
    assert sent == [endpoint]


@pytest.mark.parametrize(
    ("style", "base_url", "hint"),
    [
        ("openai", "https://api.anthropic.com/v1/messages", 'style="anthropic"'),
        ("anthropic", "https://api.openai.com/v1/chat/completions", 'style="openai"'),
    ],
)
def test_the_other_styles_endpoint_is_refused_with_what_to_pass(
    style: str, base_url: str, hint: str
) -> None:
    from toolnexus import create_client

    with pytest.raises(ValueError, match="pass the provider's base URL") as caught:
        create_client(base_url=base_url, style=style, model="m")  # type: ignore[arg-type]
    assert hint in str(caught.value)


# -- serving ---------------------------------------------------------------------------------


def test_serve_documents_that_it_runs_on_the_callers_loop() -> None:
    assert "caller's event loop" in " ".join((inspect.getdoc(Toolkit.serve) or "").split())


def test_resolve_store_defaults_to_memory() -> None:
    assert isinstance(resolve_store(), InMemoryTaskStore)


async def test_start_a2a_server_answers_tasks_with_run_task() -> None:
    calls: list[tuple[str, str | None]] = []

    async def run_task(text: str, context_id: str | None) -> str:
        calls.append((text, context_id))
        return f"echo: {text}"

    skill = SkillInfo(name="echo", location="skill://echo/", content="", description="Echoes")
    handle = await start_a2a_server("127.0.0.1:0", {"name": "echoer"}, [skill], run_task)
    try:
        # our own A2A client, whatever protocol version both ends speak
        peer = agent(handle.url + "/.well-known/agent-card.json")
        (echo,) = await agent_tools(peer)
        assert "echo" in echo.name
        result = await echo.execute({"task": "hello"})
        assert result.is_error is False and "echo: hello" in result.output
        assert [text for text, _ in calls] == ["hello"]
    finally:
        await handle.stop()


async def test_start_a2a_server_refuses_another_loop() -> None:
    other = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="running event loop"):
            await start_a2a_server("127.0.0.1:0", {}, [], lambda t, c: "x", loop=other)
    finally:
        other.close()


# -- MCP elicitation helpers -----------------------------------------------------------------


def test_elicitation_to_request_reads_sdk_objects_and_dicts() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    sdk = mcp_types.ElicitRequestFormParams(message="Who?", requested_schema=schema)
    for params in (sdk, {"message": "Who?", "requestedSchema": schema}):
        request = elicitation_to_request(params)
        assert (request.kind, request.prompt, request.data) == ("input", "Who?", {"schema": schema})

    class CamelCase:  # an object spelled like the wire, as older SDKs had it
        message = "Who?"
        requestedSchema = schema

    assert elicitation_to_request(CamelCase()).data == {"schema": schema}
    url = elicitation_to_request({"mode": "url", "message": "Sign in", "url": "https://x/auth"})
    assert (url.kind, url.url) == ("authorization", "https://x/auth")


def test_answer_to_elicit_result_is_the_sdks_result() -> None:
    accepted = answer_to_elicit_result(Answer("1", True, {"name": "Ann"}))
    assert isinstance(accepted, mcp_types.ElicitResult)
    assert (accepted.action, accepted.content) == ("accept", {"name": "Ann"})
    declined = answer_to_elicit_result(Answer("1", False, reason="declined"))
    assert (declined.action, declined.content) == ("decline", None)
    assert answer_to_elicit_result(Answer("1", False, reason="expired")).action == "cancel"


# -- skills, translate data, built-ins -------------------------------------------------------


def test_skill_info_fields_are_in_the_published_order(tmp_path: Any) -> None:
    info = SkillInfo("n", "/s/SKILL.md", "body", "desc")
    assert (info.name, info.location, info.content, info.description) == (
        "n", "/s/SKILL.md", "body", "desc",
    )  # fmt: skip
    assert (info.origin, info.resources, info.base) == ("fs", None, None)
    (tmp_path / "hello").mkdir()
    (tmp_path / "hello" / "SKILL.md").write_text("---\nname: hello\ndescription: Hi\n---\nBody\n")
    found = list_skills(str(tmp_path)).skills[0]
    assert (found.origin, found.location) == ("fs", str(tmp_path / "hello" / "SKILL.md"))
    data = load_skills(skills=[SkillDef(name="d", content="x", base="mybase", resources=["a"])])
    logical = data.skills["d"]
    assert (logical.origin, logical.location, logical.base, logical.resources) == (
        "logical", "mybase", "mybase", ("a",),
    )  # fmt: skip


def test_translate_result_fields_have_defaults() -> None:
    empty = TranslateResult()
    assert (empty.text, empty.tool_calls, empty.finish_reason, empty.model, empty.raw) == (
        "", [], "stop", "", None,
    )  # fmt: skip
    assert empty.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


MESSAGES = [
    {"role": "system", "content": "S1"},
    {"role": "developer", "content": [{"type": "text", "text": "S2"}]},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "ok", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}},
        {"id": "c2", "type": "function", "function": {"name": "x", "arguments": "bad"}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "2"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "e"}]},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
]  # fmt: skip


def test_translate_helpers_map_like_the_published_ones() -> None:
    assert tr.openai_messages_to_anthropic(MESSAGES) == (
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}},
                {"type": "tool_use", "id": "c2", "name": "x", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "2"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "e"},
            ]},
            {"role": "user", "content": "ab"},
        ],
        "S1\n\nS2",
    )  # fmt: skip
    assert tr.openai_tools_to_anthropic(
        [
            {"type": "function", "function": {"name": "a", "description": "d",
                                              "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "b"}},
            {"name": "already", "input_schema": {}},
        ]
    ) == [
        {"name": "a", "description": "d", "input_schema": {"type": "object"}},
        {"name": "b", "input_schema": {"type": "object", "properties": {}}},
        {"name": "already", "input_schema": {}},
    ]  # fmt: skip
    assert tr.openai_tools_to_anthropic(None) == []
    choices = ["auto", "required", "none", "any", {"type": "function", "function": {"name": "f"}}]
    assert [tr.openai_tool_choice_to_anthropic(c) for c in choices] == [
        None, {"type": "any"}, {"type": "none"}, {"type": "any"}, {"type": "tool", "name": "f"},
    ]  # fmt: skip
    finishes = [(True, None), (False, None), (False, "max_tokens"), (False, "end_turn"),
                (False, "refusal"), (True, "length")]  # fmt: skip
    assert [tr.finish_reason_for(*f) for f in finishes] == [
        "tool_calls", "stop", "length", "stop", "content_filter", "tool_calls",
    ]  # fmt: skip
    assert [tr.content_text(c) for c in ("x", [{"type": "text", "text": "a"}], None, 5)] == [
        "x", "a", "", "",
    ]  # fmt: skip
    assert [tr.args_string(a) for a in ({"a": 1}, '{"a":1}', None, "bad", [1])] == [
        '{"a":1}', '{"a":1}', "{}", "bad", "{}",
    ]  # fmt: skip
    assert [tr.args_object(a) for a in ({"a": 1}, '{"a":1}', None, "bad", [1])] == [
        {"a": 1}, {"a": 1}, {}, {}, {},
    ]  # fmt: skip
    assert tr.has_system_message(MESSAGES) and not tr.has_system_message(MESSAGES[2:])
    calls = tr.tool_calls_of(MESSAGES[3])
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "add", '{"a":1}'), ("c2", "x", "bad"),
    ]  # fmt: skip


def test_builtin_shell_is_the_command_prefix_of_bash() -> None:
    shell = builtin_shell()
    assert shell[-1] == "-c" and shell[0] in ("/bin/bash", "/bin/sh")
    with pytest.raises(ValueError):
        builtin_shell("yes")  # type: ignore[arg-type]


def test_toolkit_takes_the_published_constructor_and_create() -> None:
    extra = add_tool()
    kit = Toolkit(None, None, [], [], [extra], {"name": "agent"}, {"name": "gw"})
    assert [t.name for t in kit.tools()] == ["add"]
    assert kit.config["a2a"] == {"name": "agent"} and kit.config["mcpServer"] == {"name": "gw"}
    assert inspect.iscoroutinefunction(Toolkit.create)


async def test_toolkit_create_is_create_toolkit() -> None:
    async with await Toolkit.create(extra_tools=[add_tool()], builtins=False) as kit:
        assert [t.name for t in kit.tools()] == ["add"]
