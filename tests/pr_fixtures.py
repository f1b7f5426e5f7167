"""A pull request as CI sees it: a bare ``origin`` on disk, the base and head branches pushed to
it, a fresh clone checked out at the head, the event payload file and the job's GITHUB_* variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from github_server import TOKEN, GitHubState, pull_json
from limits import hang

PY = sys.executable
REPO = "octo/app"
NUMBER = 7
TIMEOUT_S = hang(240)
CALC = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "test_calc.py": (
        "import unittest\n\nfrom calc import add\n\n\nclass Add(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    ),
    ".gitignore": "__pycache__/\n",
}
BROKEN = {"calc.py": "def add(a, b):\n    return a - b\n"}
FIX = "sed -i 's/a - b/a + b/' calc.py; echo 'Summary: add adds'"
VERIFY = [PY, "-m", "unittest", "test_calc"]  # not pytest: its plugins here cost seconds a run


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@dataclass
class Pr:
    origin: Path
    checkout: Path
    head_sha: str
    env: dict[str, str]
    tmp: Path

    def run(self, *args: str, verify: list[str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "greenloop", "pr", *args, "--", *(verify or VERIFY)],
            cwd=self.checkout, env=self.env, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip

    def remote_head(self, branch: str = "feature") -> str:
        return git(self.origin, "rev-parse", f"refs/heads/{branch}")

    def reclone(self, name: str) -> None:
        """A new job: a fresh clone at the head as the remote has it now."""
        self.checkout = self.tmp / name
        git(self.tmp, "clone", "-q", "-b", "feature", str(self.origin), name)
        self.head_sha = git(self.checkout, "rev-parse", "HEAD")
        self.write_event()

    def write_event(self, *, head_repo: str = REPO, base: str = "main") -> None:
        pull = pull_json(REPO, NUMBER, "feature", base, self.head_sha, head_repo)
        event = {"action": "synchronize", "number": NUMBER, "pull_request": pull}
        Path(self.env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event))


def make_pr(
    tmp: Path, server: GitHubState, head: dict[str, str], base: dict[str, str] | None = None
) -> Pr:
    """``main`` holds ``base`` (default CALC), ``feature`` one commit more: ``head``'s files."""
    origin, seed = tmp / "origin.git", tmp / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed.mkdir()
    _write(seed, base or CALC)
    git(seed, "init", "-q", "-b", "main")
    for key, value in (("user.email", "dev@example.com"), ("user.name", "Dev")):
        git(seed, "config", key, value)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "initial")
    git(seed, "checkout", "-qb", "feature")
    _write(seed, head)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "feature: the change under review")
    git(seed, "push", "-q", str(origin), "main", "feature")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_"))}
    env |= {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp / "event.json"),
        "GITHUB_API_URL": server.url,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_OUTPUT": str(tmp / "github_output"),
        "GITHUB_STEP_SUMMARY": str(tmp / "step_summary.md"),
        "GIT_CONFIG_GLOBAL": str(tmp / "gitconfig"),  # the runner's: no identity of its own
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    pr = Pr(origin=origin, checkout=tmp, head_sha="", env=env, tmp=tmp)
    pr.reclone("checkout")
    server.pulls[NUMBER] = pull_json(REPO, NUMBER, "feature", "main", pr.head_sha)
    return pr


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
