"""Personas: the folder's bootstrap files, caps, the memory tool, snapshots and heartbeats."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from agents_driver import VirtualClock, load, settle

from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    HEARTBEAT_OK,
    agent_from_dir,
    compose_soul,
    memory_tool,
    start_agent,
)

FIXTURE = load("persona.json")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "ava"
    folder.mkdir()
    for name, text in FIXTURE["files"].items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def system_of(request: dict[str, Any]) -> str:
    return next((m["content"] for m in request["messages"] if m["role"] == "system"), "")


def echo_sections(request: dict[str, Any]) -> dict[str, Any]:
    headers = re.findall(r"^## (\S+)$", system_of(request), re.MULTILINE)
    return {"content": "sections:[" + ",".join(headers) + "]"}


async def test_the_folder_composes_the_soul_in_bootstrap_order(home: Path) -> None:
    soul, found = compose_soul(home)
    assert found == FIXTURE["expect"]["found"]
    assert soul.startswith("## SOUL.md\n\nYou are Ava, a calm support assistant.\n\n## USER.md")
    ava = agent_from_dir(home)
    assert ava.name == "ava" and ava.home == str(home)
    assert ava.does == f"persona agent from {home}"
    result = await ava.run("which sections?", in_process=echo_sections)
    assert result.text == FIXTURE["expect"]["sectionsAnswer"]
    assert BOOTSTRAP_ORDER[0] == "AGENTS.md"


def test_a_huge_file_is_cut_with_a_notice_and_left_intact(home: Path) -> None:
    big = "é" * (1024 * 1024 + 512)  # 2 bytes each: over the 2 MiB cap, cut mid-character
    (home / "TOOLS.md").write_text(big, encoding="utf-8")
    soul, _ = compose_soul(home)
    section = soul.split("## TOOLS.md\n\n", 1)[1].split("\n\n## ", 1)[0]
    assert section.endswith("\n[truncated: exceeds 2 MB bootstrap cap]")
    body = section.removesuffix("\n[truncated: exceeds 2 MB bootstrap cap]")
    assert len(body.encode("utf-8")) <= 2097152 and "\ufffd" not in body
    assert (home / "TOOLS.md").read_text(encoding="utf-8") == big
    with pytest.raises(FileNotFoundError):
        compose_soul(home / "missing")


async def test_memory_actions_land_on_disk(home: Path) -> None:
    tool = memory_tool(home)
    assert tool.name == "memory" and tool.source == "native"
    added = await tool.execute({"action": "add", "text": "Likes tea"})
    assert added.output == "ok (add → MEMORY.md); loads next session"
    assert (home / "MEMORY.md").read_text() == "- Onboarded 2026-07.\n- Likes tea\n"
    await tool.execute({"action": "replace", "text": "tea", "with": "coffee"})
    assert "Likes coffee" in (home / "MEMORY.md").read_text()
    await tool.execute({"action": "remove", "text": "- Likes coffee\n"})
    assert (home / "MEMORY.md").read_text() == "- Onboarded 2026-07.\n"
    user = await tool.execute({"action": "add", "target": "user", "text": "Prefers email"})
    assert user.output == "ok (add → USER.md); loads next session"
    assert (home / "USER.md").read_text().endswith("- Prefers email\n")
    missing = await tool.execute({"action": "remove", "text": "nope"})
    assert (missing.is_error, missing.output) == (True, "not found: nope")
    empty = await tool.execute({"action": "add", "text": ""})
    assert (empty.is_error, empty.output) == (True, "text is required")
    bad = await tool.execute({"action": "shout", "text": "x"})
    assert bad.is_error
    target = await memory_tool(home)._execute(
        {"action": "add", "target": "team", "text": "x"}, None
    )
    assert (target.is_error, target.output) == (True, "unknown target: team")
    action = await memory_tool(home)._execute({"action": "shout", "text": "x"}, None)
    assert action.output == "unknown action: shout"
    assert [t.name for t in agent_from_dir(home, memory=False).uses["tools"]] == []
    with pytest.raises(TypeError):
        agent_from_dir(home, soul="no")


async def test_a_second_session_sees_what_the_first_remembered(home: Path) -> None:
    def model(request: dict[str, Any]) -> dict[str, Any]:
        if "dark roast" in system_of(request):
            return {"content": "I recall: dark roast"}
        if any(m["role"] == "tool" for m in request["messages"]):
            return {"content": "noted"}
        args = {"action": "add", "target": "user", "text": "Prefers dark roast"}
        return {"tool_calls": [{"name": "memory", "arguments": args}]}

    ava = agent_from_dir(home)
    first = await ava.run("remember my coffee", in_process=model)
    assert first.text == "noted"
    assert "Prefers dark roast" in (home / "USER.md").read_text()
    second = await ava.run("what do I drink?", in_process=model)
    assert second.text == "I recall: dark roast"


def heartbeat_model(held: asyncio.Event | None = None) -> Any:
    spec = FIXTURE["heartbeat"]
    inputs: list[str] = []

    async def model(request: dict[str, Any]) -> dict[str, Any]:
        last = str(request["messages"][-1]["content"])
        inputs.append(last)
        if held is not None and len(inputs) == 1:
            await held.wait()
        if spec["when"]["systemContains"] in system_of(request) and last.startswith("Heartbeat"):
            return {"content": spec["reminder"]}
        return {"content": HEARTBEAT_OK}

    model.inputs = inputs  # type: ignore[attr-defined]
    return model


async def test_heartbeat_reports_follow_heartbeat_md(home: Path) -> None:
    clock = VirtualClock()
    reports: list[str] = []
    model = heartbeat_model()
    started = start_agent(
        agent_from_dir(home), every_ms=20, on_report=reports.append, in_process=model, clock=clock
    )
    for _ in range(FIXTURE["heartbeat"]["intervals"]):
        await clock.advance(0.02)
        await _idle(started.handle)
    await started.stop()
    assert reports and all("3pm sync" in r for r in reports)
    assert started.handle.state == "closed" and started.rt.root.state == "closed"


async def test_without_heartbeat_md_the_beat_stays_silent(tmp_path: Path) -> None:
    folder = tmp_path / "quiet"
    folder.mkdir()
    (folder / "SOUL.md").write_text("You are quiet.")
    clock = VirtualClock()
    reports: list[str] = []
    model = heartbeat_model()
    started = start_agent(
        agent_from_dir(folder), every_ms=20, on_report=reports.append, in_process=model, clock=clock
    )
    for _ in range(3):
        await clock.advance(0.02)
        await _idle(started.handle)
    await started.stop()
    assert len(model.inputs) >= 2 and reports == []
    assert started.handle.state == "closed"


async def test_ticks_pile_up_while_a_turn_is_held(home: Path) -> None:
    clock = VirtualClock()
    held = asyncio.Event()
    model = heartbeat_model(held)
    started = start_agent(agent_from_dir(home), every_ms=20, in_process=model, clock=clock)
    for _ in range(5):
        await clock.advance(0.02)
    assert len(started.handle.inbox) >= 2
    held.set()
    await _idle(started.handle)
    await clock.advance(0.02)
    await _idle(started.handle)
    later = [i for i in model.inputs[1:] if "coalesced" in i]
    assert later
    count = int(re.search(r"tick \(x(\d+) coalesced\)", later[0]).group(1))  # type: ignore[union-attr]
    assert count >= 2
    await started.stop()


async def _idle(handle: Any) -> None:
    for _ in range(500):
        await settle()
        if handle.at_rest:
            return
    raise AssertionError(f"{handle} never went idle")


def test_invalid_utf8_is_replaced_and_a_cut_drops_only_the_broken_character(home: Path) -> None:
    (home / "IDENTITY.md").write_bytes(b"name: Ava \xff\n" + "é".encode() * (1024 * 1024))
    soul, found = compose_soul(home)
    assert "IDENTITY.md" in found
    section = soul.split("## IDENTITY.md\n\n", 1)[1].split("\n\n## ", 1)[0]
    assert section.startswith("name: Ava \ufffd")
    body = section.removesuffix("\n[truncated: exceeds 2 MB bootstrap cap]")
    assert body != section and body.count("\ufffd") == 1
