"""Plain definitions: `Budget` and `AgentDef`, the registry entries a runtime runs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.types import Tool

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_TURNS",
    "AgentDef",
    "Budget",
    "check_name",
    "merge_budgets",
]

DEFAULT_MAX_TURNS = 6
DEFAULT_MAX_CONCURRENT = 8
DEFAULT_MAX_DEPTH = 3

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_name(name: Any, what: str = "agent name") -> str:
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ConfigError(
            f"toolnexus.agents: {what} must match [A-Za-z0-9_-]{{1,64}}, not {name!r}"
        )
    return name


@dataclass(slots=True, frozen=True)
class Budget:
    """Limits for one handle. Unset fields take the defaults: 6 turns, the parent's remaining
    tokens and tool calls, no wall limit, unlimited children, 8 concurrent children, depth 3."""

    max_turns: int | None = None
    max_tokens: float | None = None
    max_tool_calls: float | None = None
    max_wall_ms: float | None = None
    max_children: float | None = None
    max_concurrent: int | None = None
    max_depth: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                raise ConfigTypeError(f"Budget.{f.name} must be a number, not {value!r}")
            floor = 1 if f.name in ("max_turns", "max_concurrent") else 0
            if value < floor:
                raise ConfigError(f"Budget.{f.name} must be >= {floor}, not {value!r}")
        if self.max_turns is not None and not isinstance(self.max_turns, int):
            raise ConfigTypeError(f"Budget.max_turns must be an integer, not {self.max_turns!r}")


def merge_budgets(base: Budget | None, override: Budget | None) -> Budget:
    """`override`'s set fields win over `base`'s, field by field."""
    if base is None:
        return override or Budget()
    if override is None:
        return base
    merged = {
        f.name: getattr(override, f.name)
        if getattr(override, f.name) is not None
        else getattr(base, f.name)
        for f in fields(Budget)
    }
    return Budget(**merged)


@dataclass(slots=True)
class AgentDef:
    """One registry entry: what a runtime needs to run an agent's turns.

    `model` is a model id or `"inherit"` (the runtime client's). The agent gets the `task` tool
    exactly when `task_targets` is non-empty; its turns end with a typed output exactly when
    `output_type` is set.
    """

    name: str
    description: str
    system_prompt: str
    model: str
    budget: Budget | None = None
    tools: list[Tool] | None = None
    wait_for: Callable[..., Any] | None = None
    on_spawn: Callable[..., Any] | None = None
    on_close: Callable[..., Any] | None = None
    task_targets: list[str] | None = None
    hooks: Any = None
    on_metric: Callable[[dict[str, Any]], Any] | None = None
    completion: Any = None
    guardrails: list[Any] | None = None
    output_type: Any = None
