"""`toolnexus run` against the local fake LLM server: streaming, tool calls, REPL, errors.

The REPL runs as the real command in a subprocess (it reads stdin, takes Ctrl-C, starts MCP
servers that must be gone afterwards); `--once` and the error paths run in-process.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import pytest

from support.cli_runner import (
    EXAMPLE_SKILLS,
    HANG_GUARD,
    QUICK_TOOLS,
    REPO,
    basic_server,
    broken_server,
    clean_env,
    one_line_error,
    processes_tagged,
    tagged_env,
    toolnexus,
    write_config,
)
from support.fake_llm import FakeLLM, call, error, text, tools
from toolnexus.client._errors import NO_API_KEY_MESSAGE


def _model_flags(llm: FakeLLM, style: str) -> list[str]:
    base = llm.url + "/v1" if style == "openai" else llm.url
    return ["--base-url", base, "--style", style, "--model", "test-model"]


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_once_streams_the_answer_and_shows_each_tool_call(
    cli, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM, quick_config: Path, style: str
) -> None:
    monkeypatch.setenv(f"{style.upper()}_API_KEY", "sk-test")
    fake_llm.push(
        tools(call("quick_echo", {"text": "sum=5"})),
        text("The sum is 5, as the MCP server says.", chunk_size=4),
    )
    done = cli(
        "run", *_model_flags(fake_llm, style), "--config", str(quick_config),
        "--skills", str(EXAMPLE_SKILLS), "--no-builtins", "--once", "What is 2 + 3?",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The answer alone on stdout; tool activity on stderr.
    assert done.stdout == "The sum is 5, as the MCP server says.\n"
    assert '→ quick_echo [mcp] {"text":"sum=5"}' in done.stderr
    assert "← quick_echo: sum=5" in done.stderr
    sources = next(line for line in done.stderr.splitlines() if line.startswith("tools: "))
    assert sources.startswith("tools: mcp ") and "skill 1" in sources
    assert "builtin" not in sources
    first, second = fake_llm.requests
    assert first.body["model"] == "test-model"
    assert first.body["stream"] is True
    declared = [
        t["function"]["name"] if style == "openai" else t["name"] for t in first.body["tools"]
    ]
    assert declared == [*(f"quick_{name}" for name in QUICK_TOOLS), "skill"]
    assert "hello-world" in str(
        first.body["messages"] if style == "openai" else first.body["system"]
    )
    assert "sum=5" in str(second.body["messages"])
    assert "sk-test" in (
        first.headers.get("authorization", "") + first.headers.get("x-api-key", "")
    )


def test_a_repl_session(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """One conversation: memory across prompts, an MCP tool, the `question` built-in and an MCP
    form elicitation answered at the prompt; `exit` closes the MCP server."""
    config = write_config(tmp_path, {"basic": basic_server()})
    env, tag = tagged_env()
    questions = [{"question": "Pick a color?", "options": ["red", "green"]}, {"question": "Why?"}]
    fake_llm.push(
        text("Hi Ada."),
        tools(call("basic_echo", {"text": "bye"})),
        text("BYE!"),
        tools(call("question", {"questions": questions})),
        text("Red it is."),
        tools(call("basic_ask", {})),
        text("Nice to meet you."),
    )
    typed = [
        "I am Ada.",
        "",  # an empty line is no prompt
        "Shout bye.",
        "Choose for me.", "red", "because",
        "Ask me.", "", "Ada", "forty", "36",  # name is required; age must be a whole number
        "exit",
    ]  # fmt: skip
    proc = toolnexus(
        "run", *_model_flags(fake_llm, "openai"), "--api-key", "k", "--config", str(config),
        input="\n".join(typed) + "\n", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Hi Ada." in proc.stdout and "BYE!" in proc.stdout
    # The second prompt is sent with the first exchange: one conversation.
    messages = fake_llm.requests[1].body["messages"]
    assert [m["role"] for m in messages][-3:] == ["user", "assistant", "user"]
    assert messages[-3]["content"] == "I am Ada." and messages[-2]["content"] == "Hi Ada."
    assert '→ basic_echo [mcp] {"text":"bye"}' in proc.stderr
    assert "← basic_echo: bye" in proc.stderr
    # The question built-in, asked at the prompt.
    assert "Pick a color? (red, green) > Why? > Red it is." in proc.stdout
    assert fake_llm.requests[4].body["messages"][-1]["content"] == (
        '{"answers":[{"question":"Pick a color?","answer":"red"},'
        '{"question":"Why?","answer":"because"}]}'
    )
    # The MCP server's form: a required field left empty and a bad integer are asked again.
    assert "name is required" in proc.stderr and "a whole number, please" in proc.stderr
    assert "← basic_ask: accept:[('age', 36), ('name', 'Ada')]" in proc.stderr
    assert "Nice to meet you." in proc.stdout
    assert processes_tagged(tag) == set()  # the MCP server is gone


async def test_ctrl_c_declines_a_question_and_the_next_line_still_arrives(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.push(
        tools(call("question", {"questions": [{"question": "Color?"}]})),
        text("ok after decline"),
        lambda request: text("got: " + request.body["messages"][-1]["content"]),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolnexus", "run", *_model_flags(fake_llm, "openai"),
        "--api-key", "k", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=clean_env(), cwd=str(REPO),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"ask me\n")
    await proc.stdin.drain()
    seen = b""
    while b"Color? > " not in seen:  # the question is being asked
        chunk = await asyncio.wait_for(proc.stdout.read(256), HANG_GUARD)
        assert chunk, seen
        seen += chunk
    proc.send_signal(signal.SIGINT)  # declines the question; the run goes on
    await fake_llm.until_requests(2, timeout=HANG_GUARD)
    proc.stdin.write(b"again\n")
    proc.stdin.close()  # end of input ends the REPL (no `exit` needed)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    assert proc.returncode == 0, err.decode()
    assert "✗ question failed: declined/expired: Color?" in err.decode()
    assert "got: again" in (seen + out).decode()
    assert len(fake_llm.requests) == 3


def test_once_without_a_terminal_reports_the_pending_question(cli, fake_llm: FakeLLM) -> None:
    fake_llm.push(tools(call("question", {"questions": [{"question": "Pick?"}]})))
    done = cli("run", *_model_flags(fake_llm, "openai"), "--api-key", "k", "--once", "hi")
    assert done.returncode == 0, done.stderr
    assert "  ? Pick?\n" in done.stderr
    assert "the run waits for an answer" in done.stderr
    assert len(fake_llm.requests) == 1


# -- one-line errors (exit code 2) ----------------------------------------------------------------


def test_missing_api_key_is_one_line(cli, fake_llm: FakeLLM) -> None:
    done = cli("run", *_model_flags(fake_llm, "openai"), "--once", "hi")
    assert one_line_error(done) == f"toolnexus: error: {NO_API_KEY_MESSAGE}"
    assert fake_llm.requests == []


def test_unreachable_endpoint_is_one_line(cli) -> None:
    with socket.socket() as sock:  # a port nobody listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = cli(
        "run", "--base-url", f"http://user:hunter2@127.0.0.1:{port}/v1", "--style", "openai",
        "--model", "m", "--api-key", "k", "--no-builtins", "--once", "hi",
    )  # fmt: skip
    # The URL is named, without the credentials it carried.
    line = one_line_error(done)
    assert line.startswith(f"toolnexus: error: cannot reach http://127.0.0.1:{port}/v1: ")
    assert "hunter2" not in done.stdout + done.stderr


def test_provider_error_is_one_line(cli, fake_llm: FakeLLM) -> None:
    fake_llm.push(error(400, "invalid api key"))
    done = cli(
        "run", *_model_flags(fake_llm, "openai"), "--api-key", "k", "--no-builtins", "--once", "hi"
    )
    assert one_line_error(done) == "toolnexus: error: LLM 400: invalid api key"


def test_unreadable_config_is_one_line(cli, fake_llm: FakeLLM, tmp_path: Path) -> None:
    done = cli(
        "run", *_model_flags(fake_llm, "openai"), "--api-key", "k",
        "--config", str(tmp_path / "nope.json"), "--once", "hi",
    )  # fmt: skip
    assert "cannot read config file" in one_line_error(done)


def test_failed_mcp_server_is_one_line_unless_skipped(
    cli, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"broken": broken_server()})
    flags = [*_model_flags(fake_llm, "openai"), "--api-key", "k", "--config", str(config)]

    line = one_line_error(cli("run", *flags, "--once", "hi"))
    assert line.startswith('toolnexus: error: MCP server "broken" failed: ')
    assert line.endswith("(pass --skip-failed to start without it)")
    assert fake_llm.requests == []

    fake_llm.push(text("fine"))
    done = cli("run", *flags, "--skip-failed", "--once", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "fine\n"
    assert 'toolnexus: warning: MCP server "broken" failed: ' in done.stderr


def test_once_says_the_built_ins_are_exposed(
    cli, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_llm.push(text("hello"))
    done = cli("run", *_model_flags(fake_llm, "openai"), "--once", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    assert (
        "tools: builtin 10 (bash, read, write, edit, grep, glob, webfetch, question, "
        "apply_patch, todowrite; --no-builtins drops them)"
    ) in done.stderr.splitlines()
