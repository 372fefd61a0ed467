"""`ModelSettings`: the request knobs a client sets by default and a run overrides.

Each wire module maps them onto its own body (`Wire.apply_settings`) or refuses, with a
`ConfigError`, the ones its provider has no equivalent for (`Wire.check_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from toolnexus.errors import ConfigError, ConfigTypeError

__all__ = ["ModelSettings", "ReasoningEffort", "merge_settings", "refuse_thinking_budget"]

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")  # OpenAI's, as its SDK types
# Anthropic's smallest thinking budget (its extended-thinking documentation).
MIN_THINKING_BUDGET = 1024
# `tool_choice` values that are not a tool name.
_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Request options for the model, per client (`create_client(model_settings=...)`) and per
    run (`run(..., model_settings=...)`: its fields that are not `None` win). `None` leaves the
    provider's default. docs/client.md tabulates what each wire sends.

    - `tool_choice`: `"auto"`, `"required"` (some tool), `"none"` or a tool's name. A forcing
      choice (`"required"`, a name) holds until the model calls a tool, then the run goes back
      to `"auto"` (else the loop could only end at `max_turns`).
    - `parallel_tool_calls`: whether the model may call several tools in one turn.
    - `strict_tools`: declare the tools with strict schemas (OpenAI strict mode, Anthropic
      `strict`), where the schema converts without loss.
    - `reasoning_effort`: OpenAI reasoning effort; `thinking_budget`: Anthropic extended
      thinking, in tokens (>= 1024, below the request's `max_tokens`).
    - `prompt_cache`: Anthropic cache breakpoints on the system prompt, the last tool and the
      last message (OpenAI caches by itself: nothing is sent there).
      `prompt_cache_key`: OpenAI's `prompt_cache_key`.
    - `provider_tools`: provider-side tool declarations (web search, code execution, ...)
      appended verbatim after the toolkit's.
    """

    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    strict_tools: bool | None = None
    reasoning_effort: ReasoningEffort | None = None
    thinking_budget: int | None = None
    prompt_cache: bool | None = None
    prompt_cache_key: str | None = None
    provider_tools: Sequence[Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        choice = self.tool_choice
        if choice is not None and (not isinstance(choice, str) or not choice):
            raise ConfigTypeError(
                f'ModelSettings.tool_choice must be "auto", "required", "none" or a tool name, '
                f"not {choice!r}"
            )
        for name in ("parallel_tool_calls", "strict_tools", "prompt_cache"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ConfigTypeError(f"ModelSettings.{name} must be a bool or None, not {value!r}")
        if self.reasoning_effort is not None and self.reasoning_effort not in _EFFORTS:
            raise ConfigError(
                f"ModelSettings.reasoning_effort must be one of {', '.join(_EFFORTS)}, "
                f"not {self.reasoning_effort!r}"
            )
        budget = self.thinking_budget
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_THINKING_BUDGET
        ):
            raise ConfigError(
                f"ModelSettings.thinking_budget must be an integer >= {MIN_THINKING_BUDGET} "
                f"(tokens), not {budget!r}"
            )
        key = self.prompt_cache_key
        if key is not None and (not isinstance(key, str) or not key):
            raise ConfigTypeError(
                f"ModelSettings.prompt_cache_key must be a non-empty string, not {key!r}"
            )
        if self.provider_tools is not None:
            tools = self.provider_tools
            if isinstance(tools, Mapping | str) or not isinstance(tools, Sequence):
                raise ConfigTypeError("ModelSettings.provider_tools must be a list of dicts")
            for tool in tools:
                if not isinstance(tool, Mapping) or not isinstance(tool.get("type"), str):
                    raise ConfigTypeError(
                        "ModelSettings.provider_tools entries must be dicts with a string "
                        f'"type" (the provider\'s tool declaration), not {tool!r}'
                    )
            object.__setattr__(self, "provider_tools", tuple(dict(t) for t in tools))

    @property
    def forced_tool(self) -> bool:
        """Whether `tool_choice` forces a tool call (`"required"` or a tool name)."""
        return self.tool_choice is not None and self.tool_choice not in ("auto", "none")

    @property
    def named_tool(self) -> str | None:
        """The tool `tool_choice` names, if it names one."""
        choice = self.tool_choice
        return choice if choice is not None and choice not in _CHOICES else None

    def released(self) -> ModelSettings:
        """These settings after the model called a tool: a forcing choice becomes `"auto"`."""
        return replace(self, tool_choice="auto") if self.forced_tool else self


def merge_settings(
    base: ModelSettings | None, override: ModelSettings | None
) -> ModelSettings | None:
    """`override`'s fields that are not `None` over `base`'s."""
    for given in (base, override):
        if given is not None and not isinstance(given, ModelSettings):
            raise ConfigTypeError(
                f"model_settings must be ModelSettings, not {type(given).__name__}"
            )
    if override is None:
        return base
    if base is None:
        return override
    changes = {
        f.name: getattr(override, f.name)
        for f in fields(ModelSettings)
        if getattr(override, f.name) is not None
    }
    return replace(base, **changes)


def refuse_thinking_budget(settings: ModelSettings, style: str) -> None:
    """An OpenAI wire has no token budget for reasoning: say what it has instead."""
    if settings.thinking_budget is not None:
        raise ConfigError(
            f"thinking_budget is Anthropic's; the {style} wire sets reasoning_effort "
            '("none", "minimal", "low", "medium", "high", "xhigh") instead'
        )
