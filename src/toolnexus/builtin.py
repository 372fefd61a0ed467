"""The built-in tools under the module name the published package uses (`toolnexus.builtin`).

The code lives in `toolnexus.builtins`; this module hands out the same objects.
"""

from __future__ import annotations

from toolnexus._config import BuiltinsConfig
from toolnexus.builtins import _settings, builtins_enabled, create_builtin_tools, select_builtins
from toolnexus.builtins._glob import SKIPPED_DIRS as IGNORE_DIRS
from toolnexus.builtins._shell import shell_argv

__all__ = [
    "IGNORE_DIRS",
    "BuiltinsConfig",
    "builtin_shell",
    "builtins_enabled",
    "create_builtin_tools",
    "select_builtins",
]


def builtin_shell(cfg: BuiltinsConfig | None = None) -> list[str]:
    """The command prefix `bash` runs a command with: `cfg`'s `shell` option, else
    `[bash or sh, "-c"]` — what `metadata["shell"]` of a bash result shows, space-joined.

    `cfg` is checked like `select_builtins` checks it.
    """
    select_builtins(cfg)  # the same error for a bad config
    return shell_argv(_settings(cfg))
