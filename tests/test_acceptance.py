"""Declared acceptance (issue 28 item 4): the tests that must go from red to green
(``--must-pass``, a task's ``fail_to_pass``) and those that must stay green (``pass_to_pass``)
must have run and passed; a declared test that did not run is no green."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from greenloop.batch.tasks import parse_tasks
from greenloop.config import build_config
from greenloop.errors import FatalError
from greenloop.report.html import render_html
from greenloop.report.render import render_run
from greenloop.verify import acceptance
from limits import hang

TIMEOUT_S = hang(240)


def _tasks(*rows: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_task_declares_its_fail_to_pass_and_pass_to_pass_tests(tmp_path: Path) -> None:
    row = {
        "id": "t1",
        "repo": "https://example.com/x.git",
        "fail_to_pass": ["tests/test_x.py::test_y[1-2]"],
        "pass_to_pass": ["tests/test_x.py::test_z", "tests/test_x.py::TestA::test_b"],
    }

    (task,) = parse_tasks(_tasks(row), base=tmp_path)

    assert task.fail_to_pass == ("tests/test_x.py::test_y[1-2]",)
    assert task.pass_to_pass == ("tests/test_x.py::test_z", "tests/test_x.py::TestA::test_b")
    assert task.to_json()["fail_to_pass"] == ["tests/test_x.py::test_y[1-2]"]


def test_misspelt_and_swebench_cased_declaration_keys_get_a_did_you_mean(tmp_path: Path) -> None:
    text = _tasks(
        {"id": "a", "repo": "https://x/y", "fail_to_pas": ["t.py::a"]},
        {"id": "b", "repo": "https://x/y", "FAIL_TO_PASS": ["t.py::a"]},
        {"id": "c", "repo": "https://x/y", "PASS_TO_PASS": ["t.py::a"]},
    )

    with pytest.raises(FatalError) as caught:
        parse_tasks(text, base=tmp_path)

    message = str(caught.value)
    assert "TASKS.jsonl:1: unknown key 'fail_to_pas' (did you mean 'fail_to_pass'?)" in message
    assert "TASKS.jsonl:2: unknown key 'FAIL_TO_PASS' (did you mean 'fail_to_pass'?)" in message
    assert "TASKS.jsonl:3: unknown key 'PASS_TO_PASS' (did you mean 'pass_to_pass'?)" in message


def test_declared_test_lists_of_the_wrong_shape_are_each_named(tmp_path: Path) -> None:
    text = _tasks(
        {"id": "a", "repo": "https://x/y", "fail_to_pass": '["t.py::a"]'},
        {"id": "b", "repo": "https://x/y", "pass_to_pass": ["t.py::a", ""]},
        {"id": "c", "repo": "https://x/y", "fail_to_pass": ["t.py::a", "t.py::a"]},
        {"id": "d", "repo": "https://x/y", "pass_to_pass": "t.py::a"},
    )

    with pytest.raises(FatalError) as caught:
        parse_tasks(text, base=tmp_path)

    message = str(caught.value)
    assert "4 problem(s)" in message
    assert (
        "TASKS.jsonl:1: 'fail_to_pass': expected a list of test ids, got a string (a JSON"
        in message
    )
    assert (
        "TASKS.jsonl:2: 'pass_to_pass': expected a list of test ids (non-empty strings)" in message
    )
    assert "TASKS.jsonl:3: 'fail_to_pass': test id 't.py::a' listed twice" in message
    assert "TASKS.jsonl:4: 'pass_to_pass': expected a list of test ids" in message


def test_the_configuration_takes_must_pass_and_pass_to_pass_lists() -> None:
    config, errors = build_config(
        {"must_pass": ["t.py::a"], "pass_to_pass": ["t.py::b"]}, "greenloop.toml"
    )
    assert errors == []
    assert (config.must_pass, config.pass_to_pass) == (("t.py::a",), ("t.py::b",))

    _, errors = build_config({"must_pas": ["t.py::a"], "pass_to_pass": "t.py::b"}, "greenloop.toml")
    assert errors == [
        "greenloop.toml: must_pas: unknown key (did you mean 'must_pass'?)",
        "greenloop.toml: pass_to_pass: expected a list of test ids (non-empty strings), got 't.py::b'",
    ]


def test_run_takes_must_pass_more_than_once(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "greenloop", "run", "--help"],
        capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert "--must-pass ID" in done.stdout


# ---- greenloop run on a real repository with real pytest ----

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_SUB = (
    "import pytest\n\nfrom calc import sub\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n\n\n"
    "@pytest.mark.parametrize('a', [1, 2])\ndef test_sub_self(a):\n    assert sub(a, a) == 0\n"
)
FIX = "sed -i '2s/a - b/a + b/' calc.py"
ADD = "tests/test_add.py::test_add"
SUB = "tests/test_sub.py::test_sub"
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=TIMEOUT_S,
    ).stdout  # fmt: skip


def _repo(root: Path, calc: str = CALC) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(calc)
    (root / "tests" / "test_add.py").write_text(TEST_ADD)
    (root / "tests" / "test_sub.py").write_text(TEST_SUB)
    (root / ".gitignore").write_text("__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "dev@example.com")
    _git(root, "config", "user.name", "Dev")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "initial")
    return root


def _run(
    repo: Path, agent: str, *flags: str, verifier: tuple[str, ...] = PYTEST
) -> tuple[int, dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-m", "greenloop", "-C", str(repo), "run", "--agent", agent, "-y",
         "--max-iters", "2", "--format", "json", *flags, "--", *verifier],
        capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    data = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    return done.returncode, data, done.stderr


def test_a_declared_test_that_ran_and_passed_is_a_success_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r")
    (repo / "greenloop.toml").write_text(
        f'pass_to_pass = ["{SUB}", "tests/test_sub.py::test_sub_self"]\n'
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "declared")

    code, data, err = _run(repo, FIX, "--must-pass", ADD)

    assert code == 0, err
    assert data["result"] == "success"
    acceptance = data["acceptance"]
    assert acceptance["line"] == (
        "declared acceptance: 1/1 fail-to-pass passed, 2/2 pass-to-pass passed"
    )
    assert acceptance["fail_to_pass"] == [{"id": ADD, "outcome": "passed"}]
    assert "declared acceptance: 1 fail-to-pass and 2 pass-to-pass test(s) must run and pass" in err
    line = "eclared acceptance: 1/1 fail-to-pass passed, 2/2 pass-to-pass passed"
    assert f"  d{line}\n" in render_run(data, "text")
    assert f"**D{line}**" in render_run(data, "md")
    page = render_html(data)
    assert f"<h3>D{line}</h3>" in page
    assert f"<code>{ADD}</code> passed" in page


def test_a_declared_test_the_agent_deleted_is_an_untrusted_result_naming_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")

    code, data, _ = _run(
        repo, "git rm -q tests/test_add.py", "--must-pass", ADD, "--allow-test-edits"
    )

    assert code == 5
    assert data["result"] == "suspicious_pass"
    assert f"declared test {ADD} did not run (not collected" in str(data["reason"])
    assert data["acceptance"]["fail_to_pass"] == [{"id": ADD, "outcome": "not run"}]
    assert "did not run: tests/test_add.py::test_add" in data["acceptance"]["line"]
    assert _git(repo, "rev-parse", "HEAD") == data["initial_sha"] + "\n"  # reverted


def test_a_declared_test_the_agent_skipped_or_renamed_is_untrusted(tmp_path: Path) -> None:
    skip = _repo(tmp_path / "skip")
    rename = _repo(tmp_path / "rename")
    marker = "sed -i 's/^def test_add/import pytest\\n@pytest.mark.skip\\ndef test_add/' tests/test_add.py"

    skipped = _run(skip, marker, "--must-pass", ADD)
    renamed = _run(
        rename,
        "sed -i 's/def test_add/def check_add/' tests/test_add.py",
        "--must-pass",
        ADD,
        "--allow-test-edits",
    )

    assert skipped[0] == 5, skipped[2]
    assert f"declared test {ADD} did not run (skipped)" in str(skipped[1]["reason"])
    assert renamed[0] == 5, renamed[2]
    assert f"declared test {ADD} did not run (not collected" in str(renamed[1]["reason"])


def test_a_broken_pass_to_pass_test_is_a_regression_named_as_such(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    (repo / "greenloop.toml").write_text(f'pass_to_pass = ["{SUB}"]\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "declared")
    breaks_sub = "sed -i 's/a - b/a + b/' calc.py"  # fixes add, breaks sub

    code, data, _ = _run(repo, breaks_sub, "--must-pass", ADD)

    assert code == 1
    assert data["result"] == "regression"
    assert f"declared pass-to-pass test {SUB} failed: a regression" in str(data["reason"])


def test_a_declared_id_not_in_the_runners_form_is_a_clear_error_before_anything_runs(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r")

    code, _, err = _run(
        repo, FIX, "--must-pass", "test_add", "--must-pass", "test_sub (tests.Nope)"
    )

    assert code == 2
    assert (
        "declared test 'test_add' is not a pytest node id (path/to/test_file.py::test_name)" in err
    )
    assert "declared test 'test_sub (tests.Nope)' is not a pytest node id" in err
    assert "greenloop run" not in err  # no plan: nothing started
    assert _git(repo, "for-each-ref", "refs/greenloop") == ""


def test_a_django_style_id_names_the_pytest_test_of_an_existing_module(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    (repo / "tests" / "__init__.py").write_text("")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a package")

    code, data, err = _run(repo, FIX, "--must-pass", "test_add (tests.test_add)")

    assert code == 0, err
    assert data["acceptance"]["fail_to_pass"] == [{"id": ADD, "outcome": "passed"}]


def test_a_fail_to_pass_test_that_already_passes_at_baseline_is_a_wrong_declaration(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r")

    code, _, err = _run(repo, FIX, "--must-pass", SUB)

    assert code == 2
    assert f"declared fail-to-pass test {SUB} already passes before any edit" in err
    assert _git(repo, "status", "--porcelain") == ""


def test_a_declared_id_the_suite_does_not_have_is_named_at_baseline(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")

    code, _, err = _run(repo, FIX, "--must-pass", "tests/test_add.py::test_nothing")

    assert code == 2
    assert "declared test tests/test_add.py::test_nothing did not run at baseline" in err


def test_must_pass_with_a_runner_that_reports_no_per_test_results_is_refused(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r")

    code, _, err = _run(repo, FIX, "--must-pass", ADD, verifier=("sh", "-c", "exit 1"))

    assert code == 2
    assert "declared tests (--must-pass, must_pass, pass_to_pass) need a runner that reports" in err


NODE_CALC = "exports.add = (a, b) => a - b;\n"
NODE_TEST = (
    "const test = require('node:test');\nconst assert = require('node:assert');\n"
    "const { add } = require('../calc.js');\n\n"
    "test('adds two numbers', () => { assert.strictEqual(add(2, 3), 5); });\n"
    "test('adds zero', () => { assert.strictEqual(add(0, 0), 0); });\n"
)


def _node_repo(root: Path) -> Path:
    (root / "test").mkdir(parents=True)
    (root / "calc.js").write_text(NODE_CALC)
    (root / "test" / "calc.test.js").write_text(NODE_TEST)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "dev@example.com")
    _git(root, "config", "user.name", "Dev")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "initial")
    return root


def test_node_test_declared_tests_are_read_from_its_junit_report(tmp_path: Path) -> None:
    fixed = _node_repo(tmp_path / "fixed")
    cheat = _node_repo(tmp_path / "cheat")
    node = ("node", "--test", "test/")
    declared = ("--must-pass", "adds two numbers", "--allow-test-edits")

    ok = _run(fixed, "sed -i 's/a - b/a + b/' calc.js", *declared, verifier=node)
    skip = "sed -i \"s/^test('adds two/test.skip('adds two/\" test/calc.test.js"
    skipped = _run(cheat, skip, *declared, verifier=node)

    assert ok[0] == 0, ok[2]
    assert ok[1]["acceptance"]["fail_to_pass"] == [{"id": "adds two numbers", "outcome": "passed"}]
    assert skipped[0] == 5, skipped[2]
    assert "declared test adds two numbers did not run (skipped)" in str(skipped[1]["reason"])


OUTCOMES = """import pytest


@pytest.fixture
def broken():
    raise RuntimeError("setup")


def test_passes():
    pass


def test_fails():
    assert False


@pytest.mark.skip(reason="no")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfails():
    assert False


def test_errors(broken):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_cases(n):
    assert n == 1
"""


def test_the_plugin_gives_every_tests_outcome_not_only_the_failures(tmp_path: Path) -> None:
    from greenloop import check

    (tmp_path / "test_outcomes.py").write_text(OUTCOMES)

    result, _ = check(tmp_path, command=PYTEST)

    outcomes = dict(result.runs[0].parsed.outcomes)
    assert outcomes == {
        "test_outcomes.py::test_passes": "passed",
        "test_outcomes.py::test_fails": "failed",
        "test_outcomes.py::test_skipped": "skipped",
        "test_outcomes.py::test_xfails": "xfailed",
        "test_outcomes.py::test_errors": "error",
        "test_outcomes.py::test_cases[1]": "passed",
        "test_outcomes.py::test_cases[2]": "failed",
    }
    judged = acceptance.judge(
        ["test_outcomes.py::test_cases"], ["test_outcomes.py::test_passes"], outcomes.items()
    )
    assert judged.fail_to_pass == (("test_outcomes.py::test_cases", "failed"),)
    assert judged.line() == (
        "declared acceptance: 0/1 fail-to-pass passed, 1/1 pass-to-pass passed; "
        "failed: test_outcomes.py::test_cases"
    )


def test_a_batch_task_whose_fail_to_pass_test_already_passes_is_invalid(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    verifier = list(PYTEST)
    rows = [
        {"id": "wrong", "repo": str(repo), "verifier": verifier, "agent": FIX, "fail_to_pass": [SUB]},
        {"id": "right", "repo": str(repo), "verifier": verifier, "agent": FIX,
         "fail_to_pass": [ADD], "pass_to_pass": [SUB]},
    ]  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(_tasks(*rows))

    done = subprocess.run(
        [sys.executable, "-m", "greenloop", "batch", str(tasks), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_id = {t["id"]: t for t in summary["tasks"]}
    assert by_id["wrong"]["result"] == "invalid", done.stderr
    assert by_id["wrong"]["reason"].startswith(f"declared fail-to-pass test {SUB} already passes")
    assert by_id["right"]["result"] == "success"
    assert by_id["right"]["acceptance"] == (
        "declared acceptance: 1/1 fail-to-pass passed, 1/1 pass-to-pass passed"
    )
    assert (
        "greenloop batch: 1/1 solved (100 %), 1 invalid: a wrong declaration, "
        "declared acceptance met in 1/1, 2 finished"
    ) in done.stdout
