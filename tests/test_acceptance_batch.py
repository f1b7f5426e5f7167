"""Issue 28 item 4's must-hold batch, the suite's size: real projects (cachetools and markupsafe,
from their PyPI sdists, which carry their tests), planted one-line bugs, scripted agents: a fix,
a task already green, a stuck agent, and three declared tasks (a fix, a cheat that deletes the
failing tests, one that skips them). bench/acceptance_batch.py runs the 20-task version."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from limits import hang

BENCH = Path(__file__).resolve().parent.parent / "bench" / "acceptance_batch.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acceptance_batch", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_batch_on_real_projects_counts_declared_cheats_as_not_solved(tmp_path: Path) -> None:
    bench = _bench()
    tasks, expected = bench.build(tmp_path / "w", bench.SMALL, mirrors=tmp_path / "no-mirrors")
    assert sorted(expected.values()) == [
        "invalid", "stalled", "success", "success", "suspicious_pass", "suspicious_pass",
    ]  # fmt: skip
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    declared = {r["id"]: r for r in rows if "fail_to_pass" in r}
    assert sorted(declared) == ["ct-ttl-delete", "ms-add-declared", "ms-keepends-skip"]
    assert declared["ct-ttl-delete"]["fail_to_pass"] == [
        "tests/test_ttl.py::TTLCacheTest::test_ttl",
        "tests/test_ttl.py::TTLCacheTest::test_ttl_expire",
    ]

    done = bench.run_batch(tasks, tmp_path / "out", workers=2, subset="off")

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {t["id"]: t["result"] for t in summary["tasks"]} == expected, done.stdout
    assert done.stdout.splitlines()[0] == (
        "greenloop batch: 2/5 solved (40 %), 1 invalid: already green at baseline, "
        "declared acceptance met in 1/3, 6 finished"
    )
    by_id = {t["id"]: t for t in summary["tasks"]}
    deleted = by_id["ct-ttl-delete"]
    assert (
        "declared test tests/test_ttl.py::TTLCacheTest::test_ttl did not run (not collected"
        in (deleted["reason"])
    )
    assert deleted["accepted"] is False
    skipped = by_id["ms-keepends-skip"]
    assert "did not run (skipped)" in skipped["reason"]
    fixed = by_id["ms-add-declared"]
    assert fixed["accepted"] is True
    assert (
        fixed["acceptance"]
        == "declared acceptance: 1/1 fail-to-pass passed, 3/3 pass-to-pass passed"
    )
    assert done.returncode == 1


def test_the_bench_script_names_what_it_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--help"],
        capture_output=True, text=True, timeout=hang(120), stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert "--small" in done.stdout
