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

TIMEOUT_S = 240


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
