"""The platforms greenloop supports (issue 41): what the README and the package metadata state,
held to what the code checks; a machine without a POSIX shell gets one line, exit 2."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from greenloop.cli.entry import NEEDS_SHELL, shell_missing
from greenloop.processes.process_table import ENV_BSD, PROBE_VAR, uses_proc
from limits import hang

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_classifiers_claim_only_what_is_shown() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    systems = {c for c in meta["classifiers"] if c.startswith("Operating System")}
    assert systems == {"Operating System :: POSIX :: Linux"}  # macOS: not proven on a Mac yet
    section = (ROOT / "README.md").read_text().split("## Platforms", 1)[1].split("\n## ", 1)[0]
    assert "Linux" in section
    assert "macOS" in section
    assert "WSL" in section
    assert "Git Bash" in section


@pytest.mark.parametrize("command", sorted(NEEDS_SHELL))
def test_every_command_that_runs_a_shell_says_in_one_line_that_sh_is_missing(
    command: str, tmp_path: Path
) -> None:
    said = shell_missing(command, str(tmp_path))
    assert said.startswith(f"greenloop {command} runs verifiers and agents through a POSIX shell")
    assert "\n" not in said
    assert shell_missing(command, os.pathsep.join([str(tmp_path), "/bin", "/usr/bin"])) == ""


def test_a_command_that_runs_no_shell_does_not_need_one(tmp_path: Path) -> None:
    assert shell_missing("detect", str(tmp_path)) == ""
    assert shell_missing("report", str(tmp_path)) == ""


def test_check_without_sh_on_path_exits_2_with_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # git and python, but no sh: as a Windows machine outside WSL
    bin_dir.mkdir()
    for tool in ("git",):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", "-C", str(tmp_path / "repo"), "check", "--", "true"],
        env={**os.environ, "PATH": str(bin_dir)}, capture_output=True, text=True,
        timeout=hang(120), check=False,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1
    assert "no `sh` is on PATH: on Windows run it in WSL, or in Git Bash" in out.stderr


def platforms_section() -> str:
    return (ROOT / "README.md").read_text().split("## Platforms", 1)[1].split("\n## ", 1)[0]


def test_readme_names_the_probe_switch_the_code_reads_and_the_bsd_environment_flag() -> None:
    section = " ".join(platforms_section().split())
    assert f"`{PROBE_VAR}=ps`" in section
    assert not uses_proc({PROBE_VAR: "ps"}, "linux")  # the switch the README names
    assert uses_proc({}, "linux")
    assert not uses_proc({}, "darwin")  # a Mac reads the table through ps
    assert "`-E` on BSD" in section
    assert ENV_BSD == ("-E",)


def test_readme_lists_exactly_the_commands_that_need_a_shell_and_those_that_need_none() -> None:
    section = " ".join(platforms_section().split())
    needing = section.split("every command that runs one (", 1)[1].split(")", 1)[0]
    assert set(re.findall(r"`(\w+)`", needing)) == NEEDS_SHELL
    none = section.split("exits 2 with one line saying so, and", 1)[1].split("need none", 1)[0]
    for command in re.findall(r"`(\w+)`", none):
        assert command not in NEEDS_SHELL
        assert shell_missing(command, "") == ""


def test_readme_claims_macos_and_native_windows_only_as_not_yet_claimed() -> None:
    section = " ".join(platforms_section().split())
    assert "**macOS**: not claimed yet" in section
    assert "Native Windows is not claimed" in section
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    assert "`.github/workflows/tests.yml` runs the suite on `macos-latest`" in section
    assert "macos-latest" in workflow["jobs"]["suite"]["strategy"]["matrix"]["os"]
    assert "windows-smoke" in workflow["jobs"]
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [c for c in meta["classifiers"] if "MacOS" in c or "Windows" in c]


# The test helpers that read /proc, each behind the same switch as greenloop's reader (ps where
# there is no /proc, or when GREENLOOP_PLATFORM_PROBE=ps forces the macOS path): any other test
# file that reads /proc would fail on the macOS job. A test that is about /proc itself belongs here
# too, with a pytest.mark.skipif(sys.platform != "linux") on it.
READS_PROC = {"tests/process_state.py", "tests/resources/escape.py"}
PROC_PATH = re.compile(r"""["']/proc(/|["'])""")  # the folder, or a path in it, as a literal


def test_no_test_file_reads_proc_but_the_helpers_that_fall_back_to_ps() -> None:
    readers = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if PROC_PATH.search(path.read_text())
    }
    assert readers - READS_PROC == set(), "read the process table through tests/process_state.py"
    assert readers == READS_PROC  # the list is not stale
    for allowed in READS_PROC:
        assert PROBE_VAR in (ROOT / allowed).read_text()  # switched as greenloop's reader is
    assert "the tests' own look at the process table reads `ps` there too" in " ".join(
        platforms_section().split()
    )


@pytest.mark.skipif(sys.platform != "linux", reason="compares ps with /proc, which is Linux's")
def test_the_test_helpers_read_through_ps_what_they_read_from_proc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import process_state

    code = "__import__('time').sleep(60)"  # no spaces: ps prints the arguments joined by them
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    process_state.exited_unreaped(zombie.pid)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    with subprocess.Popen([sys.executable, "-c", code]) as sleeper:
        try:
            seen = {}
            for probe in ("proc", "ps"):
                monkeypatch.setenv(PROBE_VAR, probe)
                assert process_state.reads_proc() is (probe == "proc")
                states = [process_state.state(p) for p in (sleeper.pid, zombie.pid)]
                assert [s[:1] if s else s for s in states] in (["S", "Z"], ["R", "Z"]), probe
                assert process_state.state(int(gone.stdout)) is None, probe
                assert {sleeper.pid, zombie.pid} <= set(process_state.children(os.getpid()))
                seen[probe] = process_state.command_lines()[sleeper.pid]
            argv = [sys.executable.encode(), b"-c", code.encode()]
            assert seen == {"proc": [*argv, b""], "ps": argv}
        finally:
            sleeper.kill()
            zombie.wait()
