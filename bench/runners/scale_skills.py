"""`scale_skills`: discover 5,000 skill folders through `create_toolkit(skills_dir=...)`.

The skills are generated into a temporary folder first (not timed). Each timed build walks the
tree, parses every frontmatter with YAML and renders the catalog prompt; p50 is the median of
the builds, `first_ms` the first one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c


def generate(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"group-{i % 50:02d}" / f"skill-{i:05d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:05d}\ndescription: Generated skill number {i} for the "
            f"discovery benchmark.\n---\n# Skill {i}\n\nFollow these steps for task {i}.\n"
        )


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from toolnexus import create_toolkit

    root = Path(tempfile.mkdtemp(prefix="bench-5k-skills-"))
    try:
        start = time.perf_counter()
        generate(root, args.skills)
        generate_ms = (time.perf_counter() - start) * 1000
        samples: list[float] = []
        found = 0
        for _ in range(args.builds):
            start = time.perf_counter()
            toolkit = await create_toolkit(skills_dir=str(root), builtins=False)
            prompt = toolkit.skills_prompt()
            samples.append((time.perf_counter() - start) * 1000)
            source = toolkit.skill_source
            found = len(source.skills) if source is not None else 0
            await toolkit.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stats = c.summary(samples)
    ok = found == args.skills
    row: dict[str, Any] = {
        "name": "scale_skills",
        "init_ms": None,
        **stats,
        "rss_mb": c.peak_rss_mb(),
        "ok": ok,
        "skills": args.skills,
        "found": found,
        "builds": len(samples),
        "first_ms": samples[0],
        "generate_ms": generate_ms,
        "prompt_chars": len(prompt),
        "headline": (
            f"{args.skills} skills discovered in {stats['p50_ms']:.0f} ms "
            f"(median of {len(samples)}; first {samples[0]:.0f} ms)"
        ),
    }
    if not ok:
        row["error"] = f"found {found} skills, expected {args.skills}"
    return row


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skills", type=int, default=5000)
    parser.add_argument("--builds", type=int, default=5)
    parser.add_argument("--base-url", help="unused (the harness passes it to every runner)")
    parser.add_argument("--quick", action="store_true", help="500 skills, 2 builds")
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.skills, ARGS.builds = min(ARGS.skills, 500), min(ARGS.builds, 2)
    c.guarded("scale_skills", lambda: main(ARGS))
