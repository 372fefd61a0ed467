"""The built-in tools under an older module name: `toolnexus.builtin` is their home.

Kept so that code importing `toolnexus.builtins` keeps working; it hands out the same objects.
"""

from __future__ import annotations

from toolnexus.builtin import (
    BUILTIN_NAMES,
    DEFAULT_MAX_OUTPUT_BYTES,
    builtins_enabled,
    create_builtin_tools,
    render_questions,
    select_builtins,
)

__all__ = [
    "BUILTIN_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "builtins_enabled",
    "create_builtin_tools",
    "render_questions",
    "select_builtins",
]
