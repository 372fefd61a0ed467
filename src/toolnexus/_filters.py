"""The shared name→bool filter (MCP per-server `tools`, `skills_filter`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from toolnexus._log import warn


def apply_name_filter(
    names: Iterable[str],
    name_filter: Mapping[str, bool] | None,
    *,
    what: str = "name",
    report: Callable[[str], None] = warn,
) -> list[str]:
    """Keep the names the filter admits: allowlist when any value is True, else a drop-list.

    A filter key that matches no candidate is reported (a warning, unless `report` says
    otherwise) and is otherwise ignored.
    """
    candidates = list(names)
    if not name_filter:
        return candidates
    known = set(candidates)
    for key in name_filter:
        if key not in known:
            report(f'{what} filter key "{key}" matches nothing — ignored')
    if any(bool(v) for v in name_filter.values()):
        return [n for n in candidates if name_filter.get(n) is True]
    return [n for n in candidates if name_filter.get(n, True) is not False]
