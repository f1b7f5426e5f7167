from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_process import alive
from greenloop.processes.process import build_env, run_command, strip_ansi, watch_output

PY = sys.executable
HANG_GUARD_S = 30.0


def test_run_captures_stdout_and_stderr_separately_and_merged_in_order() -> None:
    code = "import sys; print('out1', flush=True); print('err1', file=sys.stderr, flush=True); print('out2')"
    result = run_command((PY, "-c", code))
    assert result.exit_code == 0
    assert result.stdout == "out1\nout2\n"
    assert result.stderr == "err1\n"
    assert result.merged.index("out1") < result.merged.index("err1")


def test_exit_code_is_reported_and_no_signal_for_a_plain_failure() -> None:
    result = run_command((PY, "-c", "raise SystemExit(3)"))
    assert (result.exit_code, result.signal, result.timed_out) == (3, None, False)


def test_missing_executable_becomes_exit_127_with_a_message() -> None:
    result = run_command(("definitely-not-a-tool-xyz", "--version"))
    assert result.exit_code == 127
    assert result.error == "definitely-not-a-tool-xyz: command not found"


def test_command_killed_by_sigkill_reports_the_signal_and_137() -> None:
    result = run_command((PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert result.signal == signal.SIGKILL
    assert result.exit_code == 137
    assert result.killed


def test_shell_reported_signal_death_is_recognised() -> None:
    result = run_command(f"{PY} -c 'import os; os.kill(os.getpid(), 11)'")
    assert result.signal == 11
    assert result.exit_code == 139


def test_hang_with_grandchild_holding_stdout_is_killed_with_its_group_at_the_limit() -> None:
    # the child forks a grandchild that keeps stdout open and ignores SIGTERM
    script = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    time.sleep(600)\n"
        "print(f'partial output {pid}', flush=True)\n"
        "time.sleep(600)\n"
    )
    # The limit is reached once greenloop has read the partial output's whole line, however long a
    # loaded machine takes to start the child: the clock stands still until then.
    seen: list[bytes] = []

    def clock() -> float:
        return time.monotonic() if b"\n" in b"".join(seen) else 0.0

    start = time.monotonic()
    with watch_output(seen.append):
        result = run_command((PY, "-c", script), timeout_s=2, now=clock)
    elapsed = time.monotonic() - start
    assert result.timed_out
    assert "partial output" in result.stdout
    assert result.signal is not None
    assert elapsed < HANG_GUARD_S  # the grandchild sleeps 600 s: a hang, not a speed (bench/)
    grandchild = int(result.stdout.split()[-1])
    deadline = time.monotonic() + HANG_GUARD_S  # SIGKILL sent with the group: dying, or dead
    while alive(grandchild):
        assert time.monotonic() < deadline, f"the grandchild {grandchild} outlived its group's kill"
        time.sleep(0.05)


def test_finished_command_with_background_child_holding_the_pipe_does_not_hang() -> None:
    result = run_command("sleep 300 & echo started", timeout_s=120)
    assert result.exit_code == 0
    assert not result.timed_out  # returned when the shell exited, not at the limit
    assert result.duration_s < HANG_GUARD_S  # not the 300 s the background child holds the pipe
    assert "started" in result.stdout


def test_thirty_megabytes_of_output_keeps_head_and_tail_and_counts_the_dropped_middle() -> None:
    code = (
        "import sys\n"
        "sys.stdout.write('FIRST LINE\\n')\n"
        "chunk = ('x' * 1023 + '\\n') * 1024\n"
        "for _ in range(30): sys.stdout.write(chunk)\n"
        "sys.stdout.write('LAST LINE\\n')\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_command((PY, "-c", code))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.stdout.startswith("FIRST LINE")
    assert result.stdout.rstrip().endswith("LAST LINE")
    assert result.dropped_bytes > 29 * 1024 * 1024
    assert "bytes omitted" in result.stdout
    assert len(result.stdout) < 1024 * 1024
    assert grown_kib < 64 * 1024  # bounded memory: far below the 30 MB printed


def test_forced_colour_output_comes_back_without_escape_sequences() -> None:
    code = (
        "print('\\x1b[31mred\\x1b[0m \\x1b]8;;http://x\\x1b\\\\link\\x1b]8;;\\x1b\\\\ "
        "\\x1b[1;32mok\\x1b[0m')"
    )
    result = run_command((PY, "-c", code), env=build_env({"FORCE_COLOR": "1"}))
    assert result.stdout == "red link ok\n"
    assert "\x1b" not in result.merged


def test_pytest_with_forced_colour_prints_no_escapes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert 1 == 2\n")
    env = build_env({"FORCE_COLOR": "1", "PY_COLORS": "1", "PATH": "/usr/bin:/bin"})
    result = run_command(
        (PY, "-m", "pytest", "-p", "no:cacheprovider", "--color=yes"), cwd=tmp_path, env=env
    )
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout
    assert "1 failed" in result.stdout


def test_invalid_utf8_is_decoded_with_replacement_characters() -> None:
    result = run_command((PY, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')"))
    assert result.stdout == "ok \ufffd\ufffd end\n"


def test_stdin_is_closed_so_a_command_reading_input_gets_eof() -> None:
    result = run_command((PY, "-c", "import sys; print(repr(sys.stdin.read()))"), timeout_s=60)
    assert result.stdout.strip() == "''"
    assert not result.timed_out


def test_environment_keeps_the_callers_colour_variables_and_only_turns_pagers_off() -> None:
    env = build_env({"FORCE_COLOR": "1", "CLICOLOR_FORCE": "1", "HOME": "/x"})
    assert env == {
        "FORCE_COLOR": "1",
        "CLICOLOR_FORCE": "1",
        "HOME": "/x",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "CARGO_TERM_COLOR": "never",
    }
    assert "NO_COLOR" not in build_env({})


def test_progress_bar_carriage_returns_keep_only_the_final_state() -> None:
    assert strip_ansi("10%\r50%\r100% done\nnext\n") == "100% done\nnext\n"


def test_a_formatters_padding_to_its_column_is_not_kept_so_its_report_fits_whole() -> None:
    # eslint-formatter-pretty (xo, tsd) pads each row to ~500 columns: escape-string-regexp's
    # tsd report was 1 MB, so the byte cap dropped its middle; two trailing spaces stay
    script = (
        "import sys\n"
        "for i in range(3000):\n"
        "    sys.stdout.write(f'  \\u2716  {i}:1  Cannot find name X.' + ' ' * 480 + '\\n')\n"
        "sys.stdout.write('kept  \\n\\n  3000 errors\\n')\n"
    )
    result = run_command([sys.executable, "-c", script], timeout_s=60)
    assert result.dropped_bytes == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 3003
    assert lines[0] == "  \u2716  0:1  Cannot find name X."
    assert "kept  " in lines


def test_the_live_display_sees_the_commands_output_but_not_greenloops_own_git_calls(
    tmp_path: Path,
) -> None:
    # a run's status line showed "verify · 5 s · +# touched" and a commit id: git's diff and
    # rev-parse for greenloop's bookkeeping, not the verifier's output
    from greenloop import git
    from greenloop.processes.process import watch_output

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    seen: list[bytes] = []
    with watch_output(seen.append):
        git.git(tmp_path, "rev-parse", "--git-dir")
        run_command([sys.executable, "-c", "print('the verifier speaks')"], timeout_s=60)
    shown = b"".join(seen)
    assert b"the verifier speaks" in shown
    assert b".git" not in shown
