"""A client's options as one checked value, and the per-run options as one typed bundle.

`ClientOptions` holds what every client has whatever its endpoint (the model, the loop's
limits, hooks, retries, typed output, ...), checked once when it is made; a `Client` keeps one
and replaces it whole. `RunOptions` is the keyword bundle `run`, `ask`, `stream` and their sync
twins accept on top of `output_type`. `ClientChanges` is what `Client.derive` accepts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypedDict, TypeVar, overload

from toolnexus._log import warn
from toolnexus.client._endpoint import CallOptions
from toolnexus.client._hooks import Hooks, resolve_hooks
from toolnexus.client._model_settings import ModelSettings, merge_settings
from toolnexus.client._output import OutputMode
from toolnexus.client._parts import UNSUPPORTED_PART_MODES
from toolnexus.client._results import UsageLimits
from toolnexus.client._tool_search import ToolSearch, check_tool_search
from toolnexus.client.memory import ConversationStore
from toolnexus.content import checked_limit
from toolnexus.errors import ConfigError, ConfigTypeError

__all__ = [
    "CALL_FIELDS",
    "ClientChanges",
    "ClientOptions",
    "RunOptions",
    "check_run_options",
    "option_attribute",
    "require_callable",
    "require_int",
]

V = TypeVar("V")

# Body keys the library owns; `request_params` may not set them (body_transform may).
FORBIDDEN_PARAMS = ("messages", "tools", "stream")


def require_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def require_callable(name: str, value: Any) -> Any:
    if value is not None and not callable(value):
        raise ConfigTypeError(f"{name} must be callable, not {type(value).__name__}")
    return value


def _filtered_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ConfigTypeError(f"request_params must be a dict, not {type(params).__name__}")
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in FORBIDDEN_PARAMS:
            warn(f'request_params key "{key}" is not allowed — ignored (use body_transform)')
        else:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True, eq=False)
class ClientOptions:
    """The options of `Client(...)` that do not pick the endpoint, checked once when made.

    The fields are named and defaulted as `Client`'s keyword options (a test keeps the two
    equal); `hooks`, `request_params`, `max_part_bytes` and `model_settings` are kept in their
    checked form. A change is a new value (`replace`), checked again.
    """

    model: str
    system_prompt: str | None = None
    max_turns: int = 10
    hooks: Hooks | None = None
    retries: int = 2
    retry_base_ms: float = 500
    timeout_ms: float | None = None
    on_metric: Callable[..., Any] | None = None
    wait_for: Callable[..., Any] | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    on_error: Callable[[dict[str, Any]], Any] | None = None
    retryable_statuses: Iterable[int] | None = None
    tool_concurrency: int = 16
    on_unsupported_part: Literal["error", "text"] | None = None
    max_part_bytes: int | None = None
    output_type: Any = None
    output_mode: OutputMode | None = None
    output_retries: int = 1
    tool_search: ToolSearch | None = "auto"
    usage_limits: UsageLimits | None = None
    raise_on_limit: bool = False
    model_settings: ModelSettings | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError("model is required: the provider's model id, sent verbatim")
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise ConfigTypeError(
                f"system_prompt must be a string, not {type(self.system_prompt).__name__}"
            )
        timeout_ms = self.timeout_ms
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or timeout_ms <= 0):
            raise ConfigError(f"timeout_ms must be > 0 or None, not {timeout_ms!r}")
        if self.retry_base_ms is None or self.retry_base_ms < 0:
            raise ConfigError(f"retry_base_ms must be >= 0, not {self.retry_base_ms!r}")
        require_int("max_turns", self.max_turns, 1)
        require_int("tool_concurrency", self.tool_concurrency, 1)
        require_int("output_retries", self.output_retries, 0)
        require_int("retries", self.retries, 0)
        for name in ("wait_for", "on_metric", "on_error", "body_transform"):
            require_callable(name, getattr(self, name))
        if self.on_unsupported_part not in UNSUPPORTED_PART_MODES:
            raise ConfigError(
                'on_unsupported_part must be "error", "text" or None, '
                f"not {self.on_unsupported_part!r}"
            )
        check_tool_search(self.tool_search)
        if self.usage_limits is not None and not isinstance(self.usage_limits, UsageLimits):
            raise ConfigTypeError(
                f"usage_limits must be UsageLimits, not {type(self.usage_limits).__name__}"
            )
        # The checked forms, kept so that a replaced value is checked the same way again.
        checked = object.__setattr__
        checked(self, "hooks", resolve_hooks(self.hooks))
        checked(self, "request_params", _filtered_params(self.request_params))
        checked(self, "max_part_bytes", checked_limit(self.max_part_bytes))
        checked(self, "raise_on_limit", bool(self.raise_on_limit))
        checked(self, "model_settings", merge_settings(None, self.model_settings))

    @classmethod
    def pick(cls, arguments: Mapping[str, Any]) -> ClientOptions:
        """The options among `arguments` (a call's keyword arguments, named as the fields)."""
        return cls(**{name: arguments[name] for name in FIELDS if name in arguments})

    def replace(self, **changes: Any) -> ClientOptions:
        """These options with `changes`, checked again; an unknown name is a `ConfigTypeError`."""
        unknown = sorted(set(changes) - FIELDS)
        if unknown:
            raise ConfigTypeError(f"unknown client option {unknown[0]!r}")
        return dataclasses.replace(self, **changes)

    def call_options(self) -> CallOptions:
        """How the endpoint retries and shapes each model call."""
        return CallOptions(
            retries=self.retries,
            retry_base_ms=self.retry_base_ms,
            retryable_statuses=self.retryable_statuses,
            on_error=self.on_error,
            request_params=self.request_params,
            body_transform=self.body_transform,
        )


FIELDS = frozenset(f.name for f in dataclasses.fields(ClientOptions))
# The options that shape the endpoint's calls: changing one means another `CallOptions`.
CALL_FIELDS = frozenset(
    (
        "retries",
        "retry_base_ms",
        "retryable_statuses",
        "on_error",
        "request_params",
        "body_transform",
    )
)


class RunOptions(TypedDict, total=False):
    """The per-run options of `run`, `ask`, `stream` and their sync twins (each one left out
    is the client's own): how a typed answer is asked for and re-asked (`output_mode`,
    `output_retries`), how deferred tools are found (`tool_search`), what every tool gets as
    `ctx.deps` (`deps`), the token and tool-call caps (`usage_limits`) and whether reaching
    one raises (`raise_on_limit`), and the sampling knobs over the client's (`model_settings`).
    """

    output_mode: OutputMode | None
    output_retries: int | None
    tool_search: ToolSearch | None
    deps: Any
    usage_limits: UsageLimits | None
    raise_on_limit: bool | None
    model_settings: ModelSettings | None


RUN_OPTIONS = frozenset(RunOptions.__annotations__)


def check_run_options(options: Mapping[str, Any]) -> None:
    """A misspelt run option fails as a misspelt keyword argument would."""
    for name in options:
        if name not in RUN_OPTIONS:
            raise ConfigTypeError(f"got an unexpected keyword argument {name!r}")


class ClientChanges(TypedDict, total=False):
    """What `Client.derive` may change: any option of `Client(...)` but those that pick the
    endpoint (`base_url`, `style`, `api_key`, `headers`, the HTTP client and transport and
    their limits)."""

    model: str
    system_prompt: str | None
    max_turns: int
    hooks: Hooks | Mapping[str, Any] | Any
    retries: int
    retry_base_ms: float
    timeout_ms: float | None
    store: ConversationStore | str | os.PathLike[str] | None
    on_metric: Callable[..., Any] | None
    wait_for: Callable[..., Any] | None
    request_params: Mapping[str, Any] | None
    body_transform: Callable[[dict[str, Any]], Any] | None
    on_error: Callable[[dict[str, Any]], Any] | None
    retryable_statuses: Iterable[int] | None
    tool_concurrency: int
    on_unsupported_part: Literal["error", "text"] | None
    max_part_bytes: int | None
    output_type: Any
    output_mode: OutputMode | None
    output_retries: int
    tool_search: ToolSearch | None
    usage_limits: UsageLimits | None
    raise_on_limit: bool
    model_settings: ModelSettings | None


class _HasOptions(Protocol):
    _options: ClientOptions  # written only here, by a checked replace

    @property
    def options(self) -> ClientOptions: ...


class option_attribute(Generic[V]):
    """A public attribute of `Client` that reads its `ClientOptions`; setting it replaces them
    (checked again), so a run always takes a consistent snapshot."""

    __slots__ = ("name",)

    def __init__(self) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, client: None, owner: type) -> option_attribute[V]: ...

    @overload
    def __get__(self, client: _HasOptions, owner: type) -> V: ...

    def __get__(self, client: _HasOptions | None, owner: type) -> V | option_attribute[V]:
        if client is None:
            return self
        value: V = getattr(client.options, self.name)
        return value

    def __set__(self, client: _HasOptions, value: V) -> None:
        client._options = client.options.replace(**{self.name: value})
