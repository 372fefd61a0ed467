"""Print a results file (`bench/run.py --out`) as the markdown tables of bench/README.md.

python bench/table.py [bench/results/latest.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import _common as c


def num(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def request_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| runner | p50 ms (spread) | × floor | × toolnexus | p95 ms | CPU ms/request "
        "| CPU × floor | init ms | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = r["name"] + (f" {r['version']}" if r.get("version") else "")
        if not r.get("ok"):
            why = f"skipped: {r['skipped']}" if r.get("skipped") else f"failed: {r.get('error')}"
            out.append(f"| {name} | {why} | | | | | | | |")
            continue
        spread = ""
        if r.get("p50_min_ms") is not None:
            spread = f" ({num(r['p50_min_ms'])}–{num(r['p50_max_ms'])})"
        out.append(
            f"| {name} | {num(r['p50_ms'], 2)}{spread} | {num(r.get('vs_floor'), 2)} "
            f"| {num(r.get('vs_toolnexus'), 2)} | {num(r['p95_ms'], 2)} "
            f"| {num(r.get('cpu_ms_per_request'), 2)} | {num(r.get('cpu_vs_floor'), 2)} "
            f"| {num(r['init_ms'], 0)} "
            f"| {num(r['rss_mb'])} |"
        )
    return out


def scale_table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| figure | result | peak RSS MB |", "|---|---|---|"]
    for r in rows:
        if r.get("ok"):
            text = r.get("headline") or f"p50 {num(r.get('p50_ms'), 2)} ms"
        elif r.get("skipped"):
            text = f"skipped: {r['skipped']}"
        else:
            text = f"failed: {r.get('error')}"
        out.append(f"| {r['name']} | {text} | {num(r.get('rss_mb'))} |")
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else c.RESULTS_DIR / "latest.json"
    report = json.loads(path.read_text())
    m = report["machine"]
    s = report["settings"]
    print(
        f"{m['date']} · {m['nproc']} cores, {m['cpu']} · Python {m['python']} · "
        f"load average at start {', '.join(str(x) for x in m['loadavg_at_start'])} · "
        f"N={s['n']} after {s['warmup']} warm-ups, {s['rounds']} rounds\n"
    )
    rows = report["rows"]
    request = [r for r in rows if not r["name"].startswith(("scale_", "import_"))]
    scale = [r for r in rows if r["name"].startswith(("scale_", "import_"))]
    print("\n".join(request_table(request)))
    print()
    print("\n".join(scale_table(scale)))


if __name__ == "__main__":
    main()
