"""Config parsing (mcp.md §1): wrappers, reserved keys, inference, enabled/disabled, key checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.mcp_source import (
    DEFAULT_TIMEOUT,
    apply_tools_filter,
    is_enabled,
    is_remote,
    parse_mcp_config,
)
from toolnexus.mcp_source._config import ServerConfigError, check_server

SERVER = {"command": "x"}


@pytest.mark.parametrize("wrapper", ["mcpServers", "servers", "mcp"])
def test_each_wrapper_holds_the_server_map(wrapper: str) -> None:
    assert parse_mcp_config({wrapper: {"a": SERVER}, "builtins": False}) == {"a": SERVER}


def test_wrappers_are_checked_in_order() -> None:
    config = {"mcp": {"c": SERVER}, "servers": {"b": SERVER}, "mcpServers": {"a": SERVER}}
    assert list(parse_mcp_config(config)) == ["a"]
    del config["mcpServers"]
    assert list(parse_mcp_config(config)) == ["b"]


def test_raw_map_leaves_out_the_reserved_sibling_keys() -> None:
    config = {
        "a": SERVER,
        "builtins": {"disabled": True},
        "agents": [],
        "a2a": {"name": "x"},
        "mcpServer": {"name": "y"},
        "b": {"url": "http://127.0.0.1:1/mcp"},
    }
    assert list(parse_mcp_config(config)) == ["a", "b"]


def test_a_file_with_only_a_reserved_block_has_no_servers(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"builtins": False}))
    assert parse_mcp_config(path) == {}
    assert parse_mcp_config(str(path)) == {}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read config file"),
        ("{nope", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
    ],
)
def test_an_unusable_file_raises_naming_the_file(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=problem) as info:
        parse_mcp_config(path)
    assert str(path) in str(info.value)


def test_a_wrapper_that_is_not_an_object_raises() -> None:
    with pytest.raises(ValueError, match='"mcpServers" must be an object'):
        parse_mcp_config({"mcpServers": ["a"]})


@pytest.mark.parametrize(
    ("cfg", "enabled"),
    [
        ({}, True),
        ({"enabled": True}, True),
        ({"enabled": False}, False),
        ({"disabled": True}, False),
        ({"disabled": False}, True),
        ({"disabled": True, "enabled": True}, False),
        ({"disabled": False, "enabled": False}, False),
    ],
)
def test_enabled_and_disabled(cfg: dict[str, bool], enabled: bool) -> None:
    assert is_enabled(cfg) is enabled


@settings(derandomize=True, max_examples=60)
@given(disabled=st.sampled_from([None, True, False]), enabled=st.sampled_from([None, True, False]))
def test_disabled_true_always_wins(disabled: bool | None, enabled: bool | None) -> None:
    cfg = {k: v for k, v in (("disabled", disabled), ("enabled", enabled)) if v is not None}
    assert is_enabled(cfg) is (disabled is not True and enabled is not False)


@pytest.mark.parametrize(
    ("cfg", "remote"),
    [
        ({"url": "http://h/mcp"}, True),
        ({"command": "x"}, False),
        ({"type": "remote", "url": "http://h"}, True),
        ({"type": "local", "url": "http://h", "command": "x"}, False),
        ({"url": 5, "command": "x"}, False),
        ({"type": "http", "url": "http://h"}, True),
        ({"type": "stdio", "command": "x"}, False),
    ],
)
def test_type_is_inferred_from_url(cfg: dict[str, object], remote: bool) -> None:
    assert is_remote(cfg) is remote


def test_defaults() -> None:
    spec = check_server("a", {"command": ["python", "-m", "srv"]})
    assert spec.timeout == DEFAULT_TIMEOUT == 30.0
    assert spec.command == ("python", "-m", "srv")
    assert spec.reconnect is True
    assert spec.remote is False


def test_timeout_is_milliseconds() -> None:
    assert check_server("a", {"command": "x", "timeout": 1500}).timeout == 1.5


def test_a_command_string_is_split_like_a_shell() -> None:
    spec = check_server("a", {"command": "npx -y '@scope/server files' --root \"/tmp/a b\""})
    assert spec.command == ("npx", "-y", "@scope/server files", "--root", "/tmp/a b")


def test_desktop_style_command_and_args() -> None:
    spec = check_server("a", {"command": "/opt/my tools/srv", "args": ["--x", "1"]})
    assert spec.command == ("/opt/my tools/srv", "--x", "1")


def test_environment_wins_over_env_key_by_key() -> None:
    spec = check_server(
        "a", {"command": "x", "env": {"A": "env", "B": "b"}, "environment": {"A": "environment"}}
    )
    assert spec.env == {"A": "environment", "B": "b"}


@pytest.mark.parametrize(
    ("cfg", "reason"),
    [
        ({"command": 5}, '"command" must be a list of strings or a string, not 5'),
        ({"command": ["a", 1]}, '"command" must be a list of strings or a string'),
        ({"command": ""}, '"command" is empty'),
        ({"command": "a 'b"}, '"command" cannot be split like a shell'),
        ({}, '"command" is required'),
        ({"type": "remote"}, '"url" is required'),
        ({"url": ""}, '"url" must be a non-empty string'),
        ({"type": "remote", "url": 3}, '"url" must be a non-empty string, not 3'),
        ({"command": "x", "timeout": "30"}, '"timeout" must be a positive number'),
        ({"command": "x", "timeout": 0}, '"timeout" must be a positive number'),
        ({"command": "x", "timeout": True}, '"timeout" must be a positive number'),
        ({"command": "x", "maxTimeout": -1}, '"maxTimeout" must be a positive number'),
        ({"command": "x", "listenRetry": 0}, '"listenRetry" must be a positive number'),
        ({"command": "x", "listenRetryMax": "1s"}, '"listenRetryMax" must be a positive number'),
        (
            {"command": "x", "listenRetry": 500, "listenRetryMax": 100},
            '"listenRetryMax" must not be less than "listenRetry"',
        ),
        ({"command": "x", "tools": ["a"]}, '"tools" must be an object'),
        ({"command": "x", "tools": {"a": "yes"}}, '"tools" must be an object'),
        ({"command": "x", "env": ["A=1"]}, '"env" must be an object of strings'),
        ({"command": "x", "environment": {"A": [1]}}, '"environment"."A" must be a string'),
        ({"command": "x", "cwd": 3}, '"cwd" must be a non-empty string'),
        ({"command": "x", "enabled": "no"}, '"enabled" must be true or false'),
        ({"command": "x", "reconnect": 1}, '"reconnect" must be true or false'),
        ({"type": "carrier-pigeon", "command": "x"}, '"type" must be "local" or "remote"'),
        ({"url": "http://h", "headers": {"X": None}}, '"headers"."X" must be a string'),
        ("npx server", "server entry must be an object, not a string"),
    ],
)
def test_wrong_types_name_the_key(cfg: object, reason: str) -> None:
    with pytest.raises(ServerConfigError) as info:
        check_server("a", cfg)
    assert reason in str(info.value)


def test_the_listen_retry_delays_default_to_the_contracts_and_follow_the_keys() -> None:
    default = check_server("a", SERVER)
    assert (default.listen_retry, default.listen_retry_max) == (1.0, 30.0)
    tuned = check_server("a", {**SERVER, "listenRetry": 250, "listenRetryMax": 2000})
    assert (tuned.listen_retry, tuned.listen_retry_max) == (0.25, 2.0)
    # a first delay beyond the default cap raises the cap with it
    slow = check_server("a", {**SERVER, "listenRetry": 60000})
    assert (slow.listen_retry, slow.listen_retry_max) == (60.0, 60.0)


def test_a_header_value_never_appears_in_a_config_error() -> None:
    with pytest.raises(ServerConfigError) as info:
        check_server("a", {"url": "http://h", "headers": {"Authorization": ["Bearer abc123"]}})
    assert "abc123" not in str(info.value)


def test_apply_tools_filter_over_objects_and_dicts(caplog: pytest.LogCaptureFixture) -> None:
    defs = [{"name": "read"}, {"name": "write"}, {"name": "delete"}]
    assert apply_tools_filter("fs", defs, None) == defs
    assert apply_tools_filter("fs", defs, {"read": True, "ghost": True}) == [{"name": "read"}]
    assert apply_tools_filter("fs", defs, {"delete": False}) == defs[:2]
    assert '[toolnexus] MCP server "fs" tools filter key "ghost" matches nothing' in caplog.text


def test_the_shared_example_config() -> None:
    path = Path(__file__).parents[2] / "examples" / "mcp.json"
    servers = parse_mcp_config(path)
    assert list(servers) == ["everything", "example-remote"]
    everything = check_server("everything", servers["everything"])
    assert everything.command == ("npx", "-y", "@modelcontextprotocol/server-everything")
    assert (everything.enabled, everything.timeout, everything.remote) == (True, 30.0, False)
    assert is_remote(servers["example-remote"]) and not is_enabled(servers["example-remote"])


async def test_a_disabled_server_is_never_contacted(tmp_path: Path) -> None:
    from toolnexus.mcp_source import load_mcp

    example = json.loads((Path(__file__).parents[2] / "examples" / "mcp.json").read_text())
    del example["mcpServers"]["everything"]  # no npx or network in tests
    source = await load_mcp(example)
    assert source.status == {"example-remote": "disabled"}
    assert source.servers["example-remote"].transport is None
    assert source.tools == []
    await source.close()
