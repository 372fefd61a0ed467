"""Skills over MCP (`io.modelcontextprotocol/skills`): the gateway serves the toolkit's skills
(a `SKILL.md` folder, a data skill) to the official SDK's client as `skills/list`, `skills/get`
and `resources/read`; a toolkit whose upstream is that gateway gets them as `<server>/<skill>`
in its `skill` tool and skills prompt, read when loaded, checked against their digests; and a
second gateway serves the upstream skills on under `skill://<server>/<skill>/`."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio

from mcp import Client, MCPError
from toolnexus import create_toolkit
from toolnexus.mcp_source._skills import (
    GetSkillParams,
    GetSkillRequest,
    GetSkillResult,
    ListSkillsRequest,
    ListSkillsResult,
)
from toolnexus.skill import SkillDef
from toolnexus.toolkit import Toolkit

SKILL_MD = (
    "---\nname: pdf-tools\ndescription: Work with PDF files.\nlicense: MIT\n---\n"
    "# PDF tools\n\nRun scripts/extract.py.\n"
)
SCRIPT = 'print("extract")\n'


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def skills_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("skills")
    (root / "pdf-tools" / "scripts").mkdir(parents=True)
    (root / "pdf-tools" / "SKILL.md").write_text(SKILL_MD)
    (root / "pdf-tools" / "scripts" / "extract.py").write_text(SCRIPT)
    (root / "Not_Servable").mkdir()  # a name the extension cannot carry: kept local only
    (root / "Not_Servable" / "SKILL.md").write_text("---\nname: Not_Servable\n---\nx\n")
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(skills_dir: Path) -> AsyncIterator[str]:
    data = SkillDef("notes", "Take notes in *Markdown*.", description="Write notes.")
    kit = await create_toolkit(skills_dir=skills_dir, skills=[data], builtins=False)
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()
    await kit.close()


async def _list(client: Client) -> dict[str, Any]:
    result = await client.session.send_request(ListSkillsRequest(), ListSkillsResult)
    return {s.uri: s for s in result.skills}


async def test_gateway_serves_its_skills(gateway: str, skills_dir: Path) -> None:
    async with Client(gateway) as client:
        assert client.server_capabilities.extensions == {"io.modelcontextprotocol/skills": {}}
        assert client.server_capabilities.resources is not None
        listed = await _list(client)
        assert sorted(listed) == ["skill://notes/SKILL.md", "skill://pdf-tools/SKILL.md"]
        pdf = listed["skill://pdf-tools/SKILL.md"]
        assert pdf.frontmatter == {
            "name": "pdf-tools",
            "description": "Work with PDF files.",
            "license": "MIT",
        }
        assert [(f.uri, f.digest, f.size) for f in pdf.resources] == [
            ("skill://pdf-tools/SKILL.md", _digest(SKILL_MD.encode()), len(SKILL_MD)),
            ("skill://pdf-tools/scripts/extract.py", _digest(SCRIPT.encode()), len(SCRIPT)),
        ]
        notes = listed["skill://notes/SKILL.md"]
        assert notes.frontmatter == {"name": "notes", "description": "Write notes."}
        [file] = notes.resources
        read = (await client.read_resource(file.uri)).contents[0]
        assert isinstance(read, types.TextResourceContents)
        assert _digest(read.text.encode()) == file.digest
        assert read.text.endswith("---\nTake notes in *Markdown*.")

        script = (await client.read_resource("skill://pdf-tools/scripts/extract.py")).contents
        assert [c.text for c in script if isinstance(c, types.TextResourceContents)] == [SCRIPT]
        got = await client.session.send_request(
            GetSkillRequest(params=GetSkillParams(uri="skill://pdf-tools/SKILL.md")),
            GetSkillResult,
        )
        assert got.skill == pdf
        for unknown in ("skill://nope/SKILL.md", "skill://pdf-tools/scripts/extract.py"):
            with pytest.raises(MCPError) as raised:
                await client.session.send_request(
                    GetSkillRequest(params=GetSkillParams(uri=unknown)), GetSkillResult
                )
            assert raised.value.error.code == types.INVALID_PARAMS
        for outside in ("skill://pdf-tools/../notes/SKILL.md", "skill://pdf-tools/missing.md"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(outside)
            assert raised.value.error.code == types.INVALID_PARAMS


async def test_skills_off_in_the_profile(skills_dir: Path) -> None:
    async with await create_toolkit(skills_dir=skills_dir, builtins=False) as kit:
        handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw", "skills": False})
        try:
            async with Client(handle.url + "/mcp") as client:
                assert not client.server_capabilities.extensions
        finally:
            await handle.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def downstream(gateway: str) -> AsyncIterator[Toolkit]:
    local = SkillDef("gw/notes", "The local notes skill.", description="Local notes.")
    kit = await create_toolkit(mcp_config={"gw": {"url": gateway}}, skills=[local], builtins=False)
    yield kit
    await kit.close()


async def test_server_skills_join_the_toolkit(downstream: Toolkit) -> None:
    source = downstream.skill_source
    assert source is not None
    # the local skill keeps its name; the server's same-named one is skipped
    assert list(source.skills) == ["gw/notes", "gw/pdf-tools"]
    assert [(s.location, s.reason) for s in source.skipped] == [
        ("skill://notes/SKILL.md", "duplicate-name")
    ]
    pdf = source.skills["gw/pdf-tools"]
    assert (pdf.origin, pdf.location, pdf.base) == (
        "mcp",
        "skill://pdf-tools/SKILL.md",
        "skill://pdf-tools/",
    )
    assert "- **gw/pdf-tools**: Work with PDF files." in downstream.skills_prompt()
    loaded = await downstream.execute("skill", {"name": "gw/pdf-tools"})
    assert not loaded.is_error
    assert loaded.output == "\n".join(
        [
            '<skill_content name="gw/pdf-tools">',
            "# Skill: gw/pdf-tools",
            "",
            "# PDF tools\n\nRun scripts/extract.py.",
            "",
            "Base directory for this skill: skill://pdf-tools/",
            "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
            "base directory.",
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            "<file>SKILL.md</file>",
            "<file>scripts/extract.py</file>",
            "</skill_files>",
            "</skill_content>",
        ]
    )
    local = await downstream.execute("skill", {"name": "gw/notes"})
    assert "The local notes skill." in local.output


async def test_upstream_skills_are_served_on(downstream: Toolkit) -> None:
    handle = await downstream.serve("127.0.0.1:0", mcp={"name": "gw2"})
    try:
        async with Client(handle.url + "/mcp") as client:
            listed = await _list(client)
            # the local `gw/notes` is a data skill served at its own name's path
            assert sorted(listed) == ["skill://gw/notes/SKILL.md", "skill://gw/pdf-tools/SKILL.md"]
            pdf = listed["skill://gw/pdf-tools/SKILL.md"]
            assert pdf.frontmatter["name"] == "pdf-tools"
            assert [(f.uri, f.digest) for f in pdf.resources] == [
                ("skill://gw/pdf-tools/SKILL.md", _digest(SKILL_MD.encode())),
                ("skill://gw/pdf-tools/scripts/extract.py", _digest(SCRIPT.encode())),
            ]
            read = (await client.read_resource("skill://gw/pdf-tools/SKILL.md")).contents[0]
            assert isinstance(read, types.TextResourceContents)
            assert read.text == SKILL_MD
    finally:
        await handle.stop()


async def test_a_large_skill_set_is_listed_in_pages() -> None:
    many = [
        SkillDef(f"s{i:03d}", f"Skill {i}.", description=f"Skill number {i}.") for i in range(130)
    ]
    async with await create_toolkit(skills=many[::-1], builtins=False) as up:
        handle = await up.serve("127.0.0.1:0", mcp={"name": "big"})
        try:
            async with Client(handle.url + "/mcp") as client:
                first = await client.session.send_request(ListSkillsRequest(), ListSkillsResult)
                assert len(first.skills) == 100
                assert first.next_cursor is not None
                params = types.PaginatedRequestParams(cursor=first.next_cursor)
                second = await client.session.send_request(
                    ListSkillsRequest(params=params), ListSkillsResult
                )
                assert second.next_cursor is None
                # stable order (by URI), every skill once
                uris = [s.uri for s in [*first.skills, *second.skills]]
                assert uris == [f"skill://s{i:03d}/SKILL.md" for i in range(130)]
                for bad in ("nonsense", "c2tpbGw6Ly9zMDAx"):  # garbage; base64 of a bare URI
                    with pytest.raises(MCPError) as raised:
                        await client.session.send_request(
                            ListSkillsRequest(params=types.PaginatedRequestParams(cursor=bad)),
                            ListSkillsResult,
                        )
                    assert raised.value.error.code == types.INVALID_PARAMS
                    assert "Invalid cursor for skills/list" in raised.value.error.message
            # a toolkit over the gateway follows the cursor: every skill joins it
            async with await create_toolkit(
                mcp_config={"big": {"url": handle.url + "/mcp"}}, builtins=False
            ) as kit:
                assert kit.skill_source is not None
                assert len(kit.skill_source.skills) == 130
                assert "big/s129" in kit.skill_source.skills
        finally:
            await handle.stop()
