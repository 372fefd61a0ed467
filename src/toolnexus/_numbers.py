"""Numbers in messages: `300`, not `300.0` nor the float noise `300.00000000000006`."""

from __future__ import annotations

__all__ = ["format_number"]

_INFINITE = (float("inf"), float("-inf"))


def format_number(value: float) -> str:
    """Integral values without a decimal point, fractions to three decimals (a millisecond
    figure keeps its microseconds), an unbounded one as `inf`."""
    if isinstance(value, int):
        return str(value)
    if value in _INFINITE or value != value:  # inf, -inf, nan: nothing to round
        return str(value)
    rounded = round(value, 3)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)
