"""Toolkit assembly, naming, execute and life cycle, with host tools (extra_tools/register)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path

import pytest

from toolnexus import (
    Context,
    Tool,
    ToolResult,
    create_toolkit,
    create_toolkit_sync,
    define_tool,
)


def echo_tool(name: str, reply: str | None = None, *, original_name: str | None = None) -> Tool:
    text = reply if reply is not None else name
    return Tool(
        name, f"says {text}", None, "custom", lambda args, ctx: text, original_name=original_name
    )


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "toolnexus"]


def short_hash(original: str) -> str:
    return hashlib.sha256(original.encode()).hexdigest()[:8]


async def test_extra_tools_keep_their_order() -> None:
    tools = [echo_tool("c"), echo_tool("a"), echo_tool("b")]
    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        assert [t.name for t in tk.tools()] == ["c", "a", "b"]
        assert tk.get("a") is tools[1]
        assert tk.get("zzz") is None
        assert tk.skills_prompt() == ""
        assert tk.mcp_status() == {}


async def test_duplicate_names_keep_the_first_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    first, second = echo_tool("dup", "first"), echo_tool("dup", "second")
    async with await create_toolkit(extra_tools=[first, second], builtins=False) as tk:
        assert [t.name for t in tk.tools()] == ["dup"]
        assert (await tk.execute("dup")).output == "first"
        tk.register(echo_tool("later"))  # the tool set is rebuilt: nothing new to say
    assert warnings(caplog) == ['[toolnexus] duplicate tool name "dup" — keeping first']


async def test_sanitize_collisions_are_renamed_not_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    # two different original names that sanitise to the same exposed name
    a = echo_tool("srv_get_user", "a", original_name="srv.get_user")
    b = echo_tool("srv_get_user", "b", original_name="srv_get.user")
    async with await create_toolkit(extra_tools=[a, b], builtins=False) as tk:
        renamed = f"srv_get_user_{short_hash('srv_get.user')}"
        assert [t.name for t in tk.tools()] == ["srv_get_user", renamed]
        assert (await tk.execute(renamed)).output == "b"
        assert tk.get(renamed).original_name == "srv_get.user"  # type: ignore[union-attr]
    [message] = [m for m in warnings(caplog) if "collides" in m]
    assert "srv.get_user" in message and "srv_get.user" in message and renamed in message


async def test_names_longer_than_64_characters_are_capped_deterministically(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    long_a = "x" * 70
    long_b = "x" * 70 + "_other"
    tools = [echo_tool(long_a, "a"), echo_tool(long_b, "b")]
    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        names = [t.name for t in tk.tools()]
    assert names == [f"{'x' * 55}_{short_hash(long_a)}", f"{'x' * 55}_{short_hash(long_b)}"]
    assert all(len(n) == 64 for n in names)
    assert any(long_a in m and names[0] in m for m in warnings(caplog))
    # same input, same names: deterministic across builds
    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        assert [t.name for t in tk.tools()] == names


async def test_disable_tools_drops_by_exposed_name() -> None:
    tools = [echo_tool("keep"), echo_tool("drop")]
    async with await create_toolkit(
        extra_tools=tools, builtins=False, disable_tools=["drop", "not-there"]
    ) as tk:
        assert [t.name for t in tk.tools()] == ["keep"]
        assert (await tk.execute("drop")).output.startswith("Unknown tool: drop")


async def test_register_chains_is_first_wins_and_ignores_disable_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with await create_toolkit(
        extra_tools=[echo_tool("a")], builtins=False, disable_tools=["late"]
    ) as tk:
        declared = tk.to_openai()
        assert tk.register(echo_tool("late")).register(echo_tool("a", "again")) is tk
        assert [t.name for t in tk.tools()] == ["a", "late"]
        assert (await tk.execute("a")).output == "a"
        assert (await tk.execute("late")).output == "late"
        assert tk.to_openai() is not declared  # declarations follow the new tool set
        assert [d["function"]["name"] for d in tk.to_openai()] == ["a", "late"]
        with pytest.raises(TypeError, match="Tool"):
            tk.register("not a tool")  # type: ignore[arg-type]
    assert '[toolnexus] duplicate tool name "a" — keeping first' in warnings(caplog)


async def test_declarations_are_cached_until_the_tool_set_changes() -> None:
    async with await create_toolkit(extra_tools=[echo_tool("a")], builtins=False) as tk:
        assert tk.to_openai() is tk.to_openai()
        assert tk.to_anthropic() == [
            {"name": "a", "description": "says a", "input_schema": tk.get("a").input_schema}  # type: ignore[union-attr]
        ]
        assert tk.to_gemini()[0]["functionDeclarations"][0]["name"] == "a"


async def test_a_host_tool_shadows_a_builtin_of_the_same_name() -> None:
    sandboxed = echo_tool("bash", "sandboxed")
    async with await create_toolkit(extra_tools=[sandboxed]) as tk:
        assert [t.name for t in tk.tools()].count("bash") == 1
        assert tk.get("bash") is sandboxed
        assert (await tk.execute("bash", {})).output == "sandboxed"


async def test_unknown_tool_lists_the_available_ones() -> None:
    async with await create_toolkit(
        extra_tools=[echo_tool("a"), echo_tool("b")], builtins=False
    ) as tk:
        result = await tk.execute("nope", {"x": 1})
    assert result.is_error is True
    assert result.output.startswith("Unknown tool: nope")
    assert "a" in result.output and "b" in result.output


async def test_invalid_arguments_name_every_problem_and_do_not_run_the_tool() -> None:
    calls: list[object] = []

    def book(args: dict[str, object], ctx: Context) -> str:
        calls.append(args)
        return "booked"

    tool = Tool(
        "book",
        "Book a table",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "guests": {"type": "integer", "minimum": 1},
                "when": {"type": "string"},
            },
            "required": ["name", "when"],
        },
        "custom",
        book,
    )
    async with await create_toolkit(extra_tools=[tool], builtins=False) as tk:
        result = await tk.execute("book", {"name": 7, "guests": 0})
        assert result.is_error is True
        assert result.output.startswith("Invalid arguments for tool book:")
        assert "name" in result.output and "7 is not of type 'string'" in result.output
        assert "guests" in result.output and "minimum of 1" in result.output
        assert "'when' is a required property" in result.output
        assert calls == []
        not_an_object = await tk.execute("book", ["x"])  # type: ignore[arg-type]
        assert not_an_object.is_error and "expected a JSON object" in not_an_object.output
        ok = await tk.execute("book", {"name": "Ann", "when": "8pm"})
        assert (ok.output, ok.is_error) == ("booked", False)


async def test_optional_argument_sent_as_null_means_not_given() -> None:
    # what a model does under OpenAI strict mode, where optional properties are nullable
    tool = Tool(
        "greet",
        "",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "title": {"type": "string"}},
            "required": ["name"],
        },
        "custom",
        lambda args, ctx: f"{args.get('title', 'dear')} {args['name']}",
    )
    async with await create_toolkit(extra_tools=[tool], builtins=False) as tk:
        assert (await tk.execute("greet", {"name": "Ann", "title": None})).output == "dear Ann"
        bad = await tk.execute("greet", {"name": None})  # required: null stays an error
        assert bad.is_error and "None is not of type 'string'" in bad.output


async def test_a_raising_tool_is_an_error_result() -> None:
    async def explode(args: dict[str, object], ctx: Context) -> str:
        raise RuntimeError("disk on fire")

    @define_tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    tools = [Tool("explode", "", None, "custom", explode), divide]
    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        assert await tk.execute("explode") == ToolResult("disk on fire", True)
        result = await tk.execute("divide", {"a": 1, "b": 0})
        assert result.is_error and "division by zero" in result.output


async def test_native_tools_keep_pydantic_lax_coercion_in_a_toolkit() -> None:
    @define_tool
    def add(a: int, b: int) -> int:
        return a + b

    async with await create_toolkit(extra_tools=[add], builtins=False) as tk:
        assert (await tk.execute("add", {"a": "2", "b": 3})).output == "5"
        bad = await tk.execute("add", {"a": 1.5, "b": 1})
        assert bad.is_error and bad.output.splitlines()[1].startswith("- a:")


def test_execute_sync_from_plain_sync_code() -> None:
    tk = create_toolkit_sync(extra_tools=[echo_tool("hello", "hi")], builtins=False)
    try:
        assert tk.execute_sync("hello").output == "hi"
        assert tk.execute_sync("missing").output.startswith("Unknown tool: missing")
    finally:
        tk.close_sync()


def test_execute_sync_after_the_loop_that_built_the_toolkit_has_ended() -> None:
    tk = asyncio.run(create_toolkit(extra_tools=[echo_tool("hello", "hi")], builtins=False))
    try:
        assert tk.execute_sync("hello").output == "hi"  # on a loop the toolkit now owns
        assert tk.execute_sync("hello").output == "hi"
    finally:
        tk.close_sync()


async def test_execute_sync_from_a_thread_while_the_loop_runs() -> None:
    @define_tool
    async def twice(n: int) -> int:
        return 2 * n

    async with await create_toolkit(extra_tools=[twice], builtins=False) as tk:
        result = await asyncio.to_thread(tk.execute_sync, "twice", {"n": 21})
        assert result.output == "42"
        with pytest.raises(RuntimeError, match=r"await toolkit\.execute"):
            tk.execute_sync("twice", {"n": 1})


async def test_async_with_closes_and_close_is_idempotent() -> None:
    tk = await create_toolkit(extra_tools=[echo_tool("a")], builtins=False)
    async with tk as entered:
        assert entered is tk
    await tk.close()  # again: no error


async def test_disable_tools_also_matches_a_name_the_toolkit_made() -> None:
    long_name = "y" * 70
    capped = f"{'y' * 55}_{short_hash(long_name)}"
    tools = [echo_tool(long_name), echo_tool("keep")]
    async with await create_toolkit(
        extra_tools=tools, builtins=False, disable_tools=[capped]
    ) as tk:
        assert [t.name for t in tk.tools()] == ["keep"]


async def test_register_renames_a_different_tool_that_lands_on_a_taken_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with await create_toolkit(
        extra_tools=[echo_tool("srv_x", "first")], builtins=False
    ) as tk:
        tk.register(echo_tool("srv_x", "second", original_name="srv.x"))
        renamed = f"srv_x_{short_hash('srv.x')}"
        assert [t.name for t in tk.tools()] == ["srv_x", renamed]
        assert (await tk.execute(renamed)).output == "second"
    assert warnings(caplog) == [
        f'[toolnexus] tool "srv.x" collides with "srv_x" as "srv_x" — exposed as "{renamed}"'
    ]


async def test_a_schema_the_validator_cannot_use_leaves_the_tool_callable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # what a buggy MCP server may list: a dangling $ref, a `required` that is not a list
    dangling = Tool(
        "dangling",
        "",
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
        "mcp",
        lambda args, ctx: f"got {args}",
    )
    malformed = Tool(
        "malformed",
        "",
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5},
        "mcp",
        lambda args, ctx: f"got {args}",
    )
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with await create_toolkit(extra_tools=[dangling, malformed], builtins=False) as tk:
        for _ in range(2):
            assert (await tk.execute("dangling", {"a": 1})).output == "got {'a': 1}"
            assert (await tk.execute("malformed", {"a": 1})).output == "got {'a': 1}"
        [strict_dangling, strict_malformed] = tk.to_openai(strict=True)
        assert "strict" not in strict_dangling["function"]
        assert "strict" not in strict_malformed["function"]
        assert len(tk.to_gemini()[0]["functionDeclarations"]) == 2
    logged = warnings(caplog)
    [unusable, invalid] = [m for m in logged if m.endswith("— arguments are not checked")]
    assert unusable.startswith(
        '[toolnexus] tool "dangling": its input_schema cannot be applied (PointerToNowhere: '
    )
    assert invalid == (
        '[toolnexus] tool "malformed": its input_schema is not valid JSON Schema '
        "(5 is not of type 'array') — arguments are not checked"
    )
    assert any("$ref #/$defs/Missing does not resolve" in m for m in logged)
    assert any("(root).required is not a list" in m for m in logged)


async def test_a_config_file_that_cannot_be_used_raises_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=f"cannot read config file {missing}: "):
        await create_toolkit(mcp_config=str(missing))
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {,}}')
    with pytest.raises(
        ValueError, match=f"config file {broken} is not valid JSON: .* at line 1 column 17"
    ):
        await create_toolkit(mcp_config=broken)
    listed = tmp_path / "list.json"
    listed.write_text("[]")
    with pytest.raises(ValueError, match=f"config file {listed} must hold a JSON object, not list"):
        await create_toolkit(mcp_config=listed)


async def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('\ufeff{"mcpServers": {}, "builtins": false}', encoding="utf-8")
    async with await create_toolkit(mcp_config=path) as tk:
        assert (tk.tools(), tk.mcp_status(), tk.config["builtins"]) == ([], {}, False)


async def test_host_tools_that_are_not_tools_are_refused_with_a_hint() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(TypeError, match=r"extra_tools takes Tool objects, not function \(make"):
        await create_toolkit(extra_tools=[plain], builtins=False)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"extra_tools takes a list of tools"):
        await create_toolkit(extra_tools=echo_tool("a"), builtins=False)  # type: ignore[arg-type]
    async with await create_toolkit(builtins=False) as tk:
        with pytest.raises(TypeError, match=r"register\(\) takes Tool objects, not function"):
            tk.register(plain)  # type: ignore[arg-type]


async def test_a_single_name_for_disable_tools_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"disable_tools takes a list of names: disable_tools=\['bash'\]"
    ):
        await create_toolkit(disable_tools="bash")
    with pytest.raises(TypeError, match=r"disable_skills takes a list of names"):
        await create_toolkit(disable_skills="hello-world")


def test_toolkit_create_takes_every_option_create_toolkit_takes() -> None:
    import inspect

    from toolnexus import Toolkit, create_toolkit

    assert list(inspect.signature(Toolkit.create).parameters) == list(
        inspect.signature(create_toolkit).parameters
    )
