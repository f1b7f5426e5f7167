"""Verdicts on REAL output: the runners whose verdicts were wrong (issue 10), on captured runs.

Cases come from scripts/capture_outputs.py (small projects, tests/resources/outputs) and
scripts/capture_verdict_cases.py (open-source projects, tests/resources/real); their facts come
from the runner's own structured report, never from greenloop's parsers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import Digest, build_digest
from greenloop.parsers import ParseResult, ParserInput, parse_output
from greenloop.parsers.model import Failure, Kind
from greenloop.processes.process import ProcessResult, run_command
from greenloop.report.render import check_json
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import Verdict, classify

RESOURCES = Path(__file__).parent / "resources"
REAL_CASES = (
    "go/sync-0",
    "go/sync-1",
    "go/golang-lru-race-1",
    "go/golang-lru-example-1",
    "node-test/ccount-0",
    "node-test/ccount-1",
    "node-test/ccount-2",
)
OUTPUT_CASES = (
    "go/log_skip_green_verbose",
    "go/log_skip_green_json",
    "go/log_skip_red",
    "go/log_skip_red_verbose",
    "go/log_skip_red_json",
    "go/two_packages",
    "go/two_packages_verbose",
    "go/two_packages_json",
    "node-test/load_error",
    "node-test/load_error_spec",
    "node-test/esm_spec",
    *(f"{tool}/{case}" for tool in ("uvu", "ava", "tap") for case in ("failures", "green")),
    "mocha/spec",
    "mocha/json",
    "mocha/green",
)


def _load(name: str) -> dict[str, Any]:
    real = RESOURCES / "real" / name / "case.json"
    path = real if real.exists() else RESOURCES / "outputs" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _judge(data: dict[str, Any]) -> tuple[ParseResult, Verdict]:
    argv = tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"])
    inp = ParserInput(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
        root=data["cwd_placeholder"],
    )
    run = ProcessResult(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=inp.stdout,
        stderr=inp.stderr,
        merged=inp.merged,
    )
    parsed = parse_output(inp)
    return parsed, classify(run, parsed, command=" ".join(argv)).verdict


def _expected_verdict(facts: dict[str, Any]) -> str:
    if "verdict" in facts:
        return str(facts["verdict"])
    return "failed" if facts["count_failed"] else "green"


def _located(parsed: ParseResult, frame: str) -> bool:
    """The fact's file:line, as the runner printed it (go prints test files without their folder)."""
    locations = {f"{f.file}:{f.line}" for f in parsed.failures}
    locations |= {f"{fr.file}:{fr.line}" for f in parsed.failures for fr in f.frames}
    return any(frame == loc or frame.endswith("/" + loc) for loc in locations)


@pytest.mark.parametrize("name", REAL_CASES + OUTPUT_CASES)
def test_real_output_gets_the_verdict_ids_and_counts_of_the_runners_own_report(name: str) -> None:
    data = _load(name)
    facts = data["facts"]
    parsed, verdict = _judge(data)
    assert verdict == _expected_verdict(facts), (parsed.failures[:3], parsed.counts)
    ids = [f.id for f in parsed.errors]
    assert len(ids) == len(facts["failing_ids"]), ids
    for wanted in facts["failing_ids"]:  # go names tests by package: example.com/m.TestAdd
        assert any(i == wanted or i.endswith("." + wanted) for i in ids), (wanted, ids)
    if facts.get("counts"):
        got = parsed.counts
        assert {"passed": got.passed, "failed": got.failing, "skipped": got.skipped} == (
            facts["counts"]
        )
    if facts["error_type"]:
        assert parsed.errors[0].error_type == facts["error_type"], parsed.errors[0]
    if facts["message"]:
        first = parsed.errors[0]
        assert facts["message"] in " ".join((first.message, *first.detail)), first
    if facts["frame"]:
        assert _located(parsed, facts["frame"]), parsed.failures[:2]


@pytest.mark.parametrize(
    "name", ["node-test/ccount-1", "node-test/ccount-2", "node-test/load_error_spec"]
)
def test_node_test_file_that_fails_to_load_is_exit_1_with_the_errors_file_line_first(
    name: str,
) -> None:
    data = _load(name)
    parsed, verdict = _judge(data)
    digest = _digest(data, parsed, verdict)
    assert verdict.exit_code == 1
    body = digest.split("\n\n", 1)[1]  # after the headline
    first_location = next(line for line in body.splitlines() if line.strip().startswith("at "))
    assert first_location.strip() == f"at {data['facts']['frame']}", digest
    assert "file://" not in digest


def test_node_test_spec_paths_are_repo_relative_without_util_inspect_leftovers() -> None:
    data = _load("node-test/esm_spec")
    parsed, verdict = _judge(data)
    digest = _digest(data, parsed, verdict)
    assert "at test/range.test.js:6" in digest
    for leftover in ("file://", "generatedMessage", "code: 'ERR_ASSERTION'"):
        assert leftover not in digest, digest
    assert all(line.strip() != "}" for line in digest.splitlines()), digest


def _digest(data: dict[str, Any], parsed: ParseResult, verdict: Verdict) -> str:
    return _check_result(data, parsed, verdict)[1].text


def _check_result(
    data: dict[str, Any], parsed: ParseResult, verdict: Verdict
) -> tuple[CheckResult, Digest]:
    argv = tuple(data["argv"])
    run = ProcessResult(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
    )
    stage = Stage(name="test", command=argv, why="captured")
    judged = classify(run, parsed, command=stage.display)
    result = CheckResult(
        cascade=Cascade(stages=(stage,), source="test"),
        runs=(StageRun(stage=stage, result=run, parsed=parsed, classification=judged),),
        verdict=verdict,
        duration_s=1.0,
    )
    return result, build_digest(result, root=data["cwd_placeholder"])


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("go/sync-0", "29 passed"),
        ("mocha/green", "3 passed, 1 skipped"),
        ("uvu/green", "3 passed, 1 skipped"),
    ],
)
def test_green_run_says_how_many_tests_ran_in_text_and_json(name: str, said: str) -> None:
    data = _load(name)
    parsed, verdict = _judge(data)
    assert verdict is Verdict.GREEN
    result, digest = _check_result(data, parsed, verdict)
    assert digest.text.splitlines()[0].endswith(f": {said}."), digest.text
    counts = check_json(result, digest)["counts"]
    assert counts is not None
    assert counts["passed"] == data["facts"]["counts"]["passed"]


@pytest.mark.parametrize(
    "name", ["vitest/failures", "jest/failures", "node-test/spec", "mocha/spec", "ava/failures"]
)
def test_every_test_runner_summarises_with_failed_and_passed_counts(name: str) -> None:
    data = _load(name)
    parsed, verdict = _judge(data)
    headline = _digest(data, parsed, verdict).splitlines()[0]
    assert "problem" not in headline, headline
    assert headline.endswith(f"{parsed.counts.failing} failed, {parsed.counts.passed} passed.") or (
        f"{parsed.counts.failing} failed, {parsed.counts.passed} passed, " in headline
    ), headline


def test_rustc_error_repeated_per_macro_expansion_is_listed_once_with_its_count() -> None:
    data = _load("cargo/build_macro_repeat")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    assert [f.id for f in parsed.errors] == ["src/main.rs:3:23 E0308"]
    assert "(reported 3 times: once per macro expansion)" in parsed.errors[0].detail
    assert "same error" not in _digest(data, parsed, verdict)


def test_rustc_notes_into_the_toolchain_library_are_dropped() -> None:
    data = _load("cargo/build_std_note")
    parsed, verdict = _judge(data)
    digest = _digest(data, parsed, verdict)
    assert "/rustc/" in data["stdout"] + data["stderr"]
    assert "/rustc/" not in digest
    assert "associated function defined here" not in digest
    assert "expected `usize`, found `&str`" in digest


def test_vitest_caret_line_is_kept_with_the_source_line_it_points_at() -> None:
    data = _load("vitest/failures")
    parsed, _ = _judge(data)
    for failure in parsed.errors:
        carets = [
            i for i, d in enumerate(failure.detail) if d.lstrip().startswith("| ") and "^" in d
        ]
        assert carets, failure.detail
        for i in carets:
            assert i > 0
            assert failure.detail[i - 1].lstrip()[:1].isdigit(), failure.detail


def test_vitest_counts_are_vitests_when_a_stray_node_test_import_prints_its_tap_summary() -> None:
    data = _load("vitest/defu-2")  # test/utils.test.ts imports describe from node:test
    assert "# tests 0" in data["stdout"] + data["stderr"]
    parsed, verdict = _judge(data)
    assert verdict == "failed"
    assert (parsed.counts.passed, parsed.counts.failing) == (22, 1)


def test_pytest_conftest_importing_the_projects_syntax_error_is_failed_not_environment() -> None:
    data = _load("pytest/wcwidth-2")  # tests/conftest.py imports wcwidth: pytest exits 4
    assert data["exit_code"] == 4
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    digest = _digest(data, parsed, verdict)
    assert "SyntaxError: expected ':'" in digest
    # the output is smaller than its digest would be: it is shown whole, in the tool's words
    assert 'wcwidth/wcwidth/_width.py", line 472\n' in digest, digest
    assert "if current_col > max_extent" in digest


@pytest.mark.parametrize(
    ("package", "verdict"),
    [("def broken(:\n", Verdict.FAILED), ("import no_such_dist_xyz\n", Verdict.ENV_FAILURE)],
)
def test_pytest_conftest_import_error_is_the_codes_unless_a_module_is_missing(
    tmp_path: Path, package: str, verdict: Verdict
) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text(package)
    (tmp_path / "conftest.py").write_text("import mypkg\n")
    (tmp_path / "test_it.py").write_text("def test_it():\n    assert True\n")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    run = run_command(argv, cwd=tmp_path, timeout_s=120)
    assert run.exit_code == 4, run.merged
    parsed = parse_output(
        ParserInput(argv=run.argv, stdout=run.stdout, stderr=run.stderr, root=str(tmp_path))
    )
    judged = classify(run, parsed, command=" ".join(argv), repo_modules={"mypkg"})
    assert judged.verdict is verdict, judged


def _live(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[ProcessResult, ParseResult]:
    run = run_command(argv, cwd=cwd, timeout_s=120, env=env)
    parsed = parse_output(
        ParserInput(
            argv=run.argv,
            exit_code=run.exit_code,
            stdout=run.stdout,
            stderr=run.stderr,
            merged=run.merged,
            root=str(cwd),
        )
    )
    return run, parsed


@pytest.mark.parametrize(
    ("args", "evidence"),
    [
        (("-m", "mypy"), "mypy: error: Missing target module, package, files, or command."),
        (("-m", "mypy", "--no-such-flag", "."), "mypy: error: unrecognized arguments"),
        (("ruff", "check", "--no-such-flag", "."), "error: unexpected argument '--no-such-flag'"),
    ],
)
def test_a_verifier_command_its_tool_refuses_as_a_usage_error_is_an_environment_failure(
    tmp_path: Path, args: tuple[str, ...], evidence: str
) -> None:
    # more-itertools: `[mypy]` in setup.cfg without `files =`, so a bare `mypy` exits 2 at its
    # usage; no edit of the code fixes the command line, the agent must not be sent it
    (tmp_path / "setup.cfg").write_text("[mypy]\nstrict = true\n")
    (tmp_path / "ok.py").write_text("X: int = 1\n")
    tool = str(Path(sys.executable).with_name(args[0])) if args[0] == "ruff" else sys.executable
    run, parsed = _live([tool, *args[1:]] if args[0] == "ruff" else [tool, *args], tmp_path)
    assert run.exit_code == 2, run.merged
    judged = classify(run, parsed, command=" ".join(run.argv))
    assert judged.verdict is Verdict.ENV_FAILURE, judged
    assert judged.evidence.startswith(evidence)
    assert judged.advice.startswith("Fix the stage's command")


def test_a_type_error_mypy_finds_is_still_the_codes_failure(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[mypy]\nstrict = true\n")
    (tmp_path / "bad.py").write_text('X: int = "one"\n')
    run, parsed = _live([sys.executable, "-m", "mypy", "."], tmp_path)
    assert run.exit_code == 1, run.merged
    assert classify(run, parsed, command="mypy .").verdict is Verdict.FAILED


def _doctested_package(root: Path) -> None:
    """sortedcontainers' layout: src/ doctested as modules, tests/ importing the package."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "src" / "pkg" / "mod.py").write_text(
        'def two():\n    """\n    >>> two()\n    2\n    """\n    return 2\n'
    )
    (root / "tests" / "test_a.py").write_text(
        "import pkg.mod\n\n\ndef test_two():\n    assert pkg.mod.two() == 2\n"
    )
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests", "src/pkg"]\naddopts = "--doctest-modules"\n'
    )


def test_pytest_importing_the_package_from_another_checkout_is_an_environment_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a second clone whose venv's editable install points at the first: pytest collects this
    # clone's src/pkg/mod.py, but `pkg` was already imported from the other one
    here, other = tmp_path / "here", tmp_path / "other"
    _doctested_package(here)
    _doctested_package(other)
    monkeypatch.setenv("PYTHONPATH", str(other / "src"))
    run, parsed = _live([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], here)
    assert run.exit_code == 2, run.merged
    assert "import file mismatch" in run.merged
    judged = classify(run, parsed, command="pytest", repo_modules={"pkg"}, root=str(here))
    assert judged.verdict is Verdict.ENV_FAILURE, judged
    assert str(other / "src" / "pkg" / "mod.py") in judged.evidence
    # the failure says what pytest said, not only the file's name (it used to be empty)
    assert parsed.failures[0].message == "import file mismatch:"
    assert any("has this __file__ attribute" in line for line in parsed.failures[0].detail)


def test_pytest_test_files_sharing_a_basename_are_the_codes_failure_with_pytests_words(
    tmp_path: Path,
) -> None:
    for sub, name in (("a", "one"), ("b", "two")):
        (tmp_path / "tests" / sub).mkdir(parents=True)
        (tmp_path / "tests" / sub / "test_x.py").write_text(
            f"def test_{name}():\n    assert True\n"
        )
    run, parsed = _live([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], tmp_path)
    assert run.exit_code == 2, run.merged
    judged = classify(run, parsed, command="pytest", root=str(tmp_path))
    assert judged.verdict is Verdict.FAILED, judged
    failure = parsed.failures[0]
    assert (failure.id, failure.message) == ("tests/b/test_x.py", "import file mismatch:")
    assert any("unique basename" in line for line in failure.detail)


@pytest.mark.parametrize(
    "name", ["xo/camelcase-1", "tsd/camelcase-1", "tsd/escape-string-regexp-0"]
)
def test_eslint_formatter_pretty_reports_of_xo_and_tsd_get_the_tools_own_facts(name: str) -> None:
    # sindresorhus' `xo && ava && tsd`: both print eslint-formatter-pretty, which no parser read
    data = _load(name)
    facts = data["facts"]
    parsed, verdict = _judge(data)
    assert verdict == facts["verdict"], parsed.failures[:2]
    assert parsed.counts.errors == facts["errors"]
    first = parsed.errors[0]
    if facts["verdict"] == "failed":
        assert facts["message"] in first.message
        assert f"{first.file}:{first.line}" == facts["frame"]
        assert [f.code for f in parsed.errors if f.code] == facts["failing_ids"]
    else:  # tsd's TypeScript against a newer @types/node: every error is node_modules'
        assert all(f.file.startswith("node_modules/") for f in parsed.errors)


def test_a_type_checkers_errors_inside_node_modules_are_listed_after_the_repositorys_own() -> None:
    data = _load("tsd/escape-string-regexp-0")
    own = "  index.test-d.ts:4:19\n  \u2716  4:19  Argument of type string is not assignable.\n\n"
    data["stderr"] = data["stderr"].replace("\n\n  2791 errors", f"\n\n{own}  2792 errors")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED  # one error of the repository's own: the code's failure
    assert (parsed.errors[0].file, parsed.errors[0].line) == ("index.test-d.ts", 4)


def test_every_error_inside_dependencies_is_not_the_environments_fault_if_the_report_was_cut() -> (
    None
):
    data = _load("tsd/escape-string-regexp-0")
    data["stderr"] = data["stderr"].split("\n\n  2791 errors")[0]  # node cut it before the end
    _, verdict = _judge(data)
    assert verdict is Verdict.FAILED


@pytest.mark.parametrize(
    ("imported", "package_kept", "verdict"),
    [
        ("mypkg", True, Verdict.ENV_FAILURE),  # a fresh clone, never `pip install -e .`'d
        ("mypgk", True, Verdict.FAILED),  # a misspelt import: the code's
    ],
)
def test_a_src_layout_package_nobody_installed_is_the_environments_not_the_codes(
    tmp_path: Path, imported: str, package_kept: bool, verdict: Verdict
) -> None:
    if package_kept:
        (tmp_path / "src" / "mypkg").mkdir(parents=True)
        (tmp_path / "src" / "mypkg" / "__init__.py").write_text("def f():\n    return 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_f.py").write_text(
        f"from {imported} import f\n\n\ndef test_f():\n    assert f() == 1\n"
    )
    run, parsed = _live([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], tmp_path)
    assert run.exit_code == 2, run.merged
    modules = {"mypkg"} if package_kept else set()
    judged = classify(run, parsed, command="pytest", repo_modules=modules, root=str(tmp_path))
    assert judged.verdict is verdict, judged
    if verdict is Verdict.ENV_FAILURE:
        assert "pip install -e ." in judged.advice


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_that_cannot_download_a_dependency_is_an_environment_failure(tmp_path: Path) -> None:
    # a crate with a dependency, checked where crates.io cannot be reached (this machine, a CI
    # runner offline): cargo exits 101, which is not the code's failure
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text("pub fn one() -> u32 {\n    1\n}\n")
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "offline"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\nitoa = "1"\n'
    )
    (tmp_path / ".cargo").mkdir()  # a registry no resolver knows, so the test never goes online
    (tmp_path / ".cargo" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "nowhere"\n\n'
        '[source.nowhere]\nregistry = "sparse+https://nowhere.invalid/index/"\n\n[net]\nretry = 0\n'
    )
    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    run, parsed = _live(["cargo", "test"], tmp_path, env)
    assert run.exit_code == 101, run.merged
    judged = classify(run, parsed, command="cargo test", root=str(tmp_path))
    assert judged.verdict is Verdict.ENV_FAILURE, judged
    assert "nowhere.invalid" in judged.evidence


def test_a_rust_test_that_caught_a_panic_is_named_by_the_panic_that_ended_it() -> None:
    # scopeguard's tests panic on purpose inside catch_unwind, then assert: the assertion's panic
    # failed the test, not the 'failure' the test expected and caught
    data = _load("cargo-test/scopeguard-1")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    got = {f.id: f"{f.file}:{f.line} {f.message}" for f in parsed.errors}
    assert got == data["facts"]["ending_panics"]
    caught = next(f for f in parsed.errors if f.id == "tests::test_defer_success_2")
    assert any("src/lib.rs:524" in line and "failure" in line for line in caught.detail)


def test_a_go_data_race_names_both_accesses_the_race_detector_reported() -> None:
    # golang-lru with `go test -race`: Get unlocks before it reads the list; the test fails with
    # testing.go's "race detected during execution of test", the report above it says where
    data = _load("go/golang-lru-race-1")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    first = parsed.errors[0]
    assert first.error_type == "DATA RACE"
    assert "race detected" not in first.message
    for access in data["facts"]["race_accesses"]:
        assert f"{access['access']} at {access['frames'][0]}" in first.message, first.message
    said = " ".join((*first.detail, *(f"{f.file}:{f.line}" for f in first.frames)))
    for access in data["facts"]["race_accesses"]:
        assert all(frame in said for frame in access["frames"][1:3]), (access, said)


def test_a_go_modules_internal_package_is_the_projects_own_code_in_the_digest() -> None:
    # golang-lru's list is internal/list.go: the race's innermost frame, not node's internal/*.js
    data = _load("go/golang-lru-race-1")
    parsed, verdict = _judge(data)
    innermost = data["facts"]["race_accesses"][0]["frames"][0]
    assert innermost.startswith("internal/")
    assert f"  at {innermost} in " in _digest(data, parsed, verdict)


def test_a_failed_go_example_shows_the_line_it_printed_and_the_line_its_comment_wants() -> None:
    data = _load("go/golang-lru-example-1")
    parsed, _ = _judge(data)
    example = next(f for f in parsed.errors if f.id.endswith(".ExampleLRU"))
    wanted = data["facts"]["examples"]["ExampleLRU"]
    got, want = next((g, w) for g, w in zip(wanted["got"], wanted["want"], strict=True) if g != w)
    assert got in example.message, example
    assert want in example.message, example
    assert [*wanted["got"], *wanted["want"]] == [
        d for d in example.detail if d not in ("got:", "want:")
    ]


def test_clippy_names_the_lint_of_every_error_not_only_of_the_first_that_says_deny() -> None:
    # clippy -D warnings: the `-D clippy::…` / #[allow(…)] notes come with a lint's first error
    # only; each error's help URL still names its lint
    data = _load("cargo-clippy/scopeguard-0")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    got = [f"{f.file}:{f.line} {f.code}" for f in parsed.errors]
    assert got == data["facts"]["diagnostics"]
    assert {f.kind for f in parsed.errors} == {Kind.LINT}


def _classify_in(data: dict[str, Any], root: Path) -> Any:
    """The captured run classified beside ``root``'s files (the checkout is gone)."""
    parsed, _ = _judge(data)
    run = ProcessResult(
        argv=tuple(data["argv"]),
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
    )
    return classify(run, parsed, command=" ".join(data["argv"]), root=str(root))


def test_a_js_project_importing_its_own_unbuilt_package_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    # ohash's src/hash.ts imports "ohash/crypto": package.json's exports send it to dist/, which
    # `pnpm build` writes (its CI builds before vitest); a fresh clone fails every suite on it
    data = _load("vitest/ohash-0")
    manifest = data["repo_files"]["package.json"]
    (tmp_path / "package.json").write_text(manifest)
    judged = _classify_in(data, tmp_path)
    assert judged.verdict.value == data["facts"]["verdict"] == "env_failure"
    assert data["facts"]["unresolved"][0] in judged.evidence
    assert "npm run build" in judged.advice
    for built in re.findall(r'"\./(dist/[^"]+\.mjs)"', manifest):  # built: the import is the code's
        (tmp_path / built).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / built).write_text("export {}\n")
    assert _classify_in(data, tmp_path).verdict is Verdict.FAILED


def test_a_js_import_of_a_declared_dependency_missing_from_node_modules_is_the_environments(
    tmp_path: Path,
) -> None:
    data = _load("vitest/ohash-0")
    manifest: dict[str, Any] = {"name": "app", "devDependencies": {"ohash": "^2.0.0"}}
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    (tmp_path / "node_modules").mkdir()
    judged = _classify_in(data, tmp_path)
    assert judged.verdict is Verdict.ENV_FAILURE
    assert "'ohash'" in judged.reasons[0]
    del manifest["devDependencies"]  # imported but never declared: the code's mistake
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    assert _classify_in(data, tmp_path).verdict is Verdict.FAILED


def test_a_lint_error_on_an_import_of_build_output_not_built_yet_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    # jest-extended's all.js requires ./dist/all; package.json publishes dist/, which `yarn build`
    # writes: greenloop's zero-config lint stage (`eslint .`) fails on every fresh clone
    data = _load("eslint/jest-extended-0")
    (tmp_path / "package.json").write_text(data["repo_files"]["package.json"])
    judged = _classify_in(data, tmp_path)
    assert judged.verdict.value == data["facts"]["verdict"] == "env_failure"
    assert "./dist/all" in judged.evidence
    assert "npm run build" in judged.advice
    (tmp_path / "dist").mkdir()  # built, and still unresolved: the code's (a wrong path)
    assert _classify_in(data, tmp_path).verdict is Verdict.FAILED


def test_vitest_passing_with_an_obsolete_snapshot_is_a_soft_success_that_names_it() -> None:
    # a test renamed after its snapshot was written: vitest exits 0 with "1 obsolete"; the green
    # stands (vitest's own verdict) but says which snapshot no test wrote, and why that matters
    data = _load("vitest/ohash-1")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.GREEN
    ((file, keys),) = data["facts"]["obsolete"].items()
    assert [(f.file, f.severity) for f in parsed.warnings] == [(file, "warning")] * len(keys)
    assert keys[0] in parsed.warnings[0].message
    assert parsed.counts.passed == data["facts"]["counts"]["passed"]
    run = ProcessResult(
        argv=tuple(data["argv"]), exit_code=0, stdout=data["stdout"], stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
    )  # fmt: skip
    judged = classify(run, parsed, command="npx vitest run")
    assert judged.soft
    stage = Stage(name="test", command=tuple(data["argv"]), why="case")
    checked = CheckResult(
        cascade=Cascade(stages=(stage,), source="case"),
        runs=(StageRun(stage=stage, result=run, parsed=parsed, classification=judged),),
        verdict=judged.verdict,
        duration_s=1.0,
    )
    text = build_digest(checked, root=data["cwd_placeholder"]).text
    assert "with warnings" in text
    assert f"{file}: {keys[0]}" in text


def test_jest_failing_on_an_obsolete_snapshot_names_it_and_its_test_file() -> None:
    # jest-extended, a test renamed: jest writes its new snapshot, keeps the old key, and exits 1
    # with all 901 tests passing; the key is what the agent must see (not "no failures reported")
    data = _load("jest/jest-extended-1")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    ((file, keys),) = data["facts"]["obsolete"].items()
    assert [(f.file, f.error_type) for f in parsed.errors] == [(file, "obsolete snapshot")] * len(
        keys
    )
    assert all(key in f.message for key, f in zip(keys, parsed.errors, strict=True))
    digest = _digest(data, parsed, verdict)
    assert f"FIRST ERROR: {file}: {keys[0]}" in digest
    assert f"{data['facts']['counts']['passed']} passed" in digest


def test_jest_with_colour_names_each_suite_that_failed_to_run_once() -> None:
    # jest-extended's `npm test` is `jest --color=true`: its " FAIL " badge is padded (no FAIL at
    # column 0, the vitest shape), and with 79 files jest repeats every failure in its recap
    data = _load("jest/jest-extended-2")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    assert sorted(f.id for f in parsed.errors) == sorted(data["facts"]["failing_ids"])
    assert parsed.counts.errors == len(data["facts"]["failing_ids"])
    first = parsed.errors[0]
    assert first.id == data["facts"]["frame"].rsplit(":", 1)[0]
    assert f"error {data['facts']['error_type']}: {data['facts']['message']}" in first.message


def test_a_failed_rust_doc_test_is_located_at_its_example_not_at_the_examples_own_line() -> None:
    # scopeguard's example at src/lib.rs line 37 asserts on its line 21 (src/lib.rs:58): rustdoc
    # prints "panicked at src/lib.rs:21:5", a line of the example, not of src/lib.rs
    data = _load("cargo-test/scopeguard-doc-1")
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    (name,) = data["facts"]["failing_ids"]
    (failure,) = parsed.errors
    assert failure.id == name
    assert "panicked at src/lib.rs:21:5" in data["stderr"] + data["stdout"]
    assert f"{failure.file}:{failure.line}" == "src/lib.rs:37" == name.split(" - ")[0] + ":37"
    assert failure.message == "assertion `left == right` failed"
    assert any("line 21" in d for d in failure.detail), failure.detail


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_make_recipe_whose_tool_is_not_installed_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    # sqlparse's and python-dotenv's `make test` run uv, which a newcomer may not have: make
    # execs it without a shell and says so itself, then "Error 127"
    (tmp_path / "Makefile").write_text("test:\n\tgreenloop-no-such-tool run pytest tests/\n")
    run, parsed = _live(["make", "test"], tmp_path)
    assert run.exit_code == 2, run.merged
    judged = classify(run, parsed, command="make test", root=str(tmp_path))
    assert judged.verdict is Verdict.ENV_FAILURE, judged
    assert judged.missing_command == "greenloop-no-such-tool"
    # a recipe that really fails is still the code's
    (tmp_path / "Makefile").write_text("test:\n\tfalse\n")
    run, parsed = _live(["make", "test"], tmp_path)
    assert classify(run, parsed, command="make test", root=str(tmp_path)).verdict is Verdict.FAILED


def _crash_where_the_facts_say(data: dict[str, Any]) -> tuple[ParseResult, Verdict, Failure]:
    """An environment failure whose first error is the crash at the case's frame, type, message."""
    facts = data["facts"]
    parsed, verdict = _judge(data)
    assert verdict == facts["verdict"] == "env_failure"
    crash = parsed.errors[0]
    assert (f"{crash.file}:{crash.line}", crash.error_type, crash.message) == (
        facts["frame"],
        facts["error_type"],
        facts["message"],
    )
    return parsed, verdict, crash


def test_eslint_crashing_inside_node_modules_is_an_environment_failure_that_says_where() -> None:
    # mitt without a lockfile: today's get-intrinsic loads an .mjs through eslint 7's
    # v8-compile-cache; 'Oops! Something went wrong!', exit 2, no lint finding at all
    data = _load("eslint/mitt-0")
    parsed, verdict, _ = _crash_where_the_facts_say(data)
    facts = data["facts"]
    digest = _digest(data, parsed, verdict)
    assert f"{facts['frame']}: {facts['error_type']}: {facts['message']}" in digest, digest


def test_eslint_crashing_in_the_repositorys_own_file_is_the_codes_failure() -> None:
    # the same crash raised from a rule of the repository's own (eslint-rules/no-x.js)
    data = _load("eslint/mitt-0")
    root = data["cwd_placeholder"]
    data["stderr"] = (
        data["stderr"]
        .replace(
            f"{root}/node_modules/async-function/require.mjs:1", f"{root}/eslint-rules/no-x.js:1", 1
        )
        .replace(f"{root}/node_modules/get-intrinsic/index.js", f"{root}/eslint-rules/no-x.js", 1)
    )
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    assert "at eslint-rules/no-x.js:1" in _digest(data, parsed, verdict)


def test_prettier_check_names_each_file_and_the_command_that_formats_it() -> None:
    # destr's `prettier -c src test`: '[warn] Code style issues found in the above file' is no
    # message once the file is listed on its own line of the digest
    data = _load("prettier/destr-1")
    parsed, verdict = _judge(data)
    assert verdict == data["facts"]["verdict"]
    assert [f.file for f in parsed.errors] == data["facts"]["failing_ids"]
    digest = _digest(data, parsed, verdict)
    assert "in the above file" not in digest, digest
    assert "Code style issues: Code style issues" not in digest, digest
    assert "run `prettier --write src/index.ts`" in digest, digest


@pytest.mark.parametrize(
    ("lockfile", "committed"),
    [("", False), ("package-lock.json", True), ("package-lock.json", False)],
)
def test_a_crash_inside_node_modules_of_a_project_without_lockfile_says_what_to_pin(
    tmp_path: Path, lockfile: str, committed: bool
) -> None:
    # mitt commits no lockfile; the package-lock.json `npm install` wrote pins nothing
    data = _load("eslint/mitt-0")
    (tmp_path / "package.json").write_text('{"name": "mitt"}\n')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    run_command([*git, "init", "-q"], cwd=tmp_path, timeout_s=60)
    run_command([*git, "add", "package.json"], cwd=tmp_path, timeout_s=60)
    if lockfile:
        (tmp_path / lockfile).write_text("{}\n")
        if committed:
            run_command([*git, "add", lockfile], cwd=tmp_path, timeout_s=60)
    run_command([*git, "commit", "-qm", "init"], cwd=tmp_path, timeout_s=60)
    parsed, verdict = _judge(data)
    result, _ = _check_result(data, parsed, verdict)
    text = build_digest(result, root=str(tmp_path)).text
    said = "no lockfile" in text and "Pin the one that broke (async-function" in text
    assert said is not committed, text


@pytest.mark.parametrize("name", ["cargo-test/itoa-3", "cargo-test/strsim-4"])
def test_cargo_test_counts_a_compile_error_once_not_once_per_target_that_compiled_it(
    name: str,
) -> None:
    # "could not compile `itoa` (lib) due to 1 previous error" and again for (lib test)
    data = _load(name)
    assert data["stderr"].count("due to 1 previous error") == 2
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    assert parsed.counts.failed == len(parsed.errors) == 1


def test_a_lint_rule_crashing_inside_node_modules_is_an_environment_failure_not_the_linted_file() -> (
    None
):
    # longest-streak (no lockfile): today's eslint-plugin-unicorn calls an API xo's eslint 8 lacks;
    # 'Occurred while linting index.js:11' is the file it read, not where anything is wrong
    data = _load("xo/longest-streak-0")
    _, _, crash = _crash_where_the_facts_say(data)
    assert 'Rule: "unicorn/expiring-todo-comments"' in crash.detail


# pytest without the plugins this venv has installed (hypothesis, anyio, ...): a faster start
BARE_PYTEST = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_a_test_reading_a_git_submodule_nobody_checked_out_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    # tomlkit cloned without --recurse-submodules: tests/test_toml_tests.py opens a file of
    # tests/toml-test, an empty directory; pytest exits 2 on a FileNotFoundError in collection
    (tmp_path / ".gitmodules").write_text(
        '[submodule "tests/toml-test"]\n\tpath = tests/toml-test\n'
        "\turl = https://github.com/BurntSushi/toml-test.git\n"
    )
    (tmp_path / "tests" / "toml-test").mkdir(parents=True)
    (tmp_path / "tests" / "test_cases.py").write_text(
        "from pathlib import Path\n\n"
        "LIST = Path(__file__).parent / 'toml-test' / 'tests' / 'files-toml-1.1.0'\n"
        "CASES = LIST.read_text().split()\n\n\n"
        "def test_cases():\n    assert CASES\n"
    )
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    run, parsed = _live(argv, tmp_path, BARE_PYTEST)
    assert run.exit_code == 2, run.merged
    judged = classify(run, parsed, command="pytest", root=str(tmp_path))
    assert judged.verdict is Verdict.ENV_FAILURE, judged
    assert "tests/toml-test" in judged.reasons[0]
    assert "git submodule update --init" in judged.advice
    # checked out, but the file is not there: the code's (or the test's) failure
    (tmp_path / "tests" / "toml-test" / "README.md").write_text("toml-test\n")
    run, parsed = _live(argv, tmp_path, BARE_PYTEST)
    judged = classify(run, parsed, command="pytest", root=str(tmp_path))
    assert judged.verdict is Verdict.FAILED, judged


@pytest.mark.parametrize(
    ("conftest", "verdict"),
    [
        # docopt's 2014 conftest on pytest 9: pluggy refuses `path`, which pytest 9 removed
        ("def pytest_collect_file(path, parent):\n    return None\n", Verdict.ENV_FAILURE),
        # an argument no pytest ever passed: the code's mistake (an agent's typo)
        ("def pytest_collect_file(file_paht, parent):\n    return None\n", Verdict.FAILED),
        # docopt's collector on pytest >= 6: Node(path, parent) instead of Node.from_parent
        (
            "import pytest\n\n\nclass F(pytest.File):\n    def collect(self):\n        return []\n"
            "\n\ndef pytest_collect_file(file_path, parent):\n    if file_path.suffix == '.docopt':\n"
            "        return F(file_path, parent)\n",
            Verdict.ENV_FAILURE,
        ),
    ],
    ids=["path-removed-in-pytest-9", "argument-pytest-never-had", "node-built-without-from-parent"],
)
def test_a_conftest_written_for_an_older_pytest_is_an_environment_failure(
    tmp_path: Path, conftest: str, verdict: Verdict
) -> None:
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "testcases.docopt").write_text("r'''Usage: prog'''\n")
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert True\n")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    run, parsed = _live(argv, tmp_path, BARE_PYTEST)
    assert run.exit_code in (1, 2), run.merged
    judged = classify(run, parsed, command="pytest", root=str(tmp_path))
    assert judged.verdict is verdict, (judged, run.merged[-600:])
    if verdict is Verdict.ENV_FAILURE:
        assert "older pytest" in judged.reasons[0]
        assert ("path, parent" in judged.evidence) or ("from_parent" in judged.evidence)


def test_digest_of_a_run_that_ended_inside_a_hung_test_says_it_ended_without_its_summary() -> None:
    data = _load("pytest/timeout_thread")  # pytest-timeout's thread method: stacks, os._exit
    parsed, verdict = _judge(data)
    assert verdict is Verdict.FAILED
    headline = _digest(data, parsed, verdict).splitlines()[0]
    assert headline.endswith("1 failed before the run ended early, without its summary."), headline
