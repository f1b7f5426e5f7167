"""subset.narrow on real runners: the narrowed stage runs exactly the failing tests."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from greenloop.detect.stages import Stage
from greenloop.parsers.model import Failure, Kind
from greenloop.processes.process import run_command
from greenloop.verify.cascade import StageRun, run_stage
from greenloop.verify.subset import FAILFAST_ENV, SELECT_ENV, narrow, touched_test_files
from greenloop.verify.subset_argv import Subset
from limits import hang

PY = sys.executable


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(root: Path, stage: Stage, env: tuple[tuple[str, str], ...] = ()) -> StageRun:
    return run_stage(root, stage, timeout=hang(300), environ={**os.environ, **dict(env)})


def full_then_subset(root: Path, stage: Stage, **kw: object) -> tuple[StageRun, Subset, StageRun]:
    full = run(root, stage)
    assert full.verdict.value == "failed", full.result.merged
    subset = narrow(stage, full.parsed.errors, tool=full.parsed.tool, **kw)  # type: ignore[arg-type]
    assert subset is not None
    return full, subset, run(root, subset.stage, subset.env)


def ids(run: StageRun) -> set[str]:
    return {f.id for f in run.parsed.errors}


PYTEST_FILES = {
    "test_a.py": "def test_ok():\n    pass\n\n\ndef test_bad():\n    assert 1 == 2\n\n\n"
    "def test_bad_but_passing():\n    pass\n",
    "tests/test_b.py": "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2, 3])\n"
    "def test_param(n):\n    assert n != 2\n\n\nclass TestK:\n    def test_m(self):\n"
    "        assert False\n\n    def test_fine(self):\n        pass\n",
    "tests/test_c.py": "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n",
}


def test_pytest_subset_runs_exactly_the_failing_node_ids(tmp_path: Path) -> None:
    root = write(tmp_path, PYTEST_FILES)
    stage = Stage(
        name="test", command=f"{PY} -m pytest -q -p no:cacheprovider tests test_a.py", why=""
    )
    full, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert full.parsed.counts.ran == 10
    expected = {
        "test_a.py::test_bad",
        "tests/test_b.py::test_param[2]",
        "tests/test_b.py::TestK::test_m",
    }
    assert ids(full) == expected
    assert subset.stage == stage  # the command is untouched: the plugin selects
    assert ids(again) == expected
    assert again.parsed.counts.ran == 3
    assert again.parsed.counts.passed == 0


def test_pytest_subset_adds_whole_test_files_the_edit_touched(tmp_path: Path) -> None:
    root = write(tmp_path, PYTEST_FILES)
    stage = Stage(name="test", command=(PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"), why="")
    _, subset, again = full_then_subset(
        root, stage, touched=("tests/test_c.py", "calc.py"), fail_fast=False
    )
    assert subset.files == ("tests/test_c.py",)
    assert again.parsed.counts.passed == 2  # test_c's two tests, nothing else that passes
    assert again.parsed.counts.failed == 3


def test_pytest_subset_fail_fast_stops_at_the_first_failure(tmp_path: Path) -> None:
    root = write(tmp_path, PYTEST_FILES)
    stage = Stage(name="test", command=(PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"), why="")
    _, subset, again = full_then_subset(root, stage)
    assert (FAILFAST_ENV, "1") in subset.env
    assert again.parsed.counts.failed == 1
    assert again.parsed.counts.passed == 0


def test_pytest_in_a_shell_pipeline_is_narrowed_by_the_plugin(tmp_path: Path) -> None:
    root = write(tmp_path, PYTEST_FILES)
    stage = Stage(
        name="test", command=f"echo start && {PY} -m pytest -q -p no:cacheprovider", why=""
    )
    _, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert dict(subset.env)[SELECT_ENV].split("\n")[0] == "test_a.py::test_bad"
    assert again.parsed.counts.ran == 3


UNITTEST_FILES = {
    "pkg/__init__.py": "",
    "pkg/test_u.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_ok(self):\n        pass\n\n    def test_bad(self):\n        self.assertEqual(1, 2)\n\n"
    "    def test_bad_but_passing(self):\n        pass\n\n\nclass U(unittest.TestCase):\n"
    "    def test_other(self):\n        self.assertTrue(False)\n",
}


def test_unittest_subset_runs_exactly_the_failing_ids(tmp_path: Path) -> None:
    root = write(tmp_path, UNITTEST_FILES)
    stage = Stage(name="test", command=(PY, "-m", "unittest"), why="")
    full, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert full.parsed.counts.ran == 4
    assert subset.stage.command == (
        PY,
        "-m",
        "unittest",
        "pkg.test_u.T.test_bad",
        "pkg.test_u.U.test_other",
    )
    assert ids(again) == ids(full) == {"pkg.test_u.T.test_bad", "pkg.test_u.U.test_other"}
    assert again.parsed.counts.ran == 2


def test_unittest_with_a_discover_start_dir_is_not_narrowed(tmp_path: Path) -> None:
    stage = Stage(name="test", command=f"{PY} -m unittest discover -s tests", why="")
    failure = Failure(kind=Kind.TEST, id="test_x.T.test_a")
    assert narrow(stage, [failure], tool="unittest") is None


CARGO_LIB = """\
pub fn f() -> i32 { 1 }

#[cfg(test)]
mod tests {
    #[test] fn ok() { assert_eq!(super::f(), 1); }
    #[test] fn bad() { assert_eq!(super::f(), 2); }
    #[test] fn bad_but_passing() { assert_eq!(super::f(), 1); }
    #[test] fn other() { assert_eq!(super::f(), 3); }
}
"""


def test_cargo_subset_runs_exactly_the_failing_tests(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": CARGO_LIB,
        },
    )
    stage = Stage(name="test", command=("cargo", "test", "-q"), why="")
    full, subset, again = full_then_subset(root, stage)
    assert full.parsed.counts.ran == 4
    assert subset.stage.command == ("cargo", "test", "-q", "--", "--exact", *subset.ids)
    assert ids(again) == ids(full) == {"tests::bad", "tests::other"}
    assert again.parsed.counts.ran == 2


def test_cargo_with_its_own_filter_is_not_narrowed() -> None:
    stage = Stage(name="test", command=("cargo", "test", "parser"), why="")
    assert narrow(stage, [Failure(kind=Kind.TEST, id="tests::bad")], tool="cargo") is None


NODE_TEST = """\
const test = require('node:test');
const assert = require('node:assert');
test('ok one', () => {});
test('bad one', () => { assert.strictEqual(1, 2); });
test('bad one too', () => {});
test.describe('suite', () => {
  test.it('bad (nested)', () => { assert.strictEqual(1, 3); });
  test.it('fine nested', () => {});
});
"""


def test_node_test_subset_runs_exactly_the_failing_tests(tmp_path: Path) -> None:
    root = write(
        tmp_path, {"a.test.js": NODE_TEST, "b.test.js": "require('node:test')('b', () => {});\n"}
    )
    stage = Stage(name="test", command=("node", "--test"), why="")
    full, subset, again = full_then_subset(root, stage)
    assert full.parsed.counts.passed == 4
    assert ids(full) == {"bad one", "bad (nested)"}
    assert subset.stage.command[-1] == "a.test.js"
    assert ids(again) == ids(full)
    assert again.parsed.counts.ran == 2


@pytest.mark.skipif(shutil.which("go") is None, reason="go not installed")
def test_go_subset_runs_exactly_the_failing_tests(tmp_path: Path) -> None:
    test_go = (
        'package pkg\n\nimport "testing"\n\nfunc TestOk(t *testing.T) {}\n'
        'func TestBad(t *testing.T) { t.Fatal("bad") }\n'
        "func TestBadButPassing(t *testing.T) {}\n"
        'func TestOther(t *testing.T) { t.Run("sub", func(t *testing.T) { t.Fatal("x") }) }\n'
    )
    root = write(
        tmp_path, {"go.mod": "module example.com/m\n\ngo 1.20\n", "pkg/a_test.go": test_go}
    )
    stage = Stage(name="test", command=("go", "test", "./..."), why="")
    full, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert "example.com/m/pkg.TestBad" in ids(full)
    assert subset.stage.command == ("go", "test", "-run=^(TestBad|TestOther)$", "example.com/m/pkg")
    assert ids(again) == ids(full)
    assert again.parsed.counts.passed == full.parsed.counts.passed - 2  # TestOk, TestBadButPassing


def test_go_subset_adds_failfast_and_keeps_known_flags() -> None:
    stage = Stage(name="test", command="go test -v -count=1 -run Foo ./...", why="")
    subset = narrow(stage, [Failure(kind=Kind.TEST, id="example.com/m.TestA")], tool="go")
    assert subset is not None
    assert subset.stage.command == "go test -v -count=1 -failfast '-run=^(TestA)$' example.com/m"


def test_unknown_runner_shell_pipeline_and_non_test_failures_run_in_full() -> None:
    failure = Failure(kind=Kind.TEST, id="x")
    assert narrow(Stage(name="t", command=("rspec",), why=""), [failure], tool="rspec") is None
    shell = Stage(name="t", command="cargo test && cargo clippy", why="")
    assert narrow(shell, [failure], tool="cargo") is None
    build = Failure(kind=Kind.BUILD, id="src/lib.rs:1:1 E0308")
    assert narrow(Stage(name="t", command=("cargo", "test"), why=""), [build], tool="cargo") is None
    assert narrow(Stage(name="t", command=("cargo", "test"), why=""), [], tool="cargo") is None


def test_touched_test_files_keeps_python_and_js_test_files_only() -> None:
    files = ("calc.py", "tests/test_calc.py", "tests/conftest.py", "pkg/io_test.py", "README.md")
    assert touched_test_files(files) == ("tests/test_calc.py", "pkg/io_test.py")
    js = ("src/sum.js", "src/sum.test.ts", "web/__tests__/app.jsx", "e2e/login.spec.mjs")
    assert touched_test_files(js) == js[1:]


# ---- jest and vitest: real runners, installed once per session ----


@pytest.fixture(scope="session")
def js_runners(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """node_modules with jest 30 and vitest 4 (CI has node and npm; the registry is reachable),
    installed once per run under a file lock (an install per xdist worker cost ~50 s on 2 cores),
    then hard-linked into each worker's own directory: vitest writes its results cache inside
    node_modules, and two workers' runs must not share that file."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed: these tests install jest and vitest with npm")
    shared = run_wide_dir(tmp_path_factory) / "js-runners"
    with (shared.parent / "js-runners.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (shared / "installed").exists():
            install_js_runners(npm, shared)
    own = tmp_path_factory.mktemp("js-runners")
    copy = subprocess.run(
        ["cp", "-al", str(shared / "node_modules"), str(own)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert copy.returncode == 0, copy.stderr
    return own / "node_modules"


def run_wide_dir(factory: pytest.TempPathFactory) -> Path:
    """This run's temporary root: under xdist the parent of each worker's (pytest-N/popen-gwX)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def install_js_runners(npm: str, prefix: Path) -> None:
    shutil.rmtree(prefix, ignore_errors=True)  # a worker that failed half-way left it
    prefix.mkdir()
    argv = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "jest@30",
        "vitest@4",
    ]
    done = run_command(argv, cwd=prefix, timeout_s=600)
    if done.exit_code != 0 or not (prefix / "node_modules/.bin/vitest").exists():
        pytest.fail(
            f"`npm install jest@30 vitest@4` failed (exit {done.exit_code}; network or registry?):"
            f"\n{done.merged[-2000:]}"
        )
    print(f"npm install jest@30 vitest@4: {done.duration_s:.1f} s")
    (prefix / "installed").touch()


def js_project(root: Path, modules: Path, files: dict[str, str], *, esm: bool = False) -> Path:
    package = {"name": "demo", "private": True, "scripts": {"test": "jest"}}
    if esm:
        package["type"] = "module"
    write(root, {"package.json": json.dumps(package), **files})
    (root / "node_modules").symlink_to(modules, target_is_directory=True)
    return root


JEST_A = """\
const { half } = require('./src/calc');
describe('calc', () => {
  test('half of 4 (even) costs $2.0', () => { expect(half(4)).toBe(3); });
  test('half of 2', () => { expect(half(2)).toBe(1); });
  describe('odd', () => { test('throws inside the source', () => { half(3); }); });
});
test('top level bad', () => { expect(1).toBe(2); });
test('top level fine', () => {});
"""
JEST_B = "test('b passes', () => {});\ntest('b also passes', () => {});\n"
CALC_JS = "exports.half = (n) => { if (n % 2) { throw new Error('odd: ' + n); } return n / 2; };\n"


def test_jest_subset_runs_exactly_the_failing_tests(tmp_path: Path, js_runners: Path) -> None:
    root = js_project(
        tmp_path, js_runners, {"a.test.js": JEST_A, "b.test.js": JEST_B, "src/calc.js": CALC_JS}
    )
    stage = Stage(name="test", command=("npx", "jest"), why="")
    full, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert full.parsed.counts.ran == 7
    expected = {
        "calc \u203a half of 4 (even) costs $2.0",
        "calc \u203a odd \u203a throws inside the source",  # its innermost frame is src/calc.js
        "top level bad",
    }
    assert ids(full) == expected
    assert subset.stage.command[-2:] == ("--", r"(?:^|/)a\.test\.js$")
    assert "--bail" not in subset.stage.command
    assert ids(again) == expected
    assert again.parsed.counts.ran == 3  # "half of 2", "top level fine" and b.test.js: not run


def test_jest_subset_for_one_target_bails_and_runs_only_it(
    tmp_path: Path, js_runners: Path
) -> None:
    root = js_project(
        tmp_path, js_runners, {"a.test.js": JEST_A, "b.test.js": JEST_B, "src/calc.js": CALC_JS}
    )
    stage = Stage(name="test", command="node_modules/.bin/jest --ci", why="")
    full = run(root, stage)
    target = [f for f in full.parsed.errors if f.id == "top level bad"]
    subset = narrow(stage, target, tool=full.parsed.tool)
    assert subset is not None
    assert subset.stage.command == (
        "node_modules/.bin/jest --ci '--testNamePattern=^(?:top level bad)$' --bail "
        "--passWithNoTests -- '(?:^|/)a\\.test\\.js$'"
    )
    again = run(root, subset.stage)
    assert ids(again) == {"top level bad"}
    assert again.parsed.counts.ran == 1


def test_jest_subset_runs_touched_test_files_whole(tmp_path: Path, js_runners: Path) -> None:
    root = js_project(
        tmp_path,
        js_runners,
        {"a.test.js": JEST_A, "b.test.js": JEST_B, "c.test.js": JEST_B, "src/calc.js": CALC_JS},
    )
    stage = Stage(name="test", command=(str(js_runners / ".bin/jest"),), why="")
    _, subset, again = full_then_subset(root, stage, touched=("c.test.js", "src/calc.js"))
    assert subset.files == ("c.test.js",)
    assert not any(a.startswith("--testNamePattern") for a in subset.stage.command)
    assert again.parsed.counts.failed == 3
    assert again.parsed.counts.passed == 4  # a.test.js's two passing tests + c.test.js's two


def test_jest_suite_that_failed_to_run_is_not_narrowed(tmp_path: Path, js_runners: Path) -> None:
    root = js_project(
        tmp_path, js_runners, {"a.test.js": "test('x', () => {\n", "b.test.js": JEST_B}
    )
    stage = Stage(name="test", command=("npx", "jest"), why="")
    full = run(root, stage)
    assert full.verdict.value == "failed", full.result.merged
    assert full.parsed.errors
    assert narrow(stage, full.parsed.errors, tool=full.parsed.tool) is None


def test_npm_test_wrapper_is_not_narrowed(tmp_path: Path, js_runners: Path) -> None:
    root = js_project(
        tmp_path, js_runners, {"a.test.js": JEST_A, "b.test.js": JEST_B, "src/calc.js": CALC_JS}
    )
    wrapper = Stage(name="test", command=("npm", "test"), why="")
    full = run(root, wrapper)
    assert full.verdict.value == "failed", full.result.merged
    assert len(full.parsed.errors) == 3  # npm ran jest, and jest's failures were read
    assert narrow(wrapper, full.parsed.errors, tool=full.parsed.tool) is None
    for command in ("yarn test", "npx jest | tee out.txt", "jest --watchAll", "vitest", "jest -o"):
        stage = Stage(name="test", command=command, why="")
        assert narrow(stage, full.parsed.errors, tool="js") is None, command


def test_jest_failure_without_a_known_test_file_keeps_the_commands_paths() -> None:
    stage = Stage(name="test", command=("jest", "--ci", "src/"), why="")
    lost = Failure(kind=Kind.TEST, id="api \u203a times out", file="src/api.js")
    subset = narrow(stage, [lost], tool="js", fail_fast=False)
    assert subset is not None
    pattern = "--testNamePattern=^(?:api(?: | \u203a )times out)$"
    assert subset.stage.command == ("jest", "--ci", pattern, "--passWithNoTests", "--", "src/")
    assert narrow(stage, [lost], tool="js", touched=("src/api.test.js",)) is None


def test_vitest_file_level_and_project_prefixed_failures_run_in_full() -> None:
    stage = Stage(name="test", command=("vitest", "run"), why="")
    for failure_id in ("a.test.ts [ a.test.ts ]", "|unit| a.test.ts > t"):
        assert narrow(stage, [Failure(kind=Kind.TEST, id=failure_id)], tool="js") is None


VITEST_A = """\
import { describe, test, expect } from 'vitest';
import { half } from './src/calc.js';
describe('calc', () => {
  test('half of 4 (even) costs $2.0', () => { expect(half(4)).toBe(3); });
  test('half of 2', () => { expect(half(2)).toBe(1); });
  describe('odd', () => { test('throws inside the source', () => { half(3); }); });
});
test('top level bad', () => { expect(1).toBe(2); });
test('top level fine', () => {});
"""
VITEST_B = "import { test } from 'vitest';\ntest('b passes', () => {});\ntest('b too', () => {});\n"
CALC_ESM = "export const half = (n) => { if (n % 2) { throw new Error('odd'); } return n / 2; };\n"


def test_vitest_subset_runs_exactly_the_failing_tests(tmp_path: Path, js_runners: Path) -> None:
    files = {"alpha.test.js": VITEST_A, "beta.test.js": VITEST_B, "src/calc.js": CALC_ESM}
    root = js_project(tmp_path, js_runners, files, esm=True)
    stage = Stage(name="test", command=("node_modules/.bin/vitest", "run"), why="")
    full, subset, again = full_then_subset(root, stage, fail_fast=False)
    assert full.parsed.counts.ran == 7
    expected = {
        "alpha.test.js > calc > half of 4 (even) costs $2.0",
        "alpha.test.js > calc > odd > throws inside the source",
        "alpha.test.js > top level bad",
    }
    assert ids(full) == expected
    assert subset.stage.command[-1] == "alpha.test.js"
    assert ids(again) == expected
    assert again.parsed.counts.ran == 3


def test_vitest_subset_for_one_target_bails_and_runs_only_it(
    tmp_path: Path, js_runners: Path
) -> None:
    files = {"alpha.test.js": VITEST_A, "beta.test.js": VITEST_B, "src/calc.js": CALC_ESM}
    root = js_project(tmp_path, js_runners, files, esm=True)
    stage = Stage(name="test", command="npx vitest run --reporter=default", why="")
    full = run(root, stage)
    target = [f for f in full.parsed.errors if f.id.endswith("> odd > throws inside the source")]
    subset = narrow(stage, target, tool=full.parsed.tool)
    assert subset is not None
    assert subset.stage.command == (
        "npx vitest run --reporter=default "
        "'--testNamePattern=^(?:calc(?: | > )odd(?: | > )throws inside the source)$' "
        "--bail=1 --passWithNoTests alpha.test.js"
    )
    again = run(root, subset.stage)
    assert ids(again) == {"alpha.test.js > calc > odd > throws inside the source"}
    assert again.parsed.counts.ran == 1


# ---- independent stages in parallel (verify.run_cascade_parallel) ----


def _waits_for(peer: str, me: str, code: int) -> str:
    return (
        f"{PY} -c \"import pathlib, sys, time; pathlib.Path('{me}').touch(); "
        f"end = time.time() + 60\nwhile not pathlib.Path('{peer}').exists() and time.time() < end: "
        f"time.sleep(0.02)\nprint('saw peer' if pathlib.Path('{peer}').exists() else 'alone'); "
        f'sys.exit({code})"'
    )


def test_read_only_stages_run_concurrently(tmp_path: Path) -> None:
    from greenloop.detect.stages import Cascade
    from greenloop.verify.cascade import run_cascade_parallel

    lint = Stage(name="lint", command=_waits_for("t", "l", 0), why="")
    typ = Stage(name="type", command=_waits_for("l", "t", 0), why="")
    check = run_cascade_parallel(tmp_path, Cascade(stages=(lint, typ), source="x"), timeout=60)
    assert [r.result.stdout.strip() for r in check.runs] == ["saw peer", "saw peer"]
    assert check.verdict.value == "green"


def test_parallel_cascade_gives_the_sequential_result_and_digest(tmp_path: Path) -> None:
    import re

    from greenloop.detect.stages import Cascade
    from greenloop.digest import build_digest
    from greenloop.verify.cascade import run_cascade, run_cascade_parallel

    def cmd(out: str, code: int) -> str:
        return f"{PY} -c \"import sys; print('{out}'); sys.exit({code})\""

    stages = (
        Stage(name="lint", command=cmd("a.py:1:1: E501 line too long", 1), why=""),
        Stage(name="type", command=cmd("a.py:2: error: bad type  [arg-type]", 1), why=""),
        Stage(name="test", command=cmd("ok", 0), why=""),
    )
    cascade = Cascade(stages=stages, source="x")

    def shape(all_stages: bool, parallel: bool) -> tuple[object, ...]:
        run = run_cascade_parallel if parallel else run_cascade
        check = run(tmp_path, cascade, timeout=hang(60), all_stages=all_stages)
        text = re.sub(r"\d+\.\d+ s", "<t> s", build_digest(check, root=tmp_path).text)
        runs = [(r.stage.name, r.verdict, r.result.stdout) for r in check.runs]
        return runs, check.not_run, check.exit_code, text

    for all_stages in (False, True):
        assert shape(all_stages, parallel=True) == shape(all_stages, parallel=False)
    assert shape(False, parallel=True)[1] == ("type", "test")
