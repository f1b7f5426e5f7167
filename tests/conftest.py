from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PY = sys.executable

# The slowest tests, started first so that none begins alone at the end of the run: measured with
# `pytest -n 2 --durations=50` at load average 8-19 on 2 cores (2026-12-04, 36 min, ~40-100 s each
# under that load), plus the tests that sleep out a 30 s limit. A name missing here only runs later.
SLOW_FIRST = (
    # first of its worker, before any other test: inside the full suite (and only there) Claude
    # Code's cut of its output came back without pytest's closing line, twice; alone it never did
    "test_claude_post_tool_cut_e2e.py::test_claude_codes_cut_of_a_failing_run",
    # the four longest (120-190 s quiet) at 0, 2, 4 and 6: two by two, each goes to its own worker
    "test_harbor_export.py::test_exported_mutants_are_harbor_tasks_that_fail_on_the_bug",
    "test_presets.py::test_cline_preset_fixes_the_bug_in_two_iterations_without_running_commands",
    "test_swebench.py::test_a_no_op_agent_solves_0_of_5",
    "test_presets.py::test_aider_preset_edits_the_file_and_restores_its_chat_history",
    "test_swebench.py::test_the_fix_of_each_real_instance_solves_5_of_5",
    "test_demo.py::test_demo_runs_from_the_built_wheel_and_prints_json_then_removes_its_repo",
    "test_walkthrough.py::test_run_whose_tests_pass_but_never_exit_stops_untrusted_and_says_close",
    "test_action.py::test_the_action_fixes_a_red_pr",  # two venvs + pip installs: 20-130 s
    "test_action_schema.py::test_an_openai_agent_gets_the_llm_extra",  # a venv + openai: 20-30 s
    "test_loop.py::test_failure_count_not_falling_stops_as_non_convergence",
    "test_flaky.py::test_success_is_never_declared_on_a_subset_that_passes",
    "test_aider_test_cmd.py::test_aider_stops_after_three_test_reflections_with_the_suite_still",
    "test_loop.py::test_iteration_cap_reverts_the_branch_and_keeps_the_attempt",
    "test_cline_mcp.py::test_cline_calls_greenloop_verify_over_mcp_until_green",
    "test_api.py::test_library_api_runs_check_and_the_loop_without_the_cli",
    "test_demo.py::test_demo_fixes_both_bugs_in_two_commits_and_keeps_the_repo",
    "test_loop.py::test_keep_on_fail_leaves_the_iteration_commits_on_the_branch",
    "test_flaky.py::test_a_failing_subset_is_the_verdict_and_marked_in_the_report",
    "test_subset.py::test_jest_",  # their shared npm install of jest and vitest: ~50 s
    "test_subset.py::test_vitest_",
    "test_batch_ray.py::",  # a Ray cluster each (~30 s to start)
    "test_acceptance_batch.py::test_a_batch_on_real_projects",  # 6 tasks on real projects: ~106 s
    "test_loop.py::test_going_back_to_earlier_failures_stops_as_circular",
    "test_html_report.py::test_html_report_of_a_real_run_is_self_contained_and_renders_in_chromium",
    "test_flaky.py::test_a_stop_after_a_failing_subset_is_confirmed_on_the_full_suite",
    "test_aider_test_cmd.py::test_aider_auto_test_sends_greenloops_digest_back_until_the_suite",
    "test_bench_clike.py::test_bench_seeds_js_bugs_the_tests_catch_and_the_oracle_fixes_them",
    "test_check.py::test_check_keeps_the_failures_a_runner_reported_before_its_process_hung",
    "test_check.py::test_a_timeout_names_the_test_it_was_running_not_only_the_failures_before",
    "test_process_escapes.py::test_check_stops_a_daemon_left_by_a_stage_that_timed_out",
    "test_loop.py::test_cli_run_prints_the_json_report_and_exits_with_the_result_code",
    "test_flaky.py::test_a_test_that_passes_in_the_subset_and_fails_in_the_gate_is_rerun",
    "test_pytest_plugin.py::test_plugin_names_the_crashed_xdist_worker_test",
    "test_loop.py::test_without_a_terminal_the_run_never_asks",
    "test_terminal.py::test_terminal_status_ticks_every_second_during_a_10s_baseline",
)


def _slow_rank(item: pytest.Item) -> int:
    nodeid = item.nodeid.removeprefix("tests/")
    return next((n for n, prefix in enumerate(SLOW_FIRST) if nodeid.startswith(prefix)), 10**6)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slowest first."""
    items.sort(key=_slow_rank)  # stable: the rest keep their order


def pytest_configure(config: pytest.Config) -> None:
    """xdist's ``load`` scheduling first hands each worker a run of consecutive tests, a quarter
    of its share (~117 of 1,875 with ``-n 4``): the first worker got every test in SLOW_FIRST
    and ran them one after another (swebench, Harbor, the walkthrough: ~600 s) while the others
    finished early. Two at a time deals them out across the workers; a bigger chunk given on
    the command line stays."""
    if getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 2


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_works() -> Iterator[None]:
    """Started as ``nohup … &`` the suite inherits SIGINT ignored, and so would every process it
    starts (an ignored signal survives exec): tests that press Ctrl-C need it back (issue 13)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ignore(signum: int, frame: object) -> None:
    """Caught and dropped: unlike SIG_IGN, a handler does not survive exec."""


@pytest.fixture(autouse=True, scope="session")
def _hangup_reaches_children() -> Iterator[None]:
    """``nohup`` ignores SIGHUP, and an ignored signal survives exec: greenloop then rightly runs
    on through a hang-up, and a test that sends one waits for nothing. The suite still shrugs
    hang-ups off (a handler that drops them), while the processes it starts get the default."""
    previous = signal.getsignal(signal.SIGHUP)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _ignore)
    yield
    signal.signal(signal.SIGHUP, previous)


@pytest.fixture(autouse=True, scope="session")
def _bare_inner_pytest() -> Iterator[None]:
    """The projects the tests run pytest on are not this venv's: its plugins (langsmith, anyio,
    hypothesis, xdist) cost ~3 s of CPU per inner ``python -m pytest`` (0.3 s without them), which
    was most of the suite's work. Set in each worker once it has started, so the suite's own
    session keeps its plugins; an inner run that needs one names it (``-p xdist``)."""
    previous = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    yield
    if previous is None:
        del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
    else:
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = previous


LINUX_ONLY = pytest.mark.skipif(
    sys.platform != "linux", reason="/proc and the child subreaper (prctl) exist on Linux only"
)


@pytest.fixture(
    params=[pytest.param("proc", marks=LINUX_ONLY), "ps"], ids=["linux-proc", "macos-ps"]
)
def probe(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How greenloop reads the process table, for the reliability cases: /proc and a subreaper
    (Linux), or ``ps`` with neither, as on macOS (``GREENLOOP_PLATFORM_PROBE``, which the
    greenloop processes a test starts inherit). The probe is switched, not mocked."""
    monkeypatch.setenv("GREENLOOP_PLATFORM_PROBE", request.param)
    return str(request.param)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """A real git repo with the given files committed on branch main."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        _git(root, "init", "-q", "-b", "main")
        _git(root, "config", "user.email", "dev@example.com")
        _git(root, "config", "user.name", "Dev")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "initial")
        return root

    return make
