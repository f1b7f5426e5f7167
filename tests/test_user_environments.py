"""The environments real users have: started from a subdirectory, hostile git configuration, a
verifier or an agent that misbehaves. Real git repos in tmp dirs, real ``greenloop`` processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_process import git, greenloop
from test_claude_hook import CALC_BUG, PYTEST, project

SECRET_TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5, 'token SEKRET12345'\n"
)
CONFIG = (
    '[tool.greenloop]\nmax_iters = 1\nredact = ["SEKRET[0-9]+"]\n'
    f'[[tool.greenloop.stage]]\nname = "mytests"\nrun = "{PYTEST}"\n'
)


def test_run_from_a_subdirectory_reads_the_configuration_of_the_repository_it_runs_on(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": CALC_BUG, "test_calc.py": SECRET_TESTS, "pyproject.toml": CONFIG})
    (root / "docs").mkdir()
    out = greenloop(root / "docs", "run", "--agent", "true", "--yes")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "mytests" in out.stderr  # the configured stage, not a detected one
    assert "iter 1/1 " in out.stderr
    records = "".join(p.read_text() for p in (root / ".git" / "greenloop").rglob("*.md"))
    assert "SEKRET12345" not in out.stdout + out.stderr + records


def test_agent_command_whose_variable_is_set_from_a_command_substitution_is_accepted() -> None:
    from greenloop.agents.command import make_command_agent
    from greenloop.errors import FatalError

    spec = "REV=$(git rev-parse HEAD 2>/dev/null) sed -i s/a/b/ calc.py"
    assert make_command_agent(spec).command == spec  # `rev-parse` is not the program sh runs
    with pytest.raises(FatalError, match="`nosuchagent-xyz` is not a command"):
        make_command_agent("MODEL=small nosuchagent-xyz --fix")


def test_run_commits_the_fix_when_the_agent_leaves_a_git_index_lock_behind(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    agent = "sed -i 's/a - b/a + b/' calc.py && touch .git/index.lock"
    out = greenloop(root, "run", "--agent", agent, "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "index.lock: the agent left it" in out.stdout
    assert not (root / ".git" / "index.lock").exists()
    assert git(root, "status", "--porcelain") == ""
    assert "a + b" in git(root, "show", "HEAD:calc.py")


def test_git_failure_names_the_lock_file_not_gits_closing_advice(
    make_repo: Callable[..., Path],
) -> None:
    from greenloop import git as greenloop_git
    from greenloop.errors import FatalError

    root = make_repo({"a.txt": "x\n"})
    (root / "a.txt").write_text("y\n")
    (root / ".git" / "index.lock").touch()  # another git process, or one that was killed
    with pytest.raises(FatalError, match=r"git add failed: fatal: .*index\.lock.*File exists"):
        greenloop_git.add_all(root)


def test_run_puts_the_fix_back_on_its_branch_when_the_agent_checks_out_a_new_one(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    agent = "git checkout -q -b agent-branch && sed -i 's/a - b/a + b/' calc.py"
    out = greenloop(root, "run", "--agent", agent, "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "the agent moved to branch agent-branch; its work was put back on main" in out.stdout
    assert git(root, "branch", "--show-current") == "main\n"
    assert "a + b" in git(root, "show", "main:calc.py")
    assert git(root, "status", "--porcelain") == ""


def test_run_whose_agent_edits_inside_a_submodule_ends_and_names_the_edits_it_left_there(
    make_repo: Callable[..., Path],
) -> None:
    lib = make_repo({"lib.py": "X = 1\n"}, name="lib")
    root = project(make_repo, CALC_BUG, max_iters=2)
    add = ["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib"]
    subprocess.run(add, cwd=root, check=True, capture_output=True)
    git(root, "commit", "-qm", "lib as a submodule")
    out = greenloop(root, "run", "--agent", "echo 'X = 2' > lib/lib.py", "--yes")
    assert out.returncode == 1, out.stdout + out.stderr  # a failed run, not a refused reset
    assert "edits inside submodule(s) lib are left uncommitted there" in out.stdout
    assert (root / "lib" / "lib.py").read_text() == "X = 2\n"  # nothing lost
    again = greenloop(root, "run", "--agent", "true", "--yes")
    assert again.returncode == 2
    assert "   M lib" in again.stderr  # the next run still refuses the uncommitted edit (git: " M")


def test_check_from_a_source_subdirectory_verifies_the_work_tree_it_belongs_to(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    (root / "src" / "deep").mkdir(parents=True)
    out = greenloop(root / "src" / "deep", "check")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "test_calc.py::test_add" in out.stdout


def test_check_names_the_edited_file_when_the_user_sets_diff_mnemonic_prefix(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    git(root, "config", "diff.mnemonicPrefix", "true")  # `git diff` then prints i/ and w/
    (root / "calc.py").write_text("def add(a, b):\n    return a - b - 0\n")
    out = greenloop(root, "check")
    assert "YOUR LAST EDIT touched calc.py:2." in out.stdout, out.stdout


def test_failed_run_reverts_and_keeps_the_attempt_despite_a_users_reference_transaction_hook(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    hook = root / ".git" / "hooks" / "reference-transaction"  # as git-branchless installs one
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] && exit 1\nexit 0\n')
    hook.chmod(0o755)
    initial = git(root, "rev-parse", "HEAD")
    out = greenloop(root, "run", "--agent", "echo '# tried' >> calc.py", "--yes")
    assert out.returncode == 1, out.stdout + out.stderr
    assert git(root, "rev-parse", "HEAD") == initial
    kept = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()
    assert "# tried" in git(root, "show", f"{kept[0]}:calc.py")


def test_failed_run_whose_agent_ran_git_init_in_a_folder_reverts_and_leaves_that_folder(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    initial = git(root, "rev-parse", "HEAD")
    agent = "git init -q crate && echo x > crate/f.txt && echo '# tried' >> calc.py"
    out = greenloop(root, "run", "--agent", agent, "--yes")
    assert out.returncode == 1, out.stdout + out.stderr  # not `git add failed`
    assert "crate/: a git repository with no commit yet (git init); left untracked" in out.stdout
    assert git(root, "rev-parse", "HEAD") == initial
    assert (root / "crate" / "f.txt").read_text() == "x\n"
    kept = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()
    assert "# tried" in git(root, "show", f"{kept[0]}:calc.py")


def test_failed_run_leaves_no_rebase_in_progress_when_the_agent_left_a_conflicted_one(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    git(root, "checkout", "-q", "-b", "side")
    (root / "calc.py").write_text("def add(a, b):\n    return a * b\n")
    git(root, "commit", "-qam", "side")
    git(root, "checkout", "-q", "main")
    initial = git(root, "rev-parse", "HEAD")
    agent = "echo '# tried' >> calc.py && git commit -qam mine && git rebase -q side; true"
    out = greenloop(root, "run", "--agent", agent, "--yes")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "the agent left a rebase in progress: ended with git rebase --quit" in out.stdout
    assert not (root / ".git" / "rebase-merge").exists()  # its --abort would undo the revert
    assert (git(root, "branch", "--show-current"), git(root, "rev-parse", "HEAD")) == (
        "main\n",
        initial,
    )
    assert git(root, "for-each-ref", "refs/greenloop/")


def test_check_names_an_edited_file_with_a_non_ascii_name_as_itself(
    make_repo: Callable[..., Path],
) -> None:
    tests = "from módulo import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    config = CONFIG.replace('redact = ["SEKRET[0-9]+"]\n', "")
    root = make_repo({"módulo.py": CALC_BUG, "test_calc.py": tests, "pyproject.toml": config})
    (root / "módulo.py").write_text("def add(a, b):\n    return a - b - 0\n")
    out = greenloop(root, "check")
    assert "YOUR LAST EDIT touched módulo.py:2." in out.stdout, out.stdout


def test_run_says_git_is_missing_when_git_is_not_on_path(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"a.txt": "x\n"})
    tools = tmp_path / "bin"  # a PATH with a shell but no git
    tools.mkdir()
    (tools / "sh").symlink_to("/bin/sh")
    env = {**os.environ, "PATH": str(tools)}
    out = greenloop(root, "run", "--agent", "true", "--yes", "--", "true", env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "git: command not found: greenloop run needs git" in out.stderr
    assert "not inside a git work tree" not in out.stderr


def test_the_reports_bring_back_command_works_whatever_the_users_diff_configuration(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    git(root, "config", "diff.noprefix", "true")  # `git diff` then prints no a/ b/ for apply
    git(root, "config", "diff.external", "/bin/false")
    out = greenloop(root, "run", "--agent", "echo '# tried' >> calc.py", "--yes")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "# tried" not in (root / "calc.py").read_text()  # reverted
    command = out.stdout.split("To bring them back into the tree: ", 1)[1].splitlines()[0]
    back = subprocess.run(
        ["sh", "-c", command], cwd=root, capture_output=True, text=True, check=False
    )
    assert back.returncode == 0, back.stderr
    assert (root / "calc.py").read_text().endswith("# tried\n")


# `pip install .` (no -e) copies the package into site-packages; the copy here stands for it,
# and a stage whose PYTHONPATH puts that site-packages first imports it as pip's would be
SITE = f"venv/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
STALE_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def installed_copy_project(make_repo: Callable[..., Path], calc: str, *, src: bool) -> Path:
    """A repository whose tests import the project's package from a non-editable copy of it."""
    package = "src/calc/__init__.py" if src else "calc.py"
    run = f"PYTHONPATH={SITE} {sys.executable} -P -m pytest -q -p no:cacheprovider tests"
    config = (
        f'[tool.greenloop]\nmax_iters = 3\n[[tool.greenloop.stage]]\nname = "test"\nrun = "{run}"\n'
    )
    root = make_repo(
        {
            package: calc,
            "tests/test_calc.py": STALE_TESTS,
            "pyproject.toml": config,
            ".gitignore": "venv/\n",
        }
    )
    copy = root / SITE / ("calc/__init__.py" if src else "calc.py")
    copy.parent.mkdir(parents=True)
    copy.write_text(calc)
    return root


def test_check_names_the_repository_file_of_a_failure_inside_the_projects_installed_copy(
    make_repo: Callable[..., Path],
) -> None:
    root = installed_copy_project(make_repo, "def add(a, b):\n    return a + b.real()\n", src=True)
    out = greenloop(root, "check")
    assert out.returncode == 1, out.stdout + out.stderr  # the copy is the tree: a real failure
    assert "at src/calc/__init__.py:2 in add" in out.stdout, out.stdout


@pytest.mark.parametrize(
    ("installed", "tree"),
    [
        (CALC_BUG, "def add(a, b):\n    return a + b\n"),
        ("def add(a, b):\n    return a + b\n", CALC_BUG),
    ],
    ids=["fixed-tree-red-copy", "broken-tree-green-copy"],
)
def test_check_is_an_environment_failure_when_the_tests_import_a_stale_copy_installed_without_e(
    make_repo: Callable[..., Path], installed: str, tree: str
) -> None:
    root = installed_copy_project(make_repo, installed, src=True)
    (root / "src/calc/__init__.py").write_text(tree)
    out = greenloop(root, "check")
    assert out.returncode == 3, out.stdout + out.stderr  # neither red nor green is this tree's
    assert "src/calc/__init__.py differs from it" in out.stdout
    assert "(`venv/bin/python -m pip install -e .`)" in out.stdout


def test_run_stops_as_an_environment_failure_when_the_agents_fix_cannot_reach_the_installed_copy(
    make_repo: Callable[..., Path],
) -> None:
    root = installed_copy_project(make_repo, CALC_BUG, src=False)
    out = greenloop(root, "run", "--agent", "sed -i 's/a - b/a + b/' calc.py", "--yes")
    assert out.returncode == 3, out.stdout + out.stderr  # not "stalled", not sent back
    report = json.loads(greenloop(root, "report", "--format", "json").stdout)
    assert report["result"] == "env_failure"
    assert report["iterations"] == 1
    assert "pip install -e ." in out.stdout + out.stderr


def test_check_is_an_environment_failure_when_the_tests_import_the_package_of_another_checkout(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # the venv's editable install points at the main checkout; the agent works in a worktree
    main = tmp_path / "repo"
    run = f"PYTHONPATH={main}/src {sys.executable} -P -m pytest -q -p no:cacheprovider tests"
    config = f'[[tool.greenloop.stage]]\nname = "test"\nrun = "{run}"\n'
    files = {"src/calc/__init__.py": CALC_BUG, "tests/test_calc.py": STALE_TESTS}
    make_repo({**files, "pyproject.toml": config})
    worktree = tmp_path / "worktree"
    git(main, "worktree", "add", "-q", str(worktree))
    (worktree / "src/calc/__init__.py").write_text("def add(a, b):\n    return a + b\n")
    out = greenloop(worktree, "check")
    assert out.returncode == 3, out.stdout + out.stderr
    assert f"from another checkout ({main}/src/calc)" in out.stdout, out.stdout
    assert "src/calc/__init__.py differs from it" in out.stdout


TWO_TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
ADD_BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
ADD_FIXED = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"


def last_failed_project(make_repo: Callable[..., Path], run: str) -> Path:
    """A developer's quick loop in the project's options (``addopts = "--lf"``), its cache saying
    only test_add failed last time: with --lf a fixed add passes, mul's failure never runs."""
    config = (
        '[tool.pytest.ini_options]\naddopts = "--lf"\n'
        f'[[tool.greenloop.stage]]\nname = "test"\nrun = "{run}"\n'
    )
    files = {"calc.py": ADD_BUGGY, "test_calc.py": TWO_TESTS}
    root = make_repo({**files, "pyproject.toml": config, ".gitignore": ".pytest_cache/\n"})
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q"], cwd=root, capture_output=True, check=False
    )
    (root / "calc.py").write_text(ADD_FIXED)  # add fixed, mul broken
    return root


def test_check_runs_the_whole_suite_when_the_projects_options_ask_pytest_for_the_last_failures(
    make_repo: Callable[..., Path],
) -> None:
    root = last_failed_project(make_repo, f"{sys.executable} -m pytest -q")
    out = greenloop(root, "check")
    assert out.returncode == 1, out.stdout + out.stderr  # was GREEN: "1 passed"
    assert "test_calc.py::test_mul" in out.stdout
    assert "1 failed, 1 passed" in out.stdout


def test_check_does_not_trust_a_pytest_run_that_reran_only_the_last_failures_without_its_plugin(
    make_repo: Callable[..., Path],
) -> None:
    # greenloop's plugin cannot reach every pytest (tox does not pass PYTEST_PLUGINS on)
    root = last_failed_project(make_repo, f"env -u PYTEST_PLUGINS {sys.executable} -m pytest")
    out = greenloop(root, "check")
    assert out.returncode == 5, out.stdout + out.stderr
    assert "pytest ran only the last failures" in out.stdout


VAR = "GREENLOOP_TEST_DATABASE_URL"
READS_VAR = f'import os\n\nDB = os.environ["{VAR}"]\nCOLORS = {{"red": 1}}\n'
USES_DB = "from settings import DB\n\n\ndef test_db():\n    assert DB\n"
USES_COLORS = "from settings import COLORS\n\n\ndef test_c():\n    assert COLORS['blue']\n"


def test_check_calls_a_missing_environment_variable_the_environments_not_the_codes(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"settings.py": READS_VAR, "test_settings.py": USES_DB})
    env = {k: v for k, v in os.environ.items() if k != VAR}
    out = greenloop(root, "check", env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert f"the environment variable {VAR} is not set" in out.stdout
    assert f"Set {VAR} where the verifier runs" in out.stdout
    assert greenloop(root, "check", env={**env, VAR: "sqlite://"}).returncode == 0


def test_check_leaves_a_key_error_of_the_codes_own_mapping_to_the_agent(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"settings.py": READS_VAR, "test_settings.py": USES_COLORS})
    out = greenloop(root, "check", env={**os.environ, VAR: "sqlite://"})
    assert out.returncode == 1, out.stdout + out.stderr
    assert "KeyError: 'blue'" in out.stdout


SERVES = (
    "import socket\n\nPORT = {port}\n\n\ndef test_serves():\n    server = socket.socket()\n"
    "    server.bind(('127.0.0.1', PORT))\n    server.close()\n"
)
CALLS = (
    "import socket\n\nPORT = {port}\n\n\ndef test_calls():\n"
    "    socket.create_connection(('127.0.0.1', PORT), timeout=5).close()\n"
)


@pytest.mark.parametrize(
    ("test", "listening", "reason"),
    [
        (SERVES, True, "a port the tests need is in use by another process"),
        (CALLS, False, "a service is not running"),
    ],
    ids=["port-taken", "service-down"],
)
def test_check_calls_a_taken_port_or_a_stopped_service_the_environments(
    make_repo: Callable[..., Path], test: str, listening: bool, reason: str
) -> None:
    holder = socket.socket()  # another process's server (this one's, for the test)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    if listening:
        holder.listen()
    else:
        holder.close()  # nothing listens there any more
    try:
        root = make_repo({"test_net.py": test.format(port=port)})
        out = greenloop(root, "check")
    finally:
        holder.close()
    assert out.returncode == 3, out.stdout + out.stderr
    assert reason in out.stdout


def test_check_does_not_call_a_file_the_verifier_wrote_the_users_last_edit(
    make_repo: Callable[..., Path],
) -> None:
    # jest writes a renamed test's new snapshot into the tracked .snap file as it runs: the digest
    # said "YOUR LAST EDIT touched test/__snapshots__/x.snap:10-16" on a clean tree
    root = make_repo({"app.py": "X = 1\n", "app.snap": "old\n"})
    writes = "printf 'new\\n' >> app.snap; echo 'app.py:1: error: boom'; exit 1"
    out = greenloop(root, "check", "--", "sh", "-c", writes)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "app.py:1" in out.stdout
    assert "YOUR LAST EDIT" not in out.stdout, out.stdout
    git(root, "checkout", "app.snap")
    (root / "app.py").write_text("X = 2\n")
    out = greenloop(root, "check", "--", "sh", "-c", writes)
    assert "YOUR LAST EDIT touched app.py:1." in out.stdout, out.stdout
