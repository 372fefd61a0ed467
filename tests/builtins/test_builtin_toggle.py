"""Names, order, schemas and the on/off configuration of the built-ins (core.md §6.3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus import create_toolkit
from toolnexus.builtin import builtins_enabled, create_builtin_tools, select_builtins

ALL = [
    "bash",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "webfetch",
    "question",
    "apply_patch",
    "todowrite",
]

# builtins.md §2, descriptions left out (they are free text): every property name, type and
# `required` list, `additionalProperties: false` on the top-level object only.
S, N, B = {"type": "string"}, {"type": "number"}, {"type": "boolean"}


def closed(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


EXPECTED_SCHEMAS = {
    "bash": closed({"command": S, "workdir": S, "timeout": N, "description": S}, ["command"]),
    "read": closed({"path": S, "offset": N, "limit": N}, ["path"]),
    "write": closed({"path": S, "content": S}, ["path", "content"]),
    "edit": closed(
        {"path": S, "oldString": S, "newString": S, "replaceAll": B},
        ["path", "oldString", "newString"],
    ),
    "grep": closed({"pattern": S, "path": S, "include": S, "limit": N}, ["pattern"]),
    "glob": closed({"pattern": S, "path": S, "limit": N}, ["pattern"]),
    "webfetch": closed(
        {
            "url": S,
            "format": {"type": "string", "enum": ["text", "markdown", "html"]},
            "timeout": N,
        },
        ["url"],
    ),
    "question": closed(
        {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": S,
                        "header": S,
                        "options": {"type": "array", "items": S},
                        "multiple": B,
                    },
                    "required": ["question"],
                },
            }
        },
        ["questions"],
    ),
    "apply_patch": closed({"patchText": S}, ["patchText"]),
    "todowrite": closed(
        {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": S, "text": S, "completed": B},
                    "required": ["id", "text", "completed"],
                },
            }
        },
        ["todos"],
    ),
}


def without_descriptions(schema: dict) -> tuple[dict, list[str]]:
    """The schema minus its `description` annotations, and those descriptions."""
    out: dict = {}
    texts: list[str] = []
    for key, value in schema.items():
        if key == "description":
            texts.append(value)
        elif key == "properties":
            out[key] = {}
            for name, sub in value.items():
                out[key][name], more = without_descriptions(sub)
                texts += more
        elif key == "items":
            out[key], more = without_descriptions(value)
            texts += more
        else:
            out[key] = value
    return out, texts


def names(tools: list) -> list[str]:
    return [t.name for t in tools]


def test_all_ten_in_fixed_order_with_builtin_source() -> None:
    tools = create_builtin_tools()
    assert names(tools) == ALL
    assert {t.source for t in tools} == {"builtin"}
    assert all(t.description for t in tools)


@pytest.mark.parametrize("name", ALL)
def test_schema_is_exactly_the_contracts(name: str) -> None:
    tool = {t.name: t for t in create_builtin_tools()}[name]
    schema, descriptions = without_descriptions(tool.input_schema)
    assert schema == EXPECTED_SCHEMAS[name]
    assert list(schema["properties"]) == list(EXPECTED_SCHEMAS[name]["properties"])  # order too
    # Every property says what it is (free text, but never missing or empty).
    assert descriptions and all(isinstance(d, str) and d for d in descriptions)
    json.dumps(tool.input_schema)  # plain JSON data


def test_schema_types() -> None:
    by = {t.name: t.input_schema["properties"] for t in create_builtin_tools()}
    assert by["bash"]["timeout"]["type"] == "number"
    assert by["read"]["offset"]["type"] == "number"
    assert by["edit"]["replaceAll"]["type"] == "boolean"
    assert by["webfetch"]["format"]["enum"] == ["text", "markdown", "html"]
    assert by["webfetch"]["timeout"]["type"] == "number"
    assert "seconds" in by["webfetch"]["timeout"]["description"]
    assert "milliseconds" in by["bash"]["timeout"]["description"]


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (None, ALL),
        (True, ALL),
        ({}, ALL),
        (False, []),
        ({"disabled": True}, []),
        ({"enabled": False}, []),
        ({"disabled": True, "enabled": True}, []),  # disabled wins
        ({"enabled": True}, ALL),
        ({"disabled": False}, ALL),
        (
            {"tools": {"bash": False, "write": False}},
            [n for n in ALL if n not in ("bash", "write")],
        ),
        ({"tools": {"bash": True}}, ALL),  # a pure drop-list: True keeps all ten
        ({"tools": {"nope": False, "grep": False}}, [n for n in ALL if n != "grep"]),
        ({"enabled": False, "tools": {"bash": True}}, []),  # whole-source off ignores the map
        ({"disabled": True, "tools": {"bash": True}}, []),
        ({"tools": {}}, ALL),
    ],
)
def test_select_builtins(cfg: object, expected: list[str]) -> None:
    assert names(select_builtins(cfg)) == expected
    assert builtins_enabled(cfg) is bool(expected)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ("yes", "builtins must be true, false or an object, not str"),
        ({"disabled": "yes"}, "builtins.disabled must be true or false"),
        ({"tools": ["bash"]}, "builtins.tools must be an object"),
        ({"tools": {"bash": "off"}}, "builtins.tools.bash must be true or false"),
        ({"max_output_bytes": -1}, "builtins.max_output_bytes must be a whole number"),
        ({"max_output_bytes": "10"}, "builtins.max_output_bytes must be a whole number"),
        ({"workspace": 3}, "builtins.workspace must be a directory path"),
    ],
)
def test_bad_config_is_a_precise_error(cfg: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        select_builtins(cfg)


def test_missing_workspace_is_a_precise_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match=r"builtins\.workspace is not a directory: .*nope"):
        create_builtin_tools({"workspace": str(missing)})


def test_disabled_source_does_not_look_at_the_rest(tmp_path: Path) -> None:
    assert select_builtins({"enabled": False, "workspace": str(tmp_path / "nope")}) == []


def test_tools_are_shared_per_settings(tmp_path: Path) -> None:
    # Stateless tools: building a toolkit again reuses them (and their compiled validators).
    assert create_builtin_tools()[0] is create_builtin_tools(None)[0]
    other = create_builtin_tools({"workspace": str(tmp_path)})
    assert other[0] is not create_builtin_tools()[0]


async def test_create_toolkit_builtins_option() -> None:
    async with await create_toolkit() as tk:
        assert names(tk.tools()) == ALL
        assert tk.skills_prompt() == ""
    async with await create_toolkit(builtins=False) as tk:
        assert tk.tools() == []
    async with await create_toolkit(builtins={"tools": {"bash": False, "question": False}}) as tk:
        assert "bash" not in names(tk.tools())
        assert "question" not in names(tk.tools())
        assert len(tk.tools()) == 8


async def test_create_toolkit_bad_builtins_raises() -> None:
    with pytest.raises(ValueError, match=r"builtins\.tools must be an object"):
        await create_toolkit(builtins={"tools": "bash"})


async def test_builtins_validate_under_the_toolkit(tmp_path: Path) -> None:
    async with await create_toolkit(builtins={"workspace": str(tmp_path)}) as tk:
        missing = await tk.execute("bash", {})
        assert missing.is_error and "command" in missing.output
        extra = await tk.execute("read", {"path": "x", "bogus": 1})
        assert extra.is_error and "bogus" in extra.output
        wrong = await tk.execute("edit", {"path": "x", "oldString": "a", "newString": 3})
        assert wrong.is_error and "newString" in wrong.output
        ok = await tk.execute("write", {"path": "f.txt", "content": "hi"})
        assert ok.output == "Wrote 2 bytes to f.txt"
        todo = await tk.execute("todowrite", {"todos": [{"id": "1", "text": "t", "completed": 1}]})
        assert todo.is_error and "completed" in todo.output
        q = await tk.execute("question", {"questions": [{"question": "Ok?", "options": ["y"]}]})
        assert q.metadata is not None and q.output == "Ok? (options: y)"


async def test_extra_tool_shadows_a_builtin() -> None:
    from toolnexus import Tool

    sandboxed = Tool("bash", "sandboxed", None, "custom", lambda args, ctx: "no shell here")
    async with await create_toolkit(extra_tools=[sandboxed]) as tk:
        assert names(tk.tools()) == [*ALL[1:], "bash"]
        assert (await tk.execute("bash", {})).output == "no shell here"


async def test_config_top_level_builtins_key(tmp_path: Path) -> None:
    cfg = {"mcpServers": {}, "builtins": {"tools": {"webfetch": False}}}
    async with await create_toolkit(mcp_config=cfg) as tk:
        assert "webfetch" not in names(tk.tools())
        assert len(tk.tools()) == 9
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}, "builtins": {"enabled": False}}))
    async with await create_toolkit(mcp_config=str(path)) as tk:
        assert tk.tools() == []
    # The option wins over the config key.
    async with await create_toolkit(mcp_config=str(path), builtins=True) as tk:
        assert names(tk.tools()) == ALL


async def test_config_workspace_key(tmp_path: Path) -> None:
    cfg = {"mcpServers": {}, "builtins": {"workspace": str(tmp_path)}}
    async with await create_toolkit(mcp_config=cfg) as tk:
        await tk.execute("write", {"path": "from-config.txt", "content": "x"})
    assert (tmp_path / "from-config.txt").read_text() == "x"


def test_import_is_light() -> None:
    code = (
        "import sys, toolnexus.builtin as b; b.create_builtin_tools(); b.select_builtins(None); "
        "heavy = [m for m in ('httpx2', 'markdownify', 'bs4', 'pydantic', 'jsonschema', 'mcp', "
        "'starlette', 'uvicorn', 'html.parser') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_older_module_name_hands_out_the_same_objects() -> None:
    import toolnexus.builtin
    import toolnexus.builtins

    assert toolnexus.builtins.__all__
    for name in toolnexus.builtins.__all__:
        assert getattr(toolnexus.builtins, name) is getattr(toolnexus.builtin, name), name
