"""Affected tests and failing-first by path (issue 29), measured in one run.

1. A real project (a git checkout whose suite is green, given with ``--project``): the map is
   recorded on one full run (greenloop's plugin with the project's coverage.py); then
   - the full suite vs the affected selection after a one-module edit (``--module``): CPU time
     (user + sys of the pytest process tree), median of ``--runs``;
   - a failing-first iteration (one failing test) with this plugin vs the old one (``--base-plugin``:
     collect everything, deselect), same CPU measure;
   - ``--mutants`` seeded one-line bugs (greenloop's mutator, a fixed seed, only bugs that make at
     least one test fail): the share of the bug's failing tests the selection contains, and false
     greens (the loop's success needs the full gate: a bug counts as a false green only if the
     full run passed while the bug's tests fail, which cannot be, and is checked).
2. A synthetic suite whose collection is costly (every test module burns ``--import-ms`` of CPU on
   import): a failing-first iteration vs a full collection (``--collect-only``).

Run: python bench/affected.py --project /tmp/affbench/dateutil --python /tmp/affbench/venv/bin/python
       --paths tests --env PYTHONPATH=src --module src/dateutil/relativedelta.py
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from greenloop.bench.mutate import draw, mutants_of
from greenloop.bench.sources import is_source
from greenloop.verify import affected

PLUGIN = Path(__file__).resolve().parents[1] / "src/greenloop/parsers/greenloop_pytest_plugin.py"


def plugin_dir(source: Path) -> Path:
    where = Path(tempfile.mkdtemp(prefix="aff-plugin-"))
    shutil.copy(source, where / "greenloop_pytest_plugin.py")
    return where


def pytest(
    args: argparse.Namespace, plugin: Path, env: dict[str, str], extra: Sequence[str] = ()
) -> tuple[float, set[str], set[str]]:
    """One pytest run: (CPU s of the tree, failing ids, ids that ran)."""
    report = Path(tempfile.mkdtemp(prefix="aff-report-"))
    base = dict(x.split("=", 1) for x in args.env)
    path = os.pathsep.join([str(plugin), base.pop("PYTHONPATH", "")])
    environ = {
        **os.environ,
        **base,
        "PYTHONPATH": path,
        "PYTEST_PLUGINS": "greenloop_pytest_plugin",
        "GREENLOOP_PYTEST_REPORT_DIR": str(report),
        **env,
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.paths, *extra],
        cwd=args.project,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=900,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    failed, ran = set(), set()
    for part in report.glob("*.jsonl"):
        for line in part.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "report":
                ran.add(event["nodeid"])
                if event["outcome"] == "failed" and not event.get("wasxfail"):
                    failed.add(event["nodeid"])
    shutil.rmtree(report, ignore_errors=True)
    return cpu, failed, ran


def fresh(path: Path, text: str) -> None:
    """Write and move the mtime on, so a same-size edit in the same second is not a stale .pyc."""
    path.write_text(text)
    fresh.tick += 2  # type: ignore[attr-defined]
    stamp = time.time() + fresh.tick  # type: ignore[attr-defined]
    os.utime(path, (stamp, stamp))


fresh.tick = 0  # type: ignore[attr-defined]


def median_cpu(args: argparse.Namespace, plugin: Path, env: dict[str, str]) -> float:
    return statistics.median(pytest(args, plugin, env)[0] for _ in range(args.runs))


def files_of(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [p for p in out.split("\0") if p]


def record_map(args: argparse.Namespace, plugin: Path, store: Path, command: str) -> float:
    env = affected.start_recording(store)
    started = time.monotonic()
    cpu, failed, _ = pytest(args, plugin, env)
    saved = affected.finish_recording(
        store,
        args.project,
        green=not failed,
        files=files_of(args.project),
        command=command,
        commit="bench",
    )
    if not saved:
        sys.exit(f"no map recorded (failing: {sorted(failed)[:3]}); is coverage installed?")
    print(f"map recorded in {time.monotonic() - started:.1f} s wall, {cpu:.2f} s CPU")
    return cpu


def choose(args: argparse.Namespace, store: Path, command: str, changed: str) -> affected.Choice:
    root = args.project
    return affected.choose(store, root, files=files_of(root), changed=[changed], command=command)


def contains(choice: affected.Choice, test: str) -> bool:
    return test in choice.tests or test.split("::", 1)[0] in choice.tests


def real_project(args: argparse.Namespace) -> None:
    new = plugin_dir(PLUGIN)
    command = "bench"
    store = Path(tempfile.mkdtemp(prefix="aff-store-")) / "test.json"
    record_cpu = record_map(args, new, store, command)
    full = median_cpu(args, new, {})
    _, _, all_ran = pytest(args, new, {})
    print(f"full suite: {len(all_ran)} tests, {full:.2f} s CPU (median of {args.runs})")
    print(f"recording run: {record_cpu:.2f} s CPU = {record_cpu / full:.2f}x the full suite")
    module = args.module
    text = (args.project / module).read_text()
    fresh(args.project / module, text + "# a one-module edit\n")
    try:
        choice = choose(args, store, command, module)
        select = {"GREENLOOP_PYTEST_SELECT": "\n".join(choice.tests)}
        part = median_cpu(args, new, select) if choice.tests else 0.0
    finally:
        fresh(args.project / module, text)
    print(f"affected after editing {module}: {choice.reason}")
    print(f"  {part:.2f} s CPU vs full {full:.2f} s = {part / full:.3f}x (goal <= 0.15x)")
    one = sorted(t for t in all_ran if t.startswith(args.paths[0]))[0]
    ff = {"GREENLOOP_PYTEST_SELECT": one, "GREENLOOP_PYTEST_FAILFAST": "1"}
    ff_new = median_cpu(args, new, ff)
    line = f"failing-first, one test ({one}): {ff_new:.2f} s CPU = {ff_new / full:.3f}x full"
    if args.base_plugin:
        ff_old = median_cpu(args, plugin_dir(Path(args.base_plugin)), ff)
        line += f"; collect-and-deselect (base plugin) {ff_old:.2f} s = {ff_old / full:.3f}x"
    print(line)
    mutants(args, new, store, command)


def mutants(args: argparse.Namespace, plugin: Path, store: Path, command: str) -> None:
    root = args.project
    # a prefix cannot leave out tests kept inside the package (networkx/**/tests/): the bench's
    # own rule for source files does
    sources = [
        f
        for f in files_of(root)
        if f.startswith(args.source) and f.endswith(".py") and is_source(f)
    ]
    candidates = [m for f in sources for m in mutants_of(f, (root / f).read_text())]
    found = contained = bugs = false_greens = missed_bugs = tried = hangs = 0
    for m in draw(candidates, 10_000, args.seed):
        if bugs >= args.mutants or tried >= args.mutants * 6:
            break
        tried += 1
        path = root / m.path
        text = path.read_text()
        fresh(path, m.apply(text))
        try:
            try:
                _, failing, _ = pytest(args, plugin, {})
            except subprocess.TimeoutExpired:  # the bug hangs the suite: the loop's per-command
                hangs += 1  # timeout ends that run, there is no failing-test set to compare
                print(f"  {m.path}:{m.line} {m.kind}: the full suite hung (900 s): not counted")
                continue
            if not failing:
                continue  # a surviving mutant: no test sees it
            bugs += 1
            choice = choose(args, store, command, m.path)
            inside = {t for t in failing if contains(choice, t)}
            found += len(failing)
            contained += len(inside)
            missed_bugs += len(inside) < len(failing)
            select = {"GREENLOOP_PYTEST_SELECT": "\n".join(choice.tests)}
            _, sub_failing, _ = pytest(args, plugin, select) if choice.tests else (0, set(), set())
            # the loop declares success on the full run only: a false green would be a bug whose
            # full run passed; ``failing`` is that run's result
            false_greens += not failing
            print(
                f"  {m.path}:{m.line} {m.kind}: {len(failing)} failing, "
                f"{len(inside)} in the selection ({len(choice.tests)} entries), "
                f"selection {'red' if sub_failing else 'GREEN'}, gate red"
            )
        finally:
            fresh(path, text)
    share = contained / found if found else 0.0
    print(
        f"{bugs} bugs ({tried} drawn, seed {args.seed}): {contained}/{found} failing tests in the "
        f"selection = {share:.1%} (goal >= 95 %); bugs with a test outside it: {missed_bugs} "
        f"(caught by the gate); false greens: {false_greens}; hung the suite: {hangs}"
    )


def costly_collection(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="aff-costly-"))
    burn = f"import time\n_t = time.process_time()\nwhile time.process_time() - _t < {args.import_ms / 1000}:\n    pass\n"
    for i in range(args.modules):
        body = burn + "".join(f"\ndef test_{i}_{j}():\n    assert True\n" for j in range(5))
        (root / f"test_m{i:03}.py").write_text(body)
    new = plugin_dir(PLUGIN)
    old = plugin_dir(Path(args.base_plugin)) if args.base_plugin else None
    sub = argparse.Namespace(**{**vars(args), "project": root, "paths": [], "env": []})
    collect = statistics.median(pytest(sub, new, {}, ["--collect-only"])[0] for _ in range(3))
    ff = {"GREENLOOP_PYTEST_SELECT": "test_m007.py::test_7_3", "GREENLOOP_PYTEST_FAILFAST": "1"}
    part = statistics.median(pytest(sub, new, ff)[0] for _ in range(3))
    line = (
        f"costly collection ({args.modules} modules x {args.import_ms} ms CPU on import): "
        f"full collection {collect:.2f} s CPU, failing-first iteration {part:.2f} s = "
        f"{part / collect:.3f}x (goal <= 0.3x)"
    )
    if old is not None:
        before = statistics.median(pytest(sub, old, ff)[0] for _ in range(3))
        line += f"; base plugin (collect, deselect) {before:.2f} s = {before / collect:.3f}x"
    print(line)
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--project", type=Path)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--paths", nargs="*", default=["tests"])
    p.add_argument("--env", nargs="*", default=[], help="NAME=VALUE for the project's pytest")
    p.add_argument("--module", default="", help="the one-module edit")
    p.add_argument("--source", default="src/", help="where the mutants are seeded")
    p.add_argument("--mutants", type=int, default=20)
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--base-plugin", help="the plugin before issue 29, for the comparison")
    p.add_argument("--modules", type=int, default=100)
    p.add_argument("--import-ms", type=int, default=50)
    args = p.parse_args()
    if args.project:
        args.project = args.project.resolve()
        real_project(args)
    costly_collection(args)


if __name__ == "__main__":
    main()
