"""instrument: structured side channels only where they cannot change the result."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from greenloop.verify import instrument
from limits import hang


def env_of(argv: tuple[str, ...], root: Path, **environ: str) -> dict[str, str]:
    inst = instrument.prepare(argv, root, environ)
    instrument.cleanup(inst)
    return dict(inst.env)


def test_pytest_named_anywhere_gets_the_plugin_prepended_to_existing_values(tmp_path: Path) -> None:
    for argv in (("pytest", "-x"), ("python", "-m", "pytest"), ("sh", "-c", "uv run pytest -q")):
        env = env_of(argv, tmp_path, PYTHONPATH="/mine", PYTEST_PLUGINS="theirs")
        assert env["PYTEST_PLUGINS"] == "greenloop_pytest_plugin,theirs"
        first, rest = env["PYTHONPATH"].split(os.pathsep)
        assert rest == "/mine"
        assert first.endswith("plugin")


def test_plugin_dir_holds_only_the_plugin_module(tmp_path: Path) -> None:
    inst = instrument.prepare(("pytest",), tmp_path, {})
    try:
        plugin_dir = Path(dict(inst.env)["PYTHONPATH"])
        assert sorted(os.listdir(plugin_dir)) == ["greenloop_pytest_plugin.py"]
    finally:
        instrument.cleanup(inst)
    assert inst.artifact_dir is not None
    assert not inst.artifact_dir.exists()


def test_task_runner_gets_the_plugin_only_in_a_python_project(tmp_path: Path) -> None:
    assert "PYTEST_PLUGINS" not in env_of(("make", "test"), tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    assert "PYTEST_PLUGINS" in env_of(("make", "test"), tmp_path)
    assert "PYTEST_PLUGINS" not in env_of(("cargo", "test"), tmp_path)


def test_ruff_json_only_for_ruff_check_in_argv_form(tmp_path: Path) -> None:
    assert env_of(("ruff", "check", "."), tmp_path)["RUFF_OUTPUT_FORMAT"] == "json"
    assert "RUFF_OUTPUT_FORMAT" not in env_of(("ruff", "format", "--check"), tmp_path)
    assert "RUFF_OUTPUT_FORMAT" not in env_of(("sh", "-c", "ruff check ."), tmp_path)
    assert "RUFF_OUTPUT_FORMAT" not in env_of(("ruff", "check", "--output-format=full"), tmp_path)


def test_goflags_verbose_only_for_go_test(tmp_path: Path) -> None:
    assert env_of(("go", "test", "./..."), tmp_path, GOFLAGS="-mod=mod")["GOFLAGS"] == (
        "-v -mod=mod"
    )
    assert "GOFLAGS" not in env_of(("go", "vet", "./..."), tmp_path)


def test_node_test_gets_junit_unless_it_chose_a_reporter(tmp_path: Path) -> None:
    options = env_of(("node", "--test"), tmp_path, NODE_OPTIONS="--max-old-space-size=512")
    assert "--test-reporter=junit" in options["NODE_OPTIONS"]
    assert options["NODE_OPTIONS"].endswith("--max-old-space-size=512")
    assert "NODE_OPTIONS" not in env_of(("node", "--test", "--test-reporter=tap"), tmp_path)
    assert "NODE_OPTIONS" not in env_of(("node", "app.js"), tmp_path)


def test_collect_reads_only_junit_written_after_the_start(tmp_path: Path) -> None:
    reports = tmp_path / "target" / "surefire-reports"
    reports.mkdir(parents=True)
    old = reports / "TEST-old.xml"
    old.write_text("<old/>")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    inst = instrument.prepare(("mvn", "test"), tmp_path, {})
    (reports / "TEST-new.xml").write_text("<testsuite/>")
    assert instrument.collect(inst) == (
        ("junit/target/surefire-reports/TEST-new.xml", "<testsuite/>"),
    )


def test_unrelated_commands_get_nothing(tmp_path: Path) -> None:
    inst = instrument.prepare(("cargo", "test"), tmp_path, {})
    assert inst.env == ()
    assert inst.artifact_dir is None
    assert instrument.collect(inst) == ()


def test_plugin_dir_is_kept_in_the_user_cache_dir_so_its_bytecode_outlives_a_run(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    dirs = []
    for _ in range(2):
        inst = instrument.prepare(("pytest",), tmp_path, {"XDG_CACHE_HOME": str(cache)})
        dirs.append(Path(dict(inst.env)["PYTHONPATH"]))
        instrument.cleanup(inst)
        assert inst.artifact_dir is not None
        assert not inst.artifact_dir.exists()
    assert dirs[0] == dirs[1]
    assert dirs[0].is_relative_to(cache)
    assert os.listdir(dirs[0]) == ["greenloop_pytest_plugin.py"]  # nothing else to import


def test_a_command_that_sets_pythonpath_itself_gets_the_plugin_inside_its_own_assignment() -> None:
    inst = instrument.Instrumentation(pytest_plugin=True, plugin_dir=Path("/c/pl ug"))
    cases = {
        "PYTHONPATH=src pytest": "PYTHONPATH='/c/pl ug':src pytest",
        'PYTHONPATH="src:lib" python -m pytest': "PYTHONPATH='/c/pl ug':\"src:lib\" python -m pytest",
        "export PYTHONPATH=src; pytest": "export PYTHONPATH='/c/pl ug':src; pytest",
        "cd x && PYTHONPATH= pytest": "cd x && PYTHONPATH='/c/pl ug' pytest",  # no empty entry
        "echo ${PYTHONPATH}; X_PYTHONPATH=1 pytest": "echo ${PYTHONPATH}; X_PYTHONPATH=1 pytest",
    }
    for command, expected in cases.items():
        assert instrument.command(command, inst) == expected
    argv = ("env", "PYTHONPATH=src", "pytest")
    assert instrument.command(argv, inst) == ("env", "PYTHONPATH=/c/pl ug:src", "pytest")
    assert instrument.command(("pytest", "-x"), inst) == ("pytest", "-x")
    # a batch task's `verifier` string reaches the loop as sh -c SCRIPT (issue 28)
    shell = ("sh", "-c", "PYTHONPATH=src pytest -q tests")
    assert instrument.command(shell, inst) == (
        "sh",
        "-c",
        "PYTHONPATH='/c/pl ug':src pytest -q tests",
    )
    plain = instrument.Instrumentation()
    assert instrument.command("PYTHONPATH=src pytest", plain) == "PYTHONPATH=src pytest"


MANY_SUBTESTS = """package m

import (
\t"fmt"
\t"testing"
)

func TestMany(t *testing.T) {
\tfor i := 0; i < 3000; i++ {
\t\ti := i
\t\tt.Run(fmt.Sprintf("case_%04d", i), func(t *testing.T) {
\t\t\tif i == 1500 {
\t\t\t\tt.Errorf("got %d, want %d", i+1, i)
\t\t\t}
\t\t})
\t}
}
"""


@pytest.mark.skipif(
    shutil.which("go") is None, reason="go is not installed (apt-get install golang-go)"
)
def test_go_test_keeps_a_failure_from_the_middle_of_a_run_bigger_than_the_capture_cap(
    tmp_path: Path,
) -> None:
    # 3 000 subtests: ~1.9 MB of -json events (the cap keeps 64 KiB + 512 KiB), ~0.2 MB of -v text
    (tmp_path / "go.mod").write_text("module example.com/m\n\ngo 1.18\n")
    (tmp_path / "m_test.go").write_text(MANY_SUBTESTS)
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "", "GOCACHE": str(tmp_path / ".cache")}
    argv = [sys.executable, "-m", "greenloop", "-C", str(tmp_path), "check", "--format", "json"]
    done = subprocess.run(
        [*argv, "--", "go", "test", "./..."],
        capture_output=True, text=True, timeout=hang(300), check=False, env=env,
    )  # fmt: skip
    out = json.loads(done.stdout)
    assert (done.returncode, out["verdict"]) == (1, "failed"), done.stderr
    assert [f["id"] for f in out["failures"]] == ["example.com/m.TestMany/case_1500"]
    assert out["failures"][0]["message"] == "got 1501, want 1500"
    assert (out["counts"]["passed"], out["counts"]["failed"]) == (2999, 1)
