"""The whole loop's cost (issue 42): seeded bugs, each fixed by a full ``greenloop run``, in the
default ``--subset auto`` against ``--subset off``; CPU time of the whole process tree.

A real project (a git checkout whose suite is green, ``--project``) is cloned twice, one clone a
mode, and each clone keeps its greenloop state (``.git/greenloop``: the affected-tests map, the
outcomes) from bug to bug, as a user's repository does. For every bug (greenloop's mutator, a fixed
seed, source files only, only bugs that make a test fail): the bug is committed in both clones, then
``greenloop run --agent scripted:STEPS`` runs in one, then in the other (interleaved, so a change of
the machine's load hits both modes alike). The scripted agent:

- ``--agent-kind first``: puts the line back on its first call (one iteration);
- ``--agent-kind three``: its first two edits leave the bug (two other wrong versions of the
  same line: greenloop's mutator at the same place, each red on its own), the third puts the line
  back (three iterations). A wrong try changes the failures (the same failures twice after an edit
  of the same file is a stall, by design), so both clones carry a committed ``greenloop.toml`` with
  ``patience = 5`` and the runs pass ``--on-regression continue``: a try that raises the count is
  rolled back and the loop goes on, as a user who asks for it has it.

CPU is ``getrusage(RUSAGE_CHILDREN)`` around each run: user + sys of greenloop and every pytest it
waited for; wall time is not used (the machine is shared). Each run must end in success, checked.

The narrow step: a probe plugin (``-p loopcost_probe``, a file at each clone's root, excluded from
git) logs every pytest session's CPU, the tests it ran and collected, and whether greenloop ran it
narrowed (``GREENLOOP_PYTEST_SELECT``) or ordered (``GREENLOOP_PYTEST_FIRST``). A narrow step is
an auto-mode session that ran narrowed, or ordered and stopped before the end of the suite; its
CPU is compared with the median full session (``--subset off``) of the same bug.

Python writes bytecode as a user's does (``PYTHONDONTWRITEBYTECODE`` is dropped for the runs;
``--no-bytecode`` keeps it, as this machine sets it: every import then compiles). Each mode's clone
runs its suite once before the first bug (its bytecode written, as in a user's repository), and the
bugs are found in a third clone: finding them in one mode's clone gave that mode the first bug's
bytecode for free (1.19x on the first bug; 1.04x with both clones warm).

Run: python bench/loop_cost.py --project /tmp/h3du/dateutil --python /tmp/h3du/venv/bin/python
       --env PYTHONPATH=src --paths tests --source src/dateutil/ --bugs 10 --agent-kind first
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from greenloop.bench.mutate import Mutant, draw, mutants_of
from greenloop.bench.sources import is_source

GREENLOOP = Path(sys.executable).with_name("greenloop")
MODES = ("auto", "off")
PROBE = """import json, os, time

_ran = [0]


def pytest_runtest_logfinish(nodeid, location):
    _ran[0] += 1


def pytest_sessionfinish(session, exitstatus):
    if not os.environ.get("LOOPCOST_LOG"):
        return
    with open(os.environ["LOOPCOST_LOG"], "a") as f:
        f.write(json.dumps({
            "cpu": time.process_time(),
            "ran": _ran[0],
            "collected": session.testscollected,
            "select": bool(os.environ.get("GREENLOOP_PYTEST_SELECT")),
            "first": bool(os.environ.get("GREENLOOP_PYTEST_FIRST")),
        }) + "\\n")
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def clone(project: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(project), str(where)], check=True)
    assert git(where, "branch", "--show-current").strip(), "the project must be on a branch"
    for name in git(project, "ls-files", "--others", "--ignored", "--exclude-standard").split():
        if name.endswith("_version.py"):  # generated, ignored files the project needs
            shutil.copy(project / name, where / name)
    git(where, "config", "user.email", "bench@example.invalid")
    git(where, "config", "user.name", "bench")
    (where / "loopcost_probe.py").write_text(PROBE)
    with (where / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("loopcost_probe.py\n")
    (where / "greenloop.toml").write_text("patience = 5\n")
    git(where, "add", "greenloop.toml")
    git(where, "commit", "-qm", "greenloop.toml: patience 5 (the three-iteration agent)")
    return where


def verifier(args: argparse.Namespace) -> list[str]:
    return [
        "env",
        *args.env,
        args.python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "loopcost_probe",
        *args.paths,
    ]


def fails(args: argparse.Namespace, root: Path) -> bool | None:
    """The suite on the bug, stopped at its first failure: True red, False green, None hung."""
    try:
        done = subprocess.run(
            [*verifier(args), "-x"],
            cwd=root,
            env=environment(args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=args.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return done.returncode == 1


def steps(m: Mutant, original: str, tries: list[Mutant]) -> list[list[dict[str, str]]]:
    fix = [{"write": m.path, "text": original}, {"summary": "put the line back"}]
    wrong = [[{"write": m.path, "text": t.apply(original)}, {"summary": "a try"}] for t in tries]
    return [*wrong, fix]


def wrong_tries(
    args: argparse.Namespace, root: Path, m: Mutant, others: list[Mutant]
) -> list[Mutant] | None:
    """Two other wrong versions of the bug's line, each red: the agent's first two edits."""
    original = (root / m.path).read_text()
    found: list[Mutant] = []
    for t in others:
        if t.path != m.path or t.line != m.line or t == m or len(found) == 2:
            continue
        (root / m.path).write_text(t.apply(original))
        red = fails(args, root)
        (root / m.path).write_text(original)
        if red:
            found.append(t)
    return found if len(found) == 2 else None


def environment(args: argparse.Namespace, log: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if args.bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    if log is not None:
        env["LOOPCOST_LOG"] = str(log)
    return env


def sessions(log: Path, seen: int) -> list[dict[str, object]]:
    """The pytest sessions the probe logged after the first ``seen``."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line) for line in lines[seen:]]


def narrow(session: dict[str, object]) -> bool:
    """A narrowed run, or an ordered one that stopped before the end of the suite."""
    ran, collected = int(str(session["ran"])), int(str(session["collected"] or 0))
    return bool(session["select"]) or (bool(session["first"]) and ran < collected)


def run_mode(
    args: argparse.Namespace, root: Path, mode: str, plan: Path
) -> tuple[float, dict[str, object]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(GREENLOOP), "run", "-y", "--format", "json", "--agent", f"scripted:{plan}",
         "--subset", mode, "--max-iters", "5", "--on-regression", "continue",
         "--timeout", str(args.timeout),
         "--", *verifier(args)],
        cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
        env=environment(args, root.parent / f"sessions-{mode}.jsonl"),
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    try:
        report = json.loads(done.stdout)
    except ValueError:
        sys.exit(
            f"greenloop run ({mode}) printed no report: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return cpu, report


def bugs_of(args: argparse.Namespace, probe: Path) -> Iterator[tuple[Mutant, str, list[Mutant]]]:
    """The seeded bugs a test sees: (the mutant, its file's text, the agent's wrong tries)."""
    sources = [
        f
        for f in git(probe, "ls-files").split("\n")
        if f.startswith(args.source) and f.endswith(".py") and is_source(f)
    ]
    candidates = [m for f in sources for m in mutants_of(f, (probe / f).read_text())]
    print(f"{len(candidates)} candidate mutants in {len(sources)} files; agent: {args.agent_kind}")
    for tried, m in enumerate(draw(candidates, 10_000, args.seed)):
        if tried >= args.bugs * 8:
            return
        original = (probe / m.path).read_text()
        (probe / m.path).write_text(m.apply(original))
        red = fails(args, probe)
        (probe / m.path).write_text(original)
        if not red:
            continue  # survived (no test sees it) or hung the suite
        tries = wrong_tries(args, probe, m, candidates) if args.agent_kind == "three" else []
        if tries is not None:
            yield m, original, tries


def cpus(logged: list[dict[str, object]]) -> str:
    return "+".join(f"{float(str(x['cpu'])):.1f}" for x in logged)


def one_bug(
    args: argparse.Namespace,
    roots: dict[str, Path],
    n: int,
    bug: tuple[Mutant, str, list[Mutant]],
    steps_cpu: list[float],
) -> dict[str, float]:
    """The bug committed in each clone, then fixed by a full ``greenloop run`` there."""
    m, original, tries = bug
    plan = roots["off"].parent / f"steps-{n}.json"
    plan.write_text(json.dumps(steps(m, original, tries)))
    cpu: dict[str, float] = {}
    iters: dict[str, int] = {}
    failed: dict[str, str] = {}
    logged: dict[str, list[dict[str, object]]] = {}
    for mode, root in roots.items():
        (root / m.path).write_text(m.apply(original))
        git(root, "commit", "-qam", f"bug {n}: {m.path}:{m.line} {m.kind}")
        log = root.parent / f"sessions-{mode}.jsonl"
        seen = len(sessions(log, 0))
        cpu[mode], report = run_mode(args, root, mode, plan)
        logged[mode] = sessions(log, seen)
        iters[mode] = int(str(report.get("iterations", 0)))
        if report.get("result") != "success":
            failed[mode] = f"{report.get('result')}: {report.get('reason')}"
            (root / m.path).write_text(original)  # the next bug starts from the original code
            git(root, "commit", "-qam", f"bug {n} put back by hand")
    full = sorted(float(str(x["cpu"])) for x in logged["off"])
    steps_here = [float(str(x["cpu"])) / full[len(full) // 2] for x in logged["auto"] if narrow(x)]
    if not failed:
        steps_cpu.extend(steps_here)
    print(
        f"  bug {n} {m.path}:{m.line} {m.kind}: auto {cpu['auto']:.2f} s, off {cpu['off']:.2f} s "
        f"CPU = {cpu['auto'] / cpu['off']:.2f}x (iterations {iters['auto']}/{iters['off']}); "
        f"pytest sessions' CPU auto {cpus(logged['auto'])} / off {cpus(logged['off'])} s, "
        "narrow steps "
        + (", ".join(f"{r:.2f}x" for r in steps_here) or "none")
        + "".join(
            f"; {mode} did not end green ({why}): not counted" for mode, why in failed.items()
        ),
        flush=True,
    )
    return {} if failed else cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--project", type=Path, required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--paths", nargs="*", default=["tests"])
    p.add_argument("--env", nargs="*", default=[], help="NAME=VALUE for the project's pytest")
    p.add_argument("--source", default="src/")
    p.add_argument("--bugs", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--agent-kind", choices=("first", "three"), default="first")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument(
        "--no-bytecode",
        dest="bytecode",
        action="store_false",
        help="keep PYTHONDONTWRITEBYTECODE (default: dropped, Python writes bytecode as a user's does)",
    )
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="loop-cost-"))
    roots = {mode: clone(args.project.resolve(), work / mode) for mode in MODES}
    probe = clone(
        args.project.resolve(), work / "probe"
    )  # the bugs are found here, not in a mode's
    for root in roots.values():  # each clone has run its suite once, as a user's has: bytecode
        assert fails(args, root) is False, f"the suite is not green in {root}"
    runs: list[dict[str, float]] = []
    steps_cpu: list[float] = []
    skipped = 0
    for n, bug in enumerate(bugs_of(args, probe), start=1):
        got = one_bug(args, roots, n, bug, steps_cpu)
        if got:
            runs.append(got)
        else:
            skipped += 1  # the policy stopped a run in one mode: no pair to compare
        if len(runs) >= args.bugs:
            break
    auto, off = sum(r["auto"] for r in runs), sum(r["off"] for r in runs)
    ratios = sorted(r["auto"] / r["off"] for r in runs)
    print(
        f"{len(runs)} bugs (seed {args.seed}; {skipped} more not ended green in both modes), agent "
        f"{args.agent_kind}: total CPU auto {auto:.1f} s "
        f"vs off {off:.1f} s = {auto / off:.3f}x; per bug max {ratios[-1]:.2f}x, "
        f"median {ratios[len(ratios) // 2]:.2f}x"
    )
    if steps_cpu:
        steps_cpu.sort()
        print(
            f"narrow steps: {len(steps_cpu)}, CPU against the bug's median full session: median "
            f"{steps_cpu[len(steps_cpu) // 2]:.3f}x, max {steps_cpu[-1]:.2f}x "
            f"(bytecode {'written' if args.bytecode else 'not written'})"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
