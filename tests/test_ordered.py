"""The narrow steps inside the gate's own pytest run (loop/ordered.py): the plugin's ordered groups
on real pytest, and the loop paying one run for a green iteration."""

from __future__ import annotations

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
from greenloop.verify import subset
from greenloop.verify.cascade import StageRun, run_stage
from limits import hang

PY = sys.executable
COMMAND = f"{PY} -m pytest -v -p no:cacheprovider"
STAGE = Stage(name="test", command=COMMAND, why="")
SUITE = {
    "test_a.py": "def test_a1():\n    pass\n\n\ndef test_a2():\n    assert 0\n\n\n"
    "def test_a3():\n    pass\n",
    "test_b.py": "def test_b1():\n    pass\n\n\ndef test_b2():\n    assert 0\n",
}


def run(root: Path, groups: list[list[str]]) -> tuple[StageRun, list[str]]:
    env = subset.first(STAGE, groups)
    assert env is not None
    done = run_stage(root, STAGE, timeout=hang(120), environ={**os.environ, **dict(env)})
    order = [
        line.split()[0]
        for line in done.result.stdout.splitlines()
        if " PASSED" in line or " FAILED" in line
    ]
    return done, order


def test_a_red_first_group_ends_the_run_after_its_last_test(tmp_path: Path) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    done, order = run(tmp_path, [["test_b.py::test_b2", "test_a.py::test_a3"]])
    assert order == ["test_b.py::test_b2", "test_a.py::test_a3"]  # the group's order, whole
    assert done.verdict.value == "failed"
    assert [f.id for f in done.parsed.errors] == ["test_b.py::test_b2"]
    assert done.result.exit_code == 1  # -x's status, not an interrupt's
    assert done.parsed.counts.collected == 5


def test_green_groups_go_on_to_the_rest_of_the_suite_in_the_same_run(tmp_path: Path) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    done, order = run(tmp_path, [["test_b.py::test_b1"], ["test_a.py::test_a3", "test_a.py"]])
    # group 1, then group 2 in its own order (a3, then the rest of its file), then the rest
    assert order == [
        "test_b.py::test_b1",
        "test_a.py::test_a3",
        "test_a.py::test_a1",
        "test_a.py::test_a2",
    ]
    # test_a2 failed inside group 2: the run ended there, test_b2 never ran
    assert {f.id for f in done.parsed.errors} == {"test_a.py::test_a2"}
    clean, order = run(tmp_path, [["test_b.py::test_b1"], ["test_a.py::test_a1"]])
    assert order[:2] == ["test_b.py::test_b1", "test_a.py::test_a1"]
    assert len(order) == 5  # green groups: every test ran
    assert {f.id for f in clean.parsed.errors} == {"test_a.py::test_a2", "test_b.py::test_b2"}


CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "shapes.py": "def area(w, h):\n    return w * h\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "test_shapes.py": "from shapes import area\n\n\ndef test_area():\n    assert area(3, 4) == 12\n",
    "conftest.py": "import os\n\n\ndef pytest_sessionstart(session):\n"
    "    with open(os.environ['SESSIONS_LOG'], 'a') as f:\n"
    "        f.write('session\\n')\n",
    ".gitignore": "__pycache__/\n",
}
FIX_ADD = {"replace": "calc.py", "old": "a - b", "new": "a + b"}


def loop(root: Path, steps: list[list[dict[str, Any]]], **kw: Any) -> LoopResult:
    stages = (StageSpec(name="test", run=f"{PY} -m pytest -q -p no:cacheprovider"),)
    return run_loop(root, scripted(steps), config=Config(stages=stages, timeout=120.0, **kw))


@pytest.mark.parametrize("mode", ["auto", "affected", "failing", "off"])
def test_a_fix_on_the_first_try_costs_two_pytest_runs_in_every_subset_mode(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The baseline and one gate: the failing tests and the affected ones ran first inside it, and
    the baseline's flaky check inside the baseline."""
    log = tmp_path / "sessions.log"
    monkeypatch.setenv("SESSIONS_LOG", str(log))
    result = loop(make_repo(CALC), [[FIX_ADD]], subset=mode)
    assert result.result.value == "success"
    # at baseline the failing test runs once more (flaky or not) unless --subset off: inside the
    # baseline's own pytest run
    assert len(log.read_text().split()) == 2
    said = {
        "auto": "1 test failing first: green; affected: ",
        "affected": "affected: ",
        "failing": "1 test failing first: green; the full cascade",
        "off": "the full cascade",
    }[mode]
    assert result.history[1].ran.startswith(said)
    assert result.history[1].ran.endswith("the full cascade")


@pytest.mark.parametrize(("limit", "reran"), [("2", 2), ("1", 0)])
def test_the_failed_tests_run_once_more_in_the_same_run_unless_more_failed_than_the_limit(
    tmp_path: Path, limit: str, reran: int
) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, subset.RERUN_ENV: limit}
    done = run_stage(tmp_path, STAGE, timeout=hang(120), environ=env)
    assert dict(done.reruns) == (
        {"test_a.py::test_a2": False, "test_b.py::test_b2": False} if reran else {}
    )
    assert done.parsed.counts.failed == 2  # the first run's reports: the re-runs are not logged


def test_failures_slower_than_the_suites_own_pace_are_not_run_again(tmp_path: Path) -> None:
    """A bug that makes its tests loop: re-running them would double what is slow."""
    (tmp_path / "test_slow.py").write_text(
        "import time\n\n\ndef test_slow():\n    time.sleep(1.0)\n    assert 0\n\n\n"
        "def test_quick():\n    pass\n"
    )
    env = {**os.environ, subset.RERUN_ENV: "200"}
    done = run_stage(tmp_path, STAGE, timeout=hang(120), environ=env)
    assert done.parsed.counts.failed == 1
    assert done.reruns == ()


def test_the_re_run_formats_no_traceback_and_the_output_keeps_the_first_runs(
    tmp_path: Path,
) -> None:
    """pytest builds a failure's traceback with its source (it parses each frame's whole file):
    on dateutil that cost more than the tests. The re-run's reports are never shown, so it
    builds none; the first run's traceback is printed as the user's options ask."""
    (tmp_path / "test_style.py").write_text(
        "def test_style(request):\n"
        "    with open('styles.txt', 'a') as f:\n"
        "        f.write(str(request.config.option.tbstyle) + '\\n')\n"
        "    assert 1 == 2, 'the first run'\n"
    )
    env = {**os.environ, subset.RERUN_ENV: "200"}
    done = run_stage(tmp_path, STAGE, timeout=hang(120), environ=env)
    assert dict(done.reruns) == {"test_style.py::test_style": False}
    assert (tmp_path / "styles.txt").read_text().split() == ["auto", "no"]
    assert ">       assert 1 == 2, 'the first run'" in done.result.stdout  # the long traceback


def test_the_run_ends_once_its_failures_pass_the_count_to_beat_and_still_re_runs_them(
    tmp_path: Path,
) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    env = subset.first(STAGE, [["test_a.py::test_a1"]])
    assert env is not None
    extra = {subset.STOP_ABOVE_ENV: "0", subset.RERUN_ENV: "200"}
    done = run_stage(
        tmp_path, STAGE, timeout=hang(120), environ={**os.environ, **dict(env), **extra}
    )
    ran = [
        line.split()[0]
        for line in done.result.stdout.splitlines()
        if " PASSED" in line or " FAILED" in line
    ]
    assert ran == ["test_a.py::test_a1", "test_a.py::test_a2"]  # one failure is past 0: no more
    assert done.result.exit_code == 1
    assert dict(done.reruns) == {"test_a.py::test_a2": False}  # greenloop's own stop: re-run


WIDE = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
    "def neg(a):\n    return -a\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "test_more.py": "from calc import mul, neg\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
    "def test_neg():\n    assert neg(2) == -2\n",
    "conftest.py": CALC["conftest.py"],
    ".gitignore": "__pycache__/\n",
}


def test_a_try_that_breaks_more_than_it_fixes_is_rolled_back_without_a_full_run_to_confirm(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 failing, then a try that fixes it and breaks 2: the run stopped at the 2nd failure, and a
    rollback the loop goes on from needs no full run (the rest only adds failures)."""
    log = tmp_path / "sessions.log"
    monkeypatch.setenv("SESSIONS_LOG", str(log))
    wrong = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n\n\n"
    wrong += "def neg(a):\n    return a\n"
    result = loop(
        make_repo(WIDE),
        [[{"write": "calc.py", "text": wrong}], [FIX_ADD]],
        on_regression="continue",
    )
    assert result.result.value == "success"
    assert result.history[1].rolled_back
    events = (Path(result.record_dir) / "events.jsonl").read_text()
    assert "failures rose from 1 to at least 2" in events
    assert len(log.read_text().split()) == 3  # baseline, the stopped try, the fix's gate


IMPORTED = (
    "import os\n\nwith open('imported.txt', 'a') as f:\n    f.write(__name__ + '\\n')\n\n\n"
    "def test_c1():\n    pass\n"
)


def test_a_red_first_group_never_imports_the_other_test_modules(tmp_path: Path) -> None:
    for name, text in {**SUITE, "test_c.py": IMPORTED}.items():
        (tmp_path / name).write_text(text)
    done, order = run(tmp_path, [["test_b.py::test_b2"]])
    assert order == ["test_b.py::test_b2"]
    assert not (tmp_path / "imported.txt").exists()  # test_c.py was never collected
    assert done.verdict.value == "failed"
    assert "[100%]" not in done.result.stdout


def test_a_green_first_group_then_collects_the_rest_and_counts_the_whole_suite_once(
    tmp_path: Path,
) -> None:
    for name, text in {**SUITE, "test_c.py": IMPORTED}.items():
        (tmp_path / name).write_text(text)
    done, order = run(tmp_path, [["test_b.py::test_b1"]])
    assert order[0] == "test_b.py::test_b1"
    assert sorted(order) == sorted(
        [f"test_a.py::test_a{i}" for i in (1, 2, 3)]
        + ["test_b.py::test_b1", "test_b.py::test_b2", "test_c.py::test_c1"]
    )  # each test once
    assert (tmp_path / "imported.txt").read_text().split() == ["test_c"]
    assert done.result.stdout.count("collected ") == 1
    assert "collected 6 items" in done.result.stdout
    assert done.parsed.counts.collected == 6
    assert done.parsed.counts.failed == 2


def test_with_a_keyword_filter_the_whole_suite_is_collected_first(tmp_path: Path) -> None:
    for name, text in {**SUITE, "test_c.py": IMPORTED}.items():
        (tmp_path / name).write_text(text)
    stage = Stage(name="test", command=COMMAND + " -k 'not a1'", why="")
    env = subset.first(stage, [["test_b.py::test_b2"]])
    assert env is not None
    done = run_stage(tmp_path, stage, timeout=hang(120), environ={**os.environ, **dict(env)})
    assert (tmp_path / "imported.txt").exists()  # as before: everything collected, then ordered
    assert done.verdict.value == "failed"


def test_a_file_of_the_first_group_is_collected_once_its_other_tests_run_with_the_rest(
    tmp_path: Path,
) -> None:
    """dateutil's test_isoparser.py parametrizes with a generator: collected a second time, the
    module's tests are not the same (the generator is spent: an empty parameter set, skipped)."""
    (tmp_path / "test_g.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('x', (i for i in range(3)))\n"
        "def test_gen(x):\n    pass\n\n\ndef test_first():\n    pass\n"
    )
    (tmp_path / "test_h.py").write_text("def test_h():\n    pass\n")
    done, order = run(tmp_path, [["test_g.py::test_first"]])
    assert order == [
        "test_g.py::test_first",
        "test_g.py::test_gen[0]",
        "test_g.py::test_gen[1]",
        "test_g.py::test_gen[2]",
        "test_h.py::test_h",
    ]
    assert done.parsed.counts.skipped == 0
    assert "collected 5 items" in done.result.stdout


def test_an_edit_of_the_same_size_and_second_runs_the_new_code_not_its_old_bytecode(
    make_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python reuses a .pyc whose source has the size and modification second it recorded: the
    project's conftest pins calc.py's time, so each same-size edit looks unchanged to it."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    pinned = {
        **CALC,
        "conftest.py": CALC["conftest.py"] + "\n\nos.utime('calc.py', (1e9, 1e9))\n",
    }
    monkeypatch.setenv("SESSIONS_LOG", os.devnull)
    times = {"replace": "calc.py", "old": "a - b", "new": "a * b"}  # still wrong: 2 != 3
    plus = {"replace": "calc.py", "old": "a * b", "new": "a + b"}
    result = loop(make_repo(pinned), [[times], [plus]])
    assert [h.verdict for h in result.history] == ["failed", "failed", "green"]
    assert result.history[1].signature != result.history[0].signature  # a * b ran: 2, not -1
    assert result.result.value == "success"


def test_the_re_runs_stop_once_they_cost_a_share_of_the_runs_cpu(tmp_path: Path) -> None:
    """The second time, each failure costs 0.25 s of CPU (a property test's search, a slow
    fixture; its first run was quick, so the duration check lets it through): past the floor of
    0.2 s the rest are not re-run; they count as real failures. CPU time: load does not move it."""
    burn = (
        "    if os.path.exists(name):\n"
        "        t = time.process_time()\n"
        "        while time.process_time() - t < 0.25:\n"
        "            pass\n"
        "    open(name, 'a').close()\n"
    )
    (tmp_path / "test_burn.py").write_text(
        "import os\nimport time\n\n\ndef test_one():\n    name = 'one'\n"
        + burn
        + "    assert 0\n\n\n"
        "def test_two():\n    name = 'two'\n" + burn + "    assert 0\n"
    )
    env = {**os.environ, subset.RERUN_ENV: "200"}
    done = run_stage(tmp_path, STAGE, timeout=hang(120), environ=env)
    assert done.parsed.counts.failed == 2
    assert dict(done.reruns) == {"test_burn.py::test_one": False}


def test_a_pytest_session_a_first_test_starts_itself_does_not_take_the_held_back_tests(
    tmp_path: Path,
) -> None:
    """A plugin's own suite runs pytest in process (pytester): that nested session's collection
    is not the rest of the verification's."""
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "check_inner.py").write_text("def test_inner():\n    pass\n")
    (tmp_path / "test_g.py").write_text(
        "import pytest\n\n\ndef test_first():\n"
        "    assert pytest.main(['-q', '-p', 'no:cacheprovider', 'inner/check_inner.py']) == 0\n\n\n"
        "def test_other():\n    pass\n"
    )
    (tmp_path / "test_h.py").write_text("def test_h():\n    pass\n")
    done, order = run(tmp_path, [["test_g.py::test_first"]])
    assert order == ["test_g.py::test_first", "test_g.py::test_other", "test_h.py::test_h"]
    assert done.verdict.value == "green"
