"""Affected tests (issue 29): the coverage map on real pytest runs, its invalidation, the import
graph, the loop's --subset modes, and jest/vitest's own related-tests mode."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.detect.stages import Stage
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.verify import affected, affected_imports, subset
from greenloop.verify.cascade import StageRun, run_stage
from limits import hang
from test_subset import js_project, js_runners  # noqa: F401  (the session's npm install)

pytest.importorskip("coverage")  # a dev dependency: the map is recorded with it

PY = sys.executable
COMMAND = f"{PY} -m pytest -q -p no:cacheprovider"
STAGE = Stage(name="test", command=COMMAND, why="")
FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "shapes.py": "def area(w, h):\n    return w * h\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "test_shapes.py": "from shapes import area\n\n\ndef test_area():\n    assert area(3, 4) == 12\n\n\n"
    "def test_square():\n    assert area(2, 2) == 4\n",
    "test_plain.py": "def test_nothing():\n    pass\n",
    "pyproject.toml": "[project]\nname = 'demo'\n",
    ".gitignore": "__pycache__/\n",
}


def run(root: Path, env: dict[str, str]) -> StageRun:
    return run_stage(root, STAGE, timeout=hang(300), environ={**os.environ, **env})


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def recorded(root: Path) -> Path:
    store = root / ".git" / "greenloop" / "affected" / "test.json"
    green = run(root, affected.start_recording(store))
    assert green.verdict.value == "green", green.result.merged
    ok = affected.finish_recording(
        store, root, green=True, files=files(root), command=COMMAND, commit="c0ffee1234"
    )
    assert ok
    return store


def choose(root: Path, store: Path, changed: list[str]) -> affected.Choice:
    return affected.choose(store, root, files=files(root), changed=changed, command=COMMAND)


def test_the_map_recorded_on_a_green_run_selects_the_tests_that_execute_the_edit(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(FILES)
    store = recorded(root)
    tests = json.loads(store.read_text())["tests"]
    assert tests["test_shapes.py::test_area"] == ["shapes.py", "test_shapes.py"]
    (root / "shapes.py").write_text("def area(w, h):\n    return w + h\n")
    choice = choose(root, store, ["shapes.py"])
    assert choice.tests == ("test_shapes.py",)  # both of its tests: the file stands for them
    assert choice.reason == "2 affected tests of 4 (map from green run c0ffee1)"
    narrowed = subset.select(STAGE, choice.tests)
    assert narrowed is not None
    again = run(root, dict(narrowed.env))
    assert {f.id for f in again.parsed.errors} == {"test_shapes.py::test_area"}
    assert again.parsed.counts.ran == 2  # test_calc.py and test_plain.py were not even collected


def test_a_red_run_leaves_no_map(make_repo: Callable[..., Path]) -> None:
    root = make_repo({**FILES, "calc.py": "def add(a, b):\n    return a - b\n"})
    store = root / ".git" / "greenloop" / "affected" / "test.json"
    red = run(root, affected.start_recording(store))
    assert red.verdict.value == "failed"
    assert not affected.finish_recording(
        store, root, green=False, files=files(root), command=COMMAND, commit="x"
    )
    assert not store.exists()
    assert not affected.recording_dir(store).exists()


@pytest.mark.parametrize("changed", ["conftest.py", "pyproject.toml", "requirements-dev.txt"])
def test_a_changed_configuration_or_manifest_makes_the_map_stale(
    make_repo: Callable[..., Path], changed: str
) -> None:
    root = make_repo(FILES)
    store = recorded(root)
    (root / changed).write_text("# changed\n")
    found = affected.load(store, root, files(root), COMMAND)
    assert isinstance(found, str)
    assert found.startswith(f"map stale ({changed} changed)")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    choice = choose(root, store, ["calc.py"])
    assert choice.source == "imports"  # never the stale map: the import graph stands in
    assert choice.tests == ("test_calc.py",)


def test_a_changed_test_file_runs_whole_and_a_new_one_is_selected(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(FILES)
    store = recorded(root)
    (root / "test_plain.py").write_text(
        "def test_nothing():\n    pass\n\n\ndef test_new():\n    pass\n"
    )
    (root / "test_fresh.py").write_text("def test_fresh():\n    pass\n")
    choice = choose(root, store, ["test_plain.py", "test_fresh.py"])
    assert choice.tests == ("test_plain.py", "test_fresh.py")
    assert "+ 1 new test file" in choice.reason


def test_a_corrupt_map_is_deleted_never_trusted_and_rebuilt(make_repo: Callable[..., Path]) -> None:
    root = make_repo(FILES)
    store = recorded(root)
    for garbage in ('{"version": 1, "tests": [1, 2]}', "\x00not json", '{"version": 99}'):
        store.write_text(garbage)
        found = affected.load(store, root, files(root), COMMAND)
        assert found == "map corrupt: deleted, rebuilt on the next green full run"
        assert not store.exists()
    assert choose(root, store, ["calc.py"]).source == "imports"
    recorded(root)
    assert isinstance(affected.load(store, root, files(root), COMMAND), affected.Map)


def test_the_import_graph_follows_packages_relative_imports_and_conftests(tmp_path: Path) -> None:
    tree = {
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": "from .util import helper\n",
        "src/pkg/util.py": "def helper():\n    return 1\n",
        "src/pkg/other.py": "",
        "tests/conftest.py": "import pkg.other\n",
        "tests/test_core.py": "from pkg import core\n",
        "tests/test_lazy.py": "def test_x():\n    import pkg.util\n",
        "tests/deep/test_plain.py": "import os\n",
    }
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    names = list(tree)
    reach = affected_imports.tests_reaching
    # the nearest first: test_lazy imports pkg.util itself, test_core through pkg.core
    assert reach(tmp_path, names, ["src/pkg/util.py"]) == (
        "tests/test_lazy.py",
        "tests/test_core.py",
    )
    # the conftest above every test imports pkg.other: all of them
    assert len(reach(tmp_path, names, ["src/pkg/other.py"])) == 3
    assert reach(tmp_path, names, ["README.py"]) == ()


def test_the_import_graph_kept_between_runs_reads_a_changed_module_again(tmp_path: Path) -> None:
    tree = {
        "pkg/__init__.py": "",
        "pkg/a.py": "",
        "pkg/b.py": "",
        "tests/test_a.py": "import pkg.a\n",
    }
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    kept = tmp_path / "kept" / "imports.json"
    reach = affected_imports.tests_reaching
    assert reach(tmp_path, list(tree), ["pkg/b.py"], cache=kept) == ()
    assert len(json.loads(kept.read_text())) == 3  # each module reached, by its bytes' hash
    (tmp_path / "tests/test_a.py").write_text("import pkg.a\nimport pkg.b\n")
    assert reach(tmp_path, list(tree), ["pkg/b.py"], cache=kept) == ("tests/test_a.py",)
    # the test's new text: the search stops where it reaches pkg/b.py, unread
    assert len(json.loads(kept.read_text())) == 4


def test_a_non_python_change_gives_no_selection_the_gate_decides(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(FILES)
    store = recorded(root)
    choice = choose(root, store, ["data/table.json", "README.md"])
    assert choice.tests == ()
    assert choice.reason == "none: data/table.json is not Python, the gate decides"


# ---- the loop ----

BREAK_HIDDEN = {"replace": "shapes.py", "old": "w * h", "new": "w * h + 1"}
FIX_ADD = {"replace": "calc.py", "old": "a - b", "new": "a + b"}
HIDDEN = {
    **FILES,
    "calc.py": "def add(a, b):\n    return a - b\n",
    # imported by name at run time: no import graph sees it, only the gate does
    "test_shapes.py": "import importlib\n\n\ndef test_area():\n"
    "    assert importlib.import_module('shapes').area(3, 4) == 12\n",
}


def loop(root: Path, steps: list[list[dict[str, Any]]], **kw: Any) -> LoopResult:
    stages = (StageSpec(name="test", run=COMMAND),)
    return run_loop(root, scripted(steps), config=Config(stages=stages, timeout=120.0, **kw))


def events(result: LoopResult, kind: str) -> list[dict[str, Any]]:
    text = (Path(result.record_dir) / "events.jsonl").read_text()
    return [e for e in map(json.loads, text.splitlines()) if e["kind"] == kind]


def test_the_gate_still_runs_the_full_cascade_and_catches_a_regression_outside_the_selection(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(HIDDEN)
    result = loop(
        root, [[FIX_ADD, BREAK_HIDDEN], [{"replace": "shapes.py", "old": " + 1", "new": ""}]]
    )
    assert result.result.value == "success"
    first = result.history[1]
    assert first.verdict == "failed"
    assert not first.subset
    assert first.ran.startswith("1 test failing first: green; affected: 1 test file of 3")
    assert "; the full cascade" in first.ran
    assert "test_area" in (Path(result.record_dir) / "iter-1/digest.md").read_text()
    # the loop ended on a green full run: the map is recorded for the next one
    store = root / ".git" / "greenloop" / "affected" / "test.json"
    assert isinstance(affected.load(store, root, files(root), COMMAND), affected.Map)


def test_only_the_gate_of_a_run_that_iterated_records_the_map_never_a_one_iteration_fix(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording costs 2.4x a pytest run and is kept from a green run only: the red baseline, the
    full run that confirms a stop decided on a red subset run, and the gate of a fix on the
    first try (which runs anyway and must not pay twice) run plain; the gate after a failed try
    records."""
    log = tmp_path / "sessions.log"
    monkeypatch.setenv("SESSIONS_LOG", str(log))
    says = (
        "import os\n\n\ndef pytest_sessionstart(session):\n"
        "    with open(os.environ['SESSIONS_LOG'], 'a') as f:\n"
        "        f.write('rec\\n' if os.environ.get('GREENLOOP_PYTEST_COVERAGE') else 'plain\\n')\n"
    )
    broken = {**FILES, "calc.py": "def add(a, b):\n    return a - b\n", "conftest.py": says}
    capped = loop(
        make_repo(broken, name="capped"), [[{"write": "notes.txt", "text": "x\n"}]], max_iters=1
    )
    assert capped.result.value != "success"
    assert "recording" not in " ".join(row.ran for row in capped.history)
    assert set(log.read_text().split()) == {"plain"}  # baseline, its re-run, subset, confirmation
    log.unlink()
    first = loop(make_repo(broken, name="first"), [[FIX_ADD]])
    assert first.result.value == "success"
    assert first.history[-1].ran.endswith("; the full cascade")
    assert set(log.read_text().split()) == {"plain"}
    log.unlink()
    second = make_repo(broken, name="second")
    tried = loop(second, [[{"write": "notes.txt", "text": "x\n"}], [FIX_ADD]])
    assert tried.result.value == "success"
    assert tried.history[-1].ran.endswith("the full cascade, recording the affected-tests map")
    assert log.read_text().split()[-1] == "rec"  # the gate, last, and only it
    assert log.read_text().split().count("rec") == 1
    store = second / ".git" / "greenloop" / "affected" / "test.json"
    assert isinstance(affected.load(store, second, files(second), COMMAND), affected.Map)


def test_subset_auto_catches_a_regression_in_the_affected_step(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({**FILES, "calc.py": "def add(a, b):\n    return a - b\n"})
    # the worse edit is rolled back (decided on a full run, issue 7); the next one only fixes add
    result = loop(root, [[FIX_ADD, BREAK_HIDDEN], [FIX_ADD]], on_regression="continue")
    hits = [(e["iteration"], e["verdict"]) for e in events(result, "affected")]
    assert hits[0] == (1, "failed")  # caught before the gate, by the affected step
    assert "test_shapes.py::test_area" in events(result, "affected")[0]["tests"] or (
        "test_shapes.py" in events(result, "affected")[0]["tests"]
    )
    assert result.result.value == "success"
    assert not result.history[-1].subset


def test_subset_affected_and_failing_modes_say_what_ran(make_repo: Callable[..., Path]) -> None:
    broken = {**FILES, "calc.py": "def add(a, b):\n    return a - b\n"}
    only = loop(make_repo(broken, name="a"), [[FIX_ADD]], subset="affected")
    assert only.result.value == "success"
    assert only.history[1].ran.startswith("affected: 1 test file of 3")
    assert "failing first" not in only.history[1].ran
    failing = loop(make_repo(broken, name="f"), [[FIX_ADD]], subset="failing")
    assert failing.history[1].ran == "1 test failing first: green; the full cascade"
    off = loop(make_repo(broken, name="o"), [[FIX_ADD]], subset="off")
    assert off.history[1].ran == "the full cascade"


# ---- jest and vitest: the runner's own graph ----

CALC_JS = "exports.half = (n) => n / 2;\n"
OTHER_JS = "exports.twice = (n) => n * 2;\n"


def test_jest_find_related_tests_runs_the_tests_of_the_changed_file(
    tmp_path: Path,
    js_runners: Path,  # noqa: F811
) -> None:
    files_js = {
        "src/calc.js": CALC_JS,
        "src/other.js": OTHER_JS,
        "calc.test.js": "const { half } = require('./src/calc');\ntest('half', () => { expect(half(4)).toBe(2); });\n",
        "other.test.js": "const { twice } = require('./src/other');\ntest('twice', () => { expect(twice(2)).toBe(4); });\n",
    }
    root = js_project(tmp_path, js_runners, files_js)
    stage = Stage(name="test", command=("npx", "jest"), why="")
    narrowed = subset.related(stage, ["src/calc.js"])
    assert narrowed is not None
    assert narrowed.stage.command[-2:] == ("--findRelatedTests", "src/calc.js")
    again = run_stage(root, narrowed.stage, timeout=hang(300))
    assert again.result.exit_code == 0, again.result.merged
    assert "Ran all test suites related to files matching src/calc.js" in again.result.merged
    assert again.parsed.counts.ran == 1  # other.test.js: not related, not run


def test_vitest_related_runs_the_tests_of_the_changed_file(
    tmp_path: Path,
    js_runners: Path,  # noqa: F811
) -> None:
    files_js = {
        "src/calc.js": "export const half = (n) => n / 2;\n",
        "src/other.js": "export const twice = (n) => n * 2;\n",
        "calc.test.js": "import { test, expect } from 'vitest';\nimport { half } from './src/calc.js';\n"
        "test('half', () => { expect(half(4)).toBe(3); });\n",
        "other.test.js": "import { test, expect } from 'vitest';\nimport { twice } from './src/other.js';\n"
        "test('twice', () => { expect(twice(2)).toBe(4); });\n",
    }
    root = js_project(tmp_path, js_runners, files_js, esm=True)
    stage = Stage(name="test", command=("npx", "vitest", "run"), why="")
    narrowed = subset.related(stage, ["src/calc.js"])
    assert narrowed is not None
    assert narrowed.stage.command[:4] == ("npx", "vitest", "related", "--run")
    again = run_stage(root, narrowed.stage, timeout=hang(300))
    assert again.verdict.value == "failed", again.result.merged
    assert {f.id for f in again.parsed.errors} == {"calc.test.js > half"}
    assert again.parsed.counts.ran == 1


def test_the_maps_selection_puts_a_changed_test_file_then_the_most_direct_tests_first() -> None:
    from greenloop.verify.affected import _compact

    used = {
        "tests/test_all.py::test_whole_package": ["pkg/__init__.py", "pkg/a.py", "pkg/b.py"],
        "tests/test_all.py::test_other": ["pkg/b.py"],
        "tests/test_a.py::test_unit": ["pkg/a.py"],
        "tests/test_a.py::test_through_b": ["pkg/a.py", "pkg/b.py"],
        "tests/test_new.py::test_edited": ["pkg/b.py"],
    }
    chosen = [t for t, files in used.items() if "pkg/a.py" in files]
    assert _compact(used, chosen, {"tests/test_new.py"}) == [
        "tests/test_new.py",  # the agent edited it: whole, first
        "tests/test_a.py",  # every test chosen: the file; its closest test executes one file
        "tests/test_all.py::test_whole_package",
    ]
