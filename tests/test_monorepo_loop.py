"""A monorepo's loop (issue 29): an iteration runs the packages its edit affects, the gate every
package. Real git repos; a pnpm-style workspace whose packages test with ``node --test`` (no
install), and a Cargo workspace of three path-dependent crates with no external dependency."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.loop.policy import Result

TEST_JS = """\
const test = require('node:test');
const assert = require('node:assert');
const {{ {name} }} = require('./index.js');

test('{name} of 2 and 3', () => {{ assert.strictEqual({name}(2, 3), {expect}); }});
test('{name} of 0 and 0', () => {{ assert.strictEqual({name}(0, 0), 0); }});
"""


def js_package(name: str, deps: dict[str, str], body: str, expect: int) -> dict[str, str]:
    manifest = {"name": f"@w/{name}", "scripts": {"test": "node --test"}, "dependencies": deps}
    return {
        f"packages/{name}/package.json": json.dumps(manifest, indent=2),
        f"packages/{name}/index.js": body,
        f"packages/{name}/index.test.js": TEST_JS.format(name=name, expect=expect),
    }


def js_workspace(*, core: str = "a + b", cli: str = "a * b") -> dict[str, str]:
    """core <- ui <- app, and cli on its own (a leaf nothing depends on)."""
    return {
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "package.json": json.dumps(
            {"name": "w", "private": True, "scripts": {"test": "pnpm -r test"}}
        ),
        ".gitignore": "node_modules/\n",
        **js_package("core", {}, f"exports.core = (a, b) => {core};\n", 5),
        **js_package(
            "ui",
            {"@w/core": "workspace:*"},
            "const { core } = require('../core/index.js');\nexports.ui = (a, b) => core(a, b) * 2;\n",
            10,
        ),
        **js_package(
            "app",
            {"@w/ui": "workspace:^"},
            "const { ui } = require('../ui/index.js');\nexports.app = (a, b) => ui(a, b) + 1 - 1;\n",
            10,
        ),
        **js_package("cli", {}, f"exports.cli = (a, b) => {cli};\n", 6),
    }


def events(result: LoopResult, kind: str) -> list[dict[str, Any]]:
    lines = (Path(result.record_dir) / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("kind") == kind]


def verify_log(result: LoopResult, n: int) -> str:
    return (Path(result.record_dir) / f"iter-{n}" / "verify.log").read_text()


def run(root: Path, steps: list[list[dict[str, Any]]]) -> tuple[LoopResult, list[str]]:
    lines: list[str] = []
    result = run_loop(
        root, scripted(steps), config=Config(max_iters=4, timeout=300.0), progress=lines.append
    )
    return result, lines


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_an_edit_in_a_leaf_package_runs_that_package_only_and_the_gate_every_package(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(js_workspace(cli="a + b + 1"))  # cli's both tests fail
    half = {"replace": "packages/cli/index.js", "old": "a + b + 1", "new": "a + b"}  # 0,0 passes
    fix = {"replace": "packages/cli/index.js", "old": "a + b", "new": "a * b"}
    result, lines = run(root, [[half], [fix]])
    assert result.result is Result.SUCCESS, result.reason
    assert "  packages (pnpm-workspace.yaml): 4; each iteration runs" in lines[0]  # the plan
    # iteration 1: only cli ran, still failing: the gate was not reached
    assert "iter 1 · packages: packages/cli changed → @w/cli" in lines
    log1 = verify_log(result, 1)
    assert "cd packages/cli && npm test" in log1
    assert "packages/core" not in log1
    assert "packages/ui" not in log1
    assert result.history[1].subset
    # iteration 2: cli green, then the gate ran every package
    log2 = verify_log(result, 2)
    for name in ("core", "ui", "app", "cli"):
        assert f"cd packages/{name} && npm test" in log2
    ran = [[r["package"] for r in e["ran"]] for e in events(result, "packages")]
    assert ran == [["@w/cli"], ["@w/cli"]]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_an_edit_in_a_shared_package_runs_it_and_its_dependents_not_the_others(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(js_workspace(core="a - b"))  # core, ui and app fail; cli passes
    result, lines = run(
        root, [[{"replace": "packages/core/index.js", "old": "a - b", "new": "a + b"}]]
    )
    assert result.result is Result.SUCCESS, result.reason
    assert (
        "iter 1 · packages: packages/core changed → @w/core, @w/ui (depends on @w/core), "
        "@w/app (depends on @w/ui)"
    ) in lines
    (packages,) = events(result, "packages")
    assert [r["package"] for r in packages["ran"]] == ["@w/core", "@w/ui", "@w/app"]
    assert packages["verdict"] == "green"
    assert "cd packages/cli && npm test" in verify_log(result, 1)  # the gate: every package


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_root_level_file_runs_every_package(make_repo: Callable[..., Path]) -> None:
    root = make_repo(js_workspace(cli="a + b"))
    steps = [
        [
            {"write": "NOTES.md", "text": "notes\n"},
            {"replace": "packages/cli/index.js", "old": "a + b", "new": "a * b"},
        ]
    ]
    result, lines = run(root, steps)
    assert result.result is Result.SUCCESS, result.reason
    assert "iter 1 · packages: a root-level file changed (NOTES.md) → every package" in lines
    assert events(result, "packages") == []


CRATE = """\
[package]
name = "{name}"
version = "0.1.0"
edition = "2021"

[dependencies]
{deps}
"""


def crate(name: str, deps: str, body: str, test: str) -> dict[str, str]:
    return {
        f"crates/{name}/Cargo.toml": CRATE.format(name=name, deps=deps),
        f"crates/{name}/src/lib.rs": f"{body}\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn works() {{\n        {test}\n    }}\n}}\n",
    }


def cargo_workspace(*, base: str = "a + b", top: str = "mid(a, b) + 1") -> dict[str, str]:
    """base <- mid <- top, and solo on its own: path dependencies, nothing from crates.io."""
    return {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n',
        ".gitignore": "target/\nCargo.lock\n",
        **crate(
            "base",
            "",
            f"pub fn base(a: i64, b: i64) -> i64 {{\n    {base}\n}}",
            "assert_eq!(base(2, 3), 5);",
        ),
        **crate(
            "mid",
            'base = { path = "../base" }',
            "pub use base::base;\n\npub fn mid(a: i64, b: i64) -> i64 {\n    base(a, b) * 2\n}",
            "assert_eq!(mid(2, 3), 10);",
        ),
        **crate(
            "top",
            'mid = { path = "../mid" }',
            f"use mid::mid;\n\npub fn top(a: i64, b: i64) -> i64 {{\n    {top}\n}}",
            "assert_eq!(top(2, 3), 11);",
        ),
        **crate("solo", "", "pub fn solo() -> i64 {\n    7\n}", "assert_eq!(solo(), 7);"),
    }


needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")


@needs_cargo
def test_an_edit_in_the_top_crate_runs_that_crate_only_and_the_gate_every_crate(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(cargo_workspace(top="mid(a, b) + 2"))
    half = {"replace": "crates/top/src/lib.rs", "old": "mid(a, b) + 2", "new": "mid(a, b) + 3"}
    fix = {"replace": "crates/top/src/lib.rs", "old": "mid(a, b) + 3", "new": "mid(a, b) + 1"}
    result, lines = run(root, [[half], [fix]])
    assert result.result is Result.SUCCESS, result.reason
    # iteration 1: top's failing test first, in its folder (every crate has a tests::works); red,
    # so nothing else ran
    (first, second) = events(result, "subset")
    assert first["command"] == "cd crates/top && cargo test -- --exact tests::works"
    assert first["verdict"] == "failed"
    log1 = verify_log(result, 1)
    assert "crates/base" not in log1
    # iteration 2: that test green, then top alone, then every crate
    assert second["verdict"] == "green"
    assert "iter 2 · affected: by package (a monorepo: the packages the edit affects)" in lines
    assert "iter 2 · packages: crates/top changed → top" in lines
    log2 = verify_log(result, 2)
    assert all(f"cd crates/{c} && cargo test" in log2 for c in ("base", "mid", "top", "solo"))


@needs_cargo
def test_an_edit_in_the_base_crate_runs_it_and_the_crates_that_depend_on_it(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(cargo_workspace(base="a - b"))
    result, lines = run(
        root, [[{"replace": "crates/base/src/lib.rs", "old": "a - b", "new": "a + b"}]]
    )
    assert result.result is Result.SUCCESS, result.reason
    assert (
        "iter 1 · packages: crates/base changed → base, mid (depends on base), top (depends on mid)"
        in lines
    )
    (packages,) = events(result, "packages")
    assert "solo" not in [r["package"] for r in packages["ran"]]
    assert "cd crates/solo && cargo test" in verify_log(result, 1)  # the gate: every crate


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_report_says_which_packages_each_iteration_ran(make_repo: Callable[..., Path]) -> None:
    from greenloop.report import render as report

    root = make_repo(js_workspace(cli="a + b + 1"))
    half = {"replace": "packages/cli/index.js", "old": "a + b + 1", "new": "a + b"}
    fix = {"replace": "packages/cli/index.js", "old": "a + b", "new": "a * b"}
    result, _ = run(root, [[half], [fix]])
    assert result.history[1].ran == "packages: packages/cli changed → @w/cli: failed"
    text = report.render_run(report.loop_json(result), "text")
    assert "iter 1: failed (affected packages only), 1 failing" in text
    assert "    ran: packages: packages/cli changed → @w/cli: failed" in text
    assert "ran: packages: packages/cli changed → @w/cli: green; the full cascade" in text


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_fixing_one_package_is_no_regression_when_another_package_fails_more(
    make_repo: Callable[..., Path],
) -> None:
    """core's bug fails 3 tests (core, ui, app: one each), cli's 2: the gate runs every package
    and counts them all, so fixing core reads 5 → 2, not 1 (core alone) → 2 (cli)."""
    root = make_repo(js_workspace(core="a - b", cli="a - b - 9"))
    fix_core = {"replace": "packages/core/index.js", "old": "a - b", "new": "a + b"}
    fix_cli = {"replace": "packages/cli/index.js", "old": "a - b - 9", "new": "a * b"}
    result, _ = run(root, [[fix_core], [fix_cli]])
    assert result.result is Result.SUCCESS, result.reason
    assert [row.failures + row.errors for row in result.history] == [5, 2, 0]
    assert not any(row.rolled_back for row in result.history)


def py_package(name: str, body: str) -> dict[str, str]:
    """A pytest package run by this interpreter (its AGENTS.md names the command)."""
    return {
        f"packages/{name}/pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1"\n\n'
        "[tool.pytest.ini_options]\n",
        f"packages/{name}/AGENTS.md": f"Test command: `{sys.executable} -m pytest -q -p no:cacheprovider`\n",
        f"packages/{name}/{name}.py": f"def add(a, b):\n    return {body}\n",
        f"packages/{name}/tests/test_{name}.py": f"from {name} import add\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n\n\n"
        "def test_same():\n    assert add(1, 1) == 2\n",
    }


def test_a_packages_failing_tests_run_first_in_its_folder_then_the_package_then_every_package(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
            ".gitignore": "__pycache__/\n",
            **py_package("calc", "a - b"),  # test_add and test_same fail
            **py_package("other", "a + b"),
        }
    )
    half = {"replace": "packages/calc/calc.py", "old": "a - b", "new": "a + b - (a == 1)"}
    fix = {"replace": "packages/calc/calc.py", "old": "a + b - (a == 1)", "new": "a + b"}
    result, _ = run(root, [[half], [fix]])
    assert result.result is Result.SUCCESS, result.reason
    subsets = events(result, "subset")
    # the failing tests, as the package's own pytest names them, run in its folder (the targets
    # stay until a full run: iteration 2 runs both again)
    both = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_same"]
    assert [e["tests"] for e in subsets] == [both, both]
    assert all(e["command"].startswith("cd packages/calc && ") for e in subsets)
    assert [e["verdict"] for e in subsets] == ["failed", "green"]
    # the digest still names the repository's file
    digest = (Path(result.record_dir) / "iter-1" / "digest.md").read_text()
    assert "on the previously failing tests only: 1 failed, 1 passed" in digest
    assert "at packages/calc/tests/test_calc.py:13" in digest
    # the verifier the prompt names runs from the root as written: each cd in its own subshell
    prompt = (Path(result.record_dir) / "iter-1" / "prompt.md").read_text()
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    assert f"`(cd packages/calc && {command}) && (cd packages/other && {command})`" in prompt
    # then the package, then every package at the gate
    ran = [[r["package"] for r in e["ran"]] for e in events(result, "packages")]
    assert ran == [["calc"]]
    assert "cd packages/other && " in verify_log(result, 2)
