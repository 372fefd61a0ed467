"""Run the benchmark: per-request runners interleaved over rounds, then the scale runners.

    python bench/run.py [--quick] [--only NAMES] [--rounds 3] [--out FILE]

Every runner is a script run in its own process (peers with their own virtualenv's
interpreter) that prints one JSON line; this script starts the mock LLM once, rotates the
runner order each round, takes the median p50 over rounds (with its min–max spread), prints a
table with ratios to `floor` and to this repo, and writes every row to `--out`.
`--quick` (N=10, one round, no peers, small scale sizes) is the CI smoke test: it exits
non-zero when any row is not ok.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as c
from _peers import PEERS, Peer, ensure_venv

RUNNERS_DIR = c.BENCH_DIR / "runners"
RUNNER_TIMEOUT_S = 600


@dataclass(frozen=True)
class Spec:
    """One runner: its row name, script and arguments, and whose interpreter runs it."""

    name: str
    script: str
    args: tuple[str, ...] = ()
    peer: Peer | None = None
    scale: bool = False
    quick: bool = True  # part of the --quick smoke run (peers never are)


REQUEST_SPECS: tuple[Spec, ...] = (
    Spec("floor", "floor.py"),
    # The same bare SDK session in the current era (server/discover, per-request _meta).
    Spec("floor_modern", "floor.py", ("--modern", "--name", "floor_modern"), quick=False),
    Spec("toolnexus", "toolnexus_run.py"),
    Spec("toolnexus_skill", "toolnexus_run.py", ("--skill",)),
    # The floor's bare `ClientSession` speaks the legacy era: the same MCP work, like for like.
    Spec(
        "toolnexus_legacy",
        "toolnexus_run.py",
        ("--mcp-protocol", "legacy", "--name", "toolnexus_legacy"),
        quick=False,
    ),
    *(Spec(p.name, p.runner, p.runner_args, peer=p) for p in PEERS),
)

SCALE_SPECS: tuple[Spec, ...] = (
    Spec("scale_concurrency", "scale_concurrency.py", scale=True),
    Spec("scale_tools", "scale_tools.py", scale=True),
    Spec("scale_mcp_connect", "scale_mcp_connect.py", scale=True),
    Spec("scale_skills", "scale_skills.py", scale=True),
    Spec("scale_gateway", "scale_gateway.py", scale=True),
    Spec("import_toolnexus", "imports.py", ("--module", "toolnexus"), scale=True),
    # What a client run with MCP tools has loaded before its first request.
    Spec(
        "import_toolnexus_client_mcp",
        "imports.py",
        ("--module", "toolnexus.client, mcp.client.session"),
        scale=True,
        quick=False,
    ),
    *(
        Spec(f"import_{p.name}", "imports.py", ("--module", p.import_name), peer=p, scale=True)
        for p in PEERS
    ),
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="N=10, 1 round, no peers; CI smoke")
    parser.add_argument("--only", help="comma-separated runner names (see --list)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("-n", type=int, default=None, help="measured requests per runner")
    parser.add_argument("--out", type=Path, default=c.RESULTS_DIR / "latest.json")
    parser.add_argument("--no-scale", action="store_true", help="per-request runners only")
    parser.add_argument("--list", action="store_true", help="print the runner names and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show runners' stderr")
    parser.add_argument(
        "--src",
        type=Path,
        help="measure this source tree's toolnexus (e.g. a `git archive` export of a commit) "
        "instead of the installed one; peers are unaffected",
    )
    return parser.parse_args()


def select(args: argparse.Namespace) -> list[Spec]:
    specs = [*REQUEST_SPECS, *([] if args.no_scale else SCALE_SPECS)]
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        known = {s.name for s in (*REQUEST_SPECS, *SCALE_SPECS)}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            sys.exit(f"unknown runner(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        specs = [s for s in (*REQUEST_SPECS, *SCALE_SPECS) if s.name in wanted]
    if args.quick:
        dropped = [s.name for s in specs if s.peer is not None]
        if dropped and args.only:
            log(f"--quick runs no peers; not running {', '.join(dropped)}")
        specs = [s for s in specs if s.peer is None and (s.quick or args.only)]
    if not specs:
        sys.exit("nothing to run")
    return specs


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def child_env(src: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    env["BENCH_SERVER_PYTHON"] = c.repo_python()
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # nothing leaves the machine
    return env


def run_one(spec: Spec, extra: list[str], verbose: bool, src: Path | None = None) -> dict[str, Any]:
    """Run one runner process and return its row (a failed row when it printed none)."""
    python = str(spec.peer.python) if spec.peer is not None else c.repo_python()
    command = [python, str(RUNNERS_DIR / spec.script), *spec.args, *extra]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=RUNNER_TIMEOUT_S,
            env=child_env(src if spec.peer is None else None),
            cwd=c.REPO_DIR,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return c.failed_row(spec.name, f"runner timed out after {RUNNER_TIMEOUT_S} s")
    if verbose and done.stderr.strip():
        sys.stderr.write(done.stderr)
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            row: dict[str, Any] = json.loads(line)
            row["name"] = spec.name
            return row
    tail = " / ".join(done.stderr.strip().splitlines()[-3:])
    return c.failed_row(spec.name, f"runner exited {done.returncode} without a row: {tail}")


def skipped_row(spec: Spec, reason: str) -> dict[str, Any]:
    row = c.failed_row(spec.name, reason)
    row.pop("error")
    row["rss_mb"] = None
    row["skipped"] = reason
    return row


def aggregate(name: str, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from a runner's rounds: medians, with the p50 spread over rounds."""
    good = [r for r in rounds if r.get("ok")]
    if len(good) < len(rounds) or not good:
        bad = next(r for r in rounds if not r.get("ok"))
        return {**bad, "rounds": len(rounds), "ok": False}
    row: dict[str, Any] = dict(good[-1])
    for key in ("init_ms", "p50_ms", "p95_ms", "mean_ms", "rss_mb", "cpu_ms_per_request"):
        if all(isinstance(r.get(key), (int, float)) for r in good):
            row[key] = statistics.median(r[key] for r in good)
    p50s = [r["p50_ms"] for r in good]
    row.update(p50_min_ms=min(p50s), p50_max_ms=max(p50s), rounds=len(good))
    return row


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """`vs_floor`/`vs_toolnexus` (p50) and `cpu_vs_floor` (CPU per request, steadier); with
    `floor_modern` measured, `vs_floor_same_era`/`cpu_vs_floor_same_era` against the floor row
    speaking the row's MCP era."""
    ok = {r["name"]: r for r in rows if r.get("ok")}
    floors_by_era = {
        r["mcp_protocol"]: r
        for name in ("floor", "floor_modern")
        if (r := ok.get(name)) and r.get("mcp_protocol")
    }
    for row in rows:
        if not row.get("ok"):
            continue
        for ref in ("floor", "toolnexus"):
            if ref in ok and ok[ref].get("p50_ms"):
                row[f"vs_{ref}"] = round(row["p50_ms"] / ok[ref]["p50_ms"], 3)
        floor_cpu = ok.get("floor", {}).get("cpu_ms_per_request")
        if floor_cpu and row.get("cpu_ms_per_request") is not None:
            row["cpu_vs_floor"] = round(row["cpu_ms_per_request"] / floor_cpu, 3)
        # Against the floor that speaks the same MCP era: the server's work differs by era.
        same = floors_by_era.get(row.get("mcp_protocol") or "")
        if same is not None and same.get("p50_ms"):
            row["vs_floor_same_era"] = round(row["p50_ms"] / same["p50_ms"], 3)
            if same.get("cpu_ms_per_request") and row.get("cpu_ms_per_request") is not None:
                row["cpu_vs_floor_same_era"] = round(
                    row["cpu_ms_per_request"] / same["cpu_ms_per_request"], 3
                )


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


HEADER = (
    "runner",
    "p50 ms",
    "spread",
    "×floor",
    "×floor(era)",
    "×toolnexus",
    "p95 ms",
    "CPU ms/req",
    "CPU ×floor",
    "CPU ×floor(era)",
    "init ms",
    "RSS MB",
)


def _status(row: dict[str, Any]) -> str:
    if row.get("skipped"):
        return f"skipped: {row['skipped']}"
    return f"FAILED: {row.get('error')}"


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    spread = "-"
    if row.get("p50_min_ms") is not None:
        spread = f"{fmt(row['p50_min_ms'])}–{fmt(row['p50_max_ms'])}"
    return (
        row["name"],
        fmt(row["p50_ms"], 2),
        spread,
        fmt(row.get("vs_floor"), 2),
        fmt(row.get("vs_floor_same_era"), 2),
        fmt(row.get("vs_toolnexus"), 2),
        fmt(row["p95_ms"], 2),
        fmt(row.get("cpu_ms_per_request"), 2),
        fmt(row.get("cpu_vs_floor"), 2),
        fmt(row.get("cpu_vs_floor_same_era"), 2),
        fmt(row["init_ms"], 0),
        fmt(row["rss_mb"]),
    )


def print_tables(request_rows: list[dict[str, Any]], scale_rows: list[dict[str, Any]]) -> None:
    if request_rows:
        table = [HEADER, *(_cells(r) for r in request_rows if r.get("ok"))]
        widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
        for line in table:
            print("  ".join(f"{cell:<{w}}" for cell, w in zip(line, widths, strict=True)).rstrip())
        for r in request_rows:
            if not r.get("ok"):
                print(f"{r['name']:<{widths[0]}}  {_status(r)}")
    if scale_rows:
        print()
        width = max(len(r["name"]) for r in scale_rows)
        for r in scale_rows:
            text = _status(r)
            if r.get("ok"):
                text = r.get("headline") or f"p50 {fmt(r.get('p50_ms'), 2)} ms"
                text += f"  (peak RSS {fmt(r.get('rss_mb'))} MB)"
            print(f"{r['name']:<{width}}  {text}")


def main() -> int:
    args = parse_args()
    if args.list:
        for spec in (*REQUEST_SPECS, *SCALE_SPECS):
            print(spec.name + (" (peer)" if spec.peer else ""))
        return 0
    specs = select(args)
    rounds = 1 if args.quick else max(1, args.rounds)
    n = args.n or (10 if args.quick else c.N)
    started = time.perf_counter()

    skipped: dict[str, str] = {}
    for peer in {s.peer for s in specs if s.peer is not None}:
        problem = ensure_venv(peer)
        if problem:
            skipped[peer.name] = problem
    runnable = [s for s in specs if s.peer is None or s.peer.name not in skipped]
    request_specs = [s for s in runnable if not s.scale]
    scale_specs = [s for s in runnable if s.scale]

    rounds_of: dict[str, list[dict[str, Any]]] = {s.name: [] for s in request_specs}
    scale_rows: list[dict[str, Any]] = []
    with c.MockLLMProcess() as base_url:
        log(f"mock LLM at {base_url}")
        request_args = ["--base-url", base_url, "-n", str(n)]
        for r in range(rounds):
            shift = r % len(request_specs) if request_specs else 0
            for spec in request_specs[shift:] + request_specs[:shift]:
                row = run_one(spec, request_args, args.verbose, args.src)
                rounds_of[spec.name].append(row)
                log(f"round {r + 1}/{rounds} {spec.name}: " + _brief(row))
        scale_args = ["--base-url", base_url, *(["--quick"] if args.quick else [])]
        for spec in scale_specs:
            row = run_one(spec, scale_args, args.verbose, args.src)
            scale_rows.append(row)
            log(f"{spec.name}: " + _brief(row))

    request_rows = [aggregate(name, rows) for name, rows in rounds_of.items()]
    peer_rows = {s.name for s in runnable if s.peer is not None}
    for row in request_rows + scale_rows:
        if row["name"] in peer_rows and not row.get("ok") and not row.get("skipped"):
            row["skipped"] = f"cannot run: {row.get('error')}"
    for spec in specs:
        if spec.peer is not None and spec.peer.name in skipped:
            row = skipped_row(spec, skipped[spec.peer.name])
            (scale_rows if spec.scale else request_rows).append(row)
    add_ratios(request_rows)
    print_tables(request_rows, scale_rows)

    report = {
        "machine": machine(),
        "settings": {
            "quick": args.quick,
            "rounds": rounds,
            "n": n,
            "warmup": c.WARMUP,
            "src": str(args.src) if args.src else None,
        },
        "elapsed_s": round(time.perf_counter() - started, 1),
        "rows": request_rows + scale_rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.out} in {report['elapsed_s']} s")
    if args.quick:
        bad = [r["name"] for r in report["rows"] if not r.get("ok")]
        if bad:
            log(f"not ok: {', '.join(bad)}")
            return 1
    return 0


def _brief(row: dict[str, Any]) -> str:
    if not row.get("ok"):
        return f"FAILED {row.get('error') or row.get('skipped')}"
    return row.get("headline") or f"p50 {fmt(row.get('p50_ms'), 2)} ms"


if __name__ == "__main__":
    sys.exit(main())
