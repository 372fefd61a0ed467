"""The error tree: one root for every exception a host can meet, built-in bases kept."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import toolnexus
import toolnexus.errors
from toolnexus import (
    A2AError,
    ConfigError,
    ConfigTypeError,
    EnvVarError,
    MalformedFrontmatter,
    MissingApiKey,
    ProviderConnectionError,
    ProviderError,
    RunCancelled,
    RunTimeout,
    ServerConfigError,
    SpawnError,
    ToolnexusError,
)


def _modules() -> list[str]:
    names = ["toolnexus"]
    for info in pkgutil.walk_packages(toolnexus.__path__, "toolnexus."):
        if "._demo" in info.name or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_every_exception_class_defined_by_the_library_is_under_the_root() -> None:
    outside: list[str] = []
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("toolnexus")
                and not issubclass(value, ToolnexusError)
                and not attr.startswith("_")
            ):
                outside.append(f"{value.__module__}.{value.__qualname__}")
    assert sorted(set(outside)) == []


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (ConfigError, ValueError),
        (EnvVarError, ValueError),
        (ServerConfigError, ValueError),
        (MalformedFrontmatter, ValueError),
        (MissingApiKey, ValueError),
        (RunTimeout, TimeoutError),
        (SpawnError, OSError),
        (ProviderConnectionError, ConnectionError),
    ],
)
def test_each_class_keeps_its_builtin_base(cls: type[BaseException], builtin: type) -> None:
    assert issubclass(cls, ToolnexusError)
    assert issubclass(cls, builtin)


def test_config_errors_share_one_parent() -> None:
    for cls in (EnvVarError, ServerConfigError, MalformedFrontmatter, MissingApiKey):
        assert issubclass(cls, ConfigError)
    for cls in (ProviderError, RunTimeout, RunCancelled, A2AError, SpawnError):
        assert issubclass(cls, ToolnexusError)
        assert not issubclass(cls, ConfigError)


def test_the_old_import_paths_name_the_same_classes() -> None:
    from toolnexus._env import EnvVarError as env_error
    from toolnexus.a2a import A2AError as a2a_error
    from toolnexus.client import ProviderError as provider_error
    from toolnexus.client import RunTimeout as run_timeout
    from toolnexus.mcp_source._config import ServerConfigError as server_config_error
    from toolnexus.skill._frontmatter import MalformedFrontmatter as malformed

    assert env_error is EnvVarError
    assert a2a_error is A2AError
    assert provider_error is ProviderError
    assert run_timeout is RunTimeout
    assert server_config_error is ServerConfigError
    assert malformed is MalformedFrontmatter


def test_provider_connection_error_names_the_url_without_credentials() -> None:
    cause = OSError("Connection refused")
    try:
        try:
            raise cause
        except OSError as exc:
            raise ProviderConnectionError(
                "https://user:s3cret-value@llm.example:8443/v1/chat?key=abc", str(exc)
            ) from exc
    except ProviderConnectionError as caught:
        err = caught
    assert str(err) == "cannot reach https://llm.example:8443/v1/chat: Connection refused"
    assert err.url == "https://llm.example:8443/v1/chat"
    assert "s3cret" not in repr(err) and "abc" not in str(err)
    assert err.__cause__ is cause


def test_provider_error_fields() -> None:
    err = ProviderError(429, '{"error": {"message": "slow down"}}', headers={"retry-after": "1"})
    assert (err.status, err.provider_message, str(err)) == (429, "slow down", "LLM 429: slow down")
    assert ProviderError(500, "").message == "LLM 500"


def test_run_errors_read_as_before() -> None:
    assert str(RunTimeout(250)) == "run timeout after 250ms (client timeout_ms budget)"
    assert str(RunTimeout(2.5)) == "run timeout after 2.5ms (client timeout_ms budget)"
    assert str(RunTimeout(250.0)) == "run timeout after 250ms (client timeout_ms budget)"
    # not 300.00000000000006
    assert str(RunTimeout(0.3 * 1000)) == "run timeout after 300ms (client timeout_ms budget)"
    assert str(RunCancelled()) == "run cancelled"
    assert str(EnvVarError("TOKEN")) == "environment variable TOKEN is not set"


def test_errors_module_lists_every_public_class() -> None:
    classes = {
        name
        for name, value in vars(toolnexus.errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    assert classes == set(toolnexus.errors.__all__)
    assert set(toolnexus.errors.__all__) <= set(toolnexus.__all__)


async def _noop(args: dict[str, object], ctx: object) -> toolnexus.ToolResult:
    return toolnexus.ToolResult("")


_BAD_CONFIG = [
    ("builtins block", lambda: toolnexus.create_toolkit_sync(builtins="yes"), ConfigError),
    (
        "a tool as extra_tools",
        lambda: toolnexus.create_toolkit_sync(
            extra_tools=toolnexus.define_tool(lambda: None, name="t")
        ),
        ConfigTypeError,
    ),
    ("define_tool of a number", lambda: toolnexus.define_tool(42), ConfigTypeError),
    (
        "http_tool scheme",
        lambda: toolnexus.http_tool(name="x", description="", method="GET", url="ftp://host/"),
        ConfigError,
    ),
    (
        "http_tool method",
        lambda: toolnexus.http_tool(
            name="x", description="", method="GET", url="http://h/", body="xml"
        ),
        ConfigError,
    ),
    ("agent card", lambda: toolnexus.agent(42), ConfigError),  # type: ignore[arg-type]
    (
        "api_key type",
        lambda: toolnexus.create_client(
            base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key=5
        ),
        ConfigTypeError,
    ),  # type: ignore[arg-type]
    (
        "store lock timeout",
        lambda: toolnexus.SQLiteConversationStore(":memory:", lock_timeout_ms=0),
        ConfigError,
    ),
    ("Tool without execute", lambda: toolnexus.Tool("t", "", {}, None), ConfigTypeError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("what", "call", "expected"), _BAD_CONFIG, ids=[b[0] for b in _BAD_CONFIG])
def test_bad_configuration_raises_under_the_root_with_its_builtin_base(
    what: str, call: object, expected: type[ToolnexusError]
) -> None:
    assert callable(call)
    with pytest.raises(expected) as caught:
        call()
    assert isinstance(caught.value, ToolnexusError)
    assert isinstance(caught.value, ConfigError)
    assert isinstance(caught.value, ValueError)
    if expected is ConfigTypeError:
        assert isinstance(caught.value, TypeError)  # what Python's own checks raise


async def test_bad_openapi_source_and_serve_address_are_config_errors(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="not found"):
        await toolnexus.http_tools_from_openapi("/nonexistent/spec.yaml")
    toolkit = toolnexus.Toolkit(extra_tools=[toolnexus.Tool("t", "", {}, execute=_noop)])
    with pytest.raises(ConfigError, match="serve address"):
        await toolkit.serve("not-an-address", mcp={})
    with pytest.raises(ConfigError):
        await toolkit.list_mcp_resources()  # no MCP servers


def test_provider_error_takes_retry_after_third_as_published() -> None:
    err = ProviderError(429, "slow down", "7")
    assert (err.status, err.body, err.text, err.retry_after) == (429, "slow down", "slow down", "7")
    assert str(err) == "LLM 429: slow down"
    assert ProviderError(503, "busy", headers={"Retry-After": "2"}).retry_after == "2"
    assert ProviderError(503, "busy").retry_after is None


def test_provider_error_bodies_lose_account_ids_and_auth_answers() -> None:
    body = '{"error": {"message": "quota", "user_id": "user-123", "org_id": 42}}'
    err = ProviderError(400, body)
    assert "user-123" not in err.body and "42" not in err.body
    assert err.body == (
        '{"error": {"message": "quota", "user_id": "«redacted»", "org_id": "«redacted»"}}'
    )
    for status in (401, 403):
        refused = ProviderError(status, "bad key sk-live-abc for org_id=7")
        assert (str(refused), refused.body) == (f"LLM {status}", "")
