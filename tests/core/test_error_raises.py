"""Failures a host can provoke raise under `ToolnexusError`, each keeping its built-in base."""

from __future__ import annotations

import ast
import asyncio
import errno
import socket
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import (
    AgentError,
    Answer,
    ConfigFileNotFound,
    EventLoopError,
    NoSuchRequest,
    NotConnected,
    Request,
    ServeError,
    ServeTimeout,
    ToolnexusError,
    UnsupportedOperation,
    WireFormatError,
    create_client,
    create_toolkit,
    define_tool,
)
from toolnexus.adapters import parse_openai_tool_calls
from toolnexus.agents import TaskResult, agent, compose_soul
from toolnexus.mcp_source._source import _Server

SRC = Path(toolnexus.__file__).resolve().parent


@pytest.mark.parametrize(
    ("cls", "builtins"),
    [
        (NotConnected, (ValueError,)),
        (EventLoopError, (RuntimeError,)),
        (WireFormatError, (ValueError,)),
        (UnsupportedOperation, (NotImplementedError,)),
        (toolnexus.StreamingUnsupported, (UnsupportedOperation, NotImplementedError)),
        (ConfigFileNotFound, (toolnexus.ConfigError, FileNotFoundError)),
        (ServeError, (OSError, RuntimeError)),
        (ServeTimeout, (ServeError, TimeoutError)),
        (AgentError, (RuntimeError,)),
        (NoSuchRequest, (AgentError, RuntimeError, ValueError)),
    ],
)
def test_new_classes_sit_under_the_root_with_their_bases(
    cls: type[BaseException], builtins: tuple[type, ...]
) -> None:
    assert issubclass(cls, ToolnexusError)
    for base in builtins:
        assert issubclass(cls, base)


def test_a_server_without_a_session_is_not_connected() -> None:
    server = _Server("files", {"command": "true"})
    with pytest.raises(NotConnected, match='MCP server "files" is not connected') as caught:
        server.session()
    assert isinstance(caught.value, ValueError)
    assert caught.value.server == "files"


async def test_blocking_calls_inside_the_running_loop_are_event_loop_errors() -> None:
    @define_tool
    async def one() -> int:
        return 1

    async with await create_toolkit(extra_tools=[one], builtins=False) as toolkit:
        with pytest.raises(EventLoopError, match=r"await toolkit\.execute"):
            toolkit.execute_sync("one")
    client = create_client(base_url="http://127.0.0.1:9/v1", model="m", api_key="k", style="openai")
    with pytest.raises(EventLoopError, match="running event loop"):
        client.run_sync("hi")
    with pytest.raises(EventLoopError, match="running event loop"):
        client.close()
    await client.aclose()


class _PostNotImplemented:
    def __init__(self) -> None:
        self.calls = 0

    def post(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float):
        self.calls += 1
        raise NotImplementedError("post is not wired up yet")


async def test_a_transport_whose_post_is_not_implemented_is_refused_once() -> None:
    transport = _PostNotImplemented()
    client = create_client(
        base_url="http://127.0.0.1:9/v1",
        style="openai",
        model="m",
        api_key="k",
        http_transport=transport,
    )
    async with client:
        with pytest.raises(UnsupportedOperation, match="not wired up yet") as caught:
            await client.run("hi")
    assert isinstance(caught.value, NotImplementedError)
    assert isinstance(caught.value.__cause__, NotImplementedError)
    assert transport.calls == 1  # not a network failure: never retried


async def test_serving_on_a_busy_port_is_a_serve_error() -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        async with await create_toolkit(builtins=False) as toolkit:
            with pytest.raises(ServeError) as caught:
                await toolkit.serve(f"127.0.0.1:{port}", mcp={})
    finally:
        busy.close()
    assert caught.value.errno == errno.EADDRINUSE
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"


def test_malformed_wire_data_is_a_wire_format_error() -> None:
    with pytest.raises(WireFormatError, match=r"tool_calls\[0\] is not an object"):
        parse_openai_tool_calls({"tool_calls": ["nope"]})
    with pytest.raises(WireFormatError, match='Request wire data needs "kind"'):
        Request.from_dict({"id": "r1"})
    with pytest.raises(ValueError, match='Answer wire data needs "ok"'):
        Answer.from_dict({"id": "r1"})


def test_a_missing_persona_folder_or_soul_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileNotFound, match="persona folder not found") as caught:
        compose_soul(tmp_path / "absent")
    assert isinstance(caught.value, FileNotFoundError)
    lost = agent("lost", does="nothing", soul_file=tmp_path / "missing.md")
    with pytest.raises(ConfigFileNotFound, match="soul file not found") as missing:
        lost.registry()
    assert isinstance(missing.value, FileNotFoundError)


async def test_resuming_a_result_without_a_runtime_is_an_agent_error() -> None:
    result = TaskResult(status="done", text="ok", is_error=False)
    with pytest.raises(AgentError, match="no runtime to resume") as caught:
        await result.resume({"id": "r1", "ok": True})
    assert isinstance(caught.value, RuntimeError)


# Built-in exceptions raised in `src/` that never reach a host: parse hooks whose callers turn
# them into results or protocol errors, and unreachable branches.
_CAUGHT_INSIDE = {
    "cli/_ask.py",  # a re-ask prompt for the terminal user
    "client/_openai.py",  # reply parsing: the endpoint reports a ProviderError
    "client/_responses.py",
    "client/_wire.py",
    "client/_loop.py",  # `# pragma: no cover` invariants
    "client/_blocking.py",  # UrllibTransport.post: the adapter maps it
    "serve/_app.py",  # JSON number hooks: a parse error answered as such
    "serve/_a2a/_tasks.py",  # the task-store protocol's documented ValueError
    "serve/_a2a/_shared_tasks.py",
    "_backends/_postgres.py",  # mapped to StoreError by the stores
    "testing/_models.py",  # AssertionError for the host's own tests
}
_BARE = {"ValueError", "TypeError", "RuntimeError", "NotImplementedError", "KeyError", "OSError"}


def test_no_bare_builtin_errors_are_raised_outside_the_known_places() -> None:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in _CAUGHT_INSIDE or relative.startswith("_demo/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name) and func.id in _BARE:
                    found.append(f"{relative}:{node.lineno} {func.id}")
    assert found == []


def test_the_event_loop_is_left_usable_after_refusals() -> None:
    async def main() -> int:
        @define_tool
        async def two() -> int:
            return 2

        async with await create_toolkit(extra_tools=[two], builtins=False) as toolkit:
            with pytest.raises(EventLoopError):
                toolkit.execute_sync("two")
            return int((await toolkit.execute("two", {})).output)

    assert asyncio.run(main()) == 2
