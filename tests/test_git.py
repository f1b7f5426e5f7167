from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from greenloop import git

MakeRepo = Callable[..., Path]


def test_no_git_env_drops_repo_redirects_but_keeps_config_selection() -> None:
    env = git.no_git_env(
        {"GIT_DIR": "/elsewhere", "GIT_INDEX_FILE": "x", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/h"}
    )
    assert "GIT_DIR" not in env
    assert "GIT_INDEX_FILE" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["HOME"] == "/h"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_rev_parse_and_branch_of_a_fresh_repo(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n"})
    sha = git.rev_parse(root, "HEAD")
    assert sha is not None
    assert len(sha) == 40
    assert git.rev_parse(root, "no-such-ref") is None
    assert git.current_branch(root) == "main"
    assert git.common_dir(root) == (root / ".git").resolve()
    assert git.git_dir(root / ".") == (root / ".git").resolve()


def test_status_paths_lists_changed_and_untracked_files(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n"})
    (root / "a.txt").write_text("b\n")
    (root / "sub").mkdir()
    (root / "sub" / "new.txt").write_text("n\n")
    assert git.status_paths(root) == {"a.txt": " M", "sub/new.txt": "??"}


def test_add_all_and_commit_record_deletions_and_new_files(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n", "b.txt": "b\n"})
    base = git.rev_parse(root, "HEAD")
    assert base is not None
    (root / "a.txt").unlink()
    (root / "c.txt").write_text("c\n")
    git.add_all(root)
    assert git.staged_paths(root) == ("a.txt", "c.txt")
    git.commit(root, "subject\n\nbody\n")
    assert git.status_paths(root) == {}
    assert git.rev_list(root, f"{base}..HEAD") == (git.rev_parse(root, "HEAD"),)
    assert git.diff_names(root, base, "HEAD") == ("a.txt", "c.txt")
    assert "+c" in git.diff_commits(root, base, "HEAD")


def test_is_ancestor_and_update_ref(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n"})
    base = git.rev_parse(root, "HEAD")
    assert base is not None
    (root / "a.txt").write_text("b\n")
    git.add_all(root)
    git.commit(root, "two")
    tip = git.rev_parse(root, "HEAD")
    assert tip is not None
    assert git.is_ancestor(root, base, tip)
    assert not git.is_ancestor(root, tip, base)
    git.update_ref(root, "refs/greenloop/t", tip)
    git.reset_hard(root, base)
    assert (root / "a.txt").read_text() == "a\n"
    assert git.rev_parse(root, "refs/greenloop/t") == tip


def test_discover_reads_what_git_rev_parse_says_from_a_subdir_and_a_linked_worktree(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo({"pkg/a.txt": "a\n"})
    other = tmp_path / "other"
    git.git(root, "worktree", "add", "-q", "-b", "side", str(other))
    for cwd in (root, root / "pkg", other, other / "pkg"):
        said = git.git(
            cwd,
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ).stdout.split()
        found = git.discover(cwd.resolve())
        assert found is not None
        assert [str(p.resolve()) for p in found] == said
    assert git.discover(tmp_path) is None


def test_an_empty_git_folder_above_is_no_repository_as_git_itself_says(tmp_path: Path) -> None:
    """A stray empty ``.git`` folder (one appeared in /tmp on the test machine) is no repository:
    git looks past it, and greenloop must not make its hooks' state under it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    assert git.discover(tmp_path / "sub") is None
    probe = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=tmp_path / "sub", capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert probe.stdout.strip() != str(tmp_path)
