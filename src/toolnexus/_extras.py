"""The install hint for an optional extra, for every error that finds one missing.

The PyPI name `toolnexus` belongs to the published package, a different implementation, so the
hint installs this project from a checkout (or its git URL), never by that name.
"""

from __future__ import annotations

__all__ = ["extra_hint"]


def extra_hint(extra: str) -> str:
    """`pip install "/path/to/checkout[<extra>]"`, saying what the path is."""
    return (
        f'pip install "/path/to/checkout[{extra}]" (a clone of this project; '
        f'or "toolnexus[{extra}] @ git+<its git URL>": the PyPI name is another package)'
    )
