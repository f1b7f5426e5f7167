"""The real-Python table's pytest mutants run live through ``greenloop check`` (issue 11).

bench/digest_real.py scores the digest built from each case's captured terminal output. A live
``greenloop check`` on pytest also loads greenloop's pytest plugin and reads its records first
(exceptions, frames, exact ids), so the digest the agent gets can differ (a doctest's exception,
a -vv repr cut inside the plugin). This re-runs every failing pytest case of the given projects:
the checkout at the pinned commit with the case's mutation committed (scripts/conformance/common.py,
the same checkout, venv and environment as capture.py), ``greenloop check --format json -- <argv>``
in the case's directory, and scores that digest on the case's facts as digest_real.py does.

Needs what capture.py needs (the fetched snapshots, /tmp/glreal checkouts and venvs installed).
Run: .venv/bin/python bench/digest_live.py [project ...]   (default: the fast pytest projects)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts" / "conformance"))
import common
import digest_scoring as base
from _harness import PYTHON, REPO

REAL = REPO / "tests" / "resources" / "real"
FAST = ("boltons", "cachetools", "inflection", "parse", "six", "sortedcontainers", "toolz")


def live_digest(project: common.Project, data: dict[str, Any]) -> str:
    runner = next(r for r in project.runners if r.runner == "pytest")
    root = common.checkout(project)
    common.install(project)  # once per venv, as capture.py does
    m = data["mutation"]
    common.commit_mutation(root, m["file"], m["line"], m["after"])
    env = {k: v for k, v in common.runner_env(project).items() if k not in runner.unset_env}
    argv = [runner.argv] if isinstance(runner.argv, str) else list(runner.argv)
    cwd = root / runner.cwd
    cmd = [PYTHON, "-m", "greenloop", "-C", str(cwd), "check", "--format", "json", "--", *argv]
    done = subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False
    )
    digest: str = json.loads(done.stdout)["digest"]
    return digest


def main(names: list[str]) -> None:
    score, misses = base.Score(), []
    for name in names:
        project = common.load_project(REAL / "projects" / f"{name}.toml")
        for path in sorted((REAL / "pytest").glob(f"{name}-*/case.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["facts"]["verdict"] == "green" or not data["mutation"]:
                continue
            case = base.Case("pytest", f"pytest/{path.parent.name}", data)
            text = live_digest(project, data)
            facts = base.facts_of(case)
            missed = [f for f, v in facts.items() if not base.found(f, v, text)]
            score.add(len(facts) - len(missed), len(facts), base.tokens(text))
            misses += [f"{case.name}: {f}" for f in missed]
            print(
                f"{case.name}: {len(facts) - len(missed)}/{len(facts)}, {base.tokens(text)} tokens"
            )
        common.checkout(project)  # back to the pinned commit
    t = score.token_list or [0]
    print(
        f"\nlive greenloop check, {len(t)} failing pytest cases of {', '.join(names)}: "
        f"{score.retention:.1%} ({score.hits}/{score.total}), median {statistics.median(t):.0f} "
        f"tokens, max {max(t)}, {sum(x > base.BUDGET for x in t)} over {base.BUDGET}"
    )
    for miss in misses:
        print(f"  missed {miss}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(FAST))
