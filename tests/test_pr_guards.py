"""Issue 27, ``greenloop pr``'s guards and limits: a budget, a weakened suite, a branch that moved
on, a checkout that is not the head, no token; secrets in every output; the pull request read
from each kind of event; annotations on repository files."""

from __future__ import annotations

import json
from pathlib import Path

from github_server import TOKEN, github_server, pull_json
from greenloop.pr.github import client_from_env
from pr_fixtures import BROKEN, FIX, NUMBER, PY, REPO, git, make_pr
from secret_shapes import PROJECT_PATTERN, SHAPES, leaks

STEPS = {
    "n": "0\n",
    "test_steps.py": "import unittest\n\n\nclass Steps(unittest.TestCase):\n"
    + "".join(
        f"    def test_step_{k}(self):\n        self.assertGreaterEqual(int(open('n').read()), {k})\n\n"
        for k in range(1, 6)
    ),
}
SPEND = (
    "echo $(( $(cat n) + 1 )) > n; "
    'printf \'{"cost_usd": 0.02, "prompt_tokens": 1200, "completion_tokens": 300}\' '
    '> "$GREENLOOP_USAGE_FILE"'
)


def test_max_cost_stops_the_pr_loop_before_the_third_call_and_pushes_nothing(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, {"NOTES": "wip\n"}, base=STEPS)
        before = pr.remote_head()

        done = pr.run(
            "--agent", SPEND, "--max-cost", "0.05", "--format", "json",
            verify=[PY, "-m", "unittest", "test_steps"],
        )  # fmt: skip

        assert done.returncode == 1, done.stderr
        result = json.loads(done.stdout)
        assert (result["result"], result["iterations"]) == ("budget_exhausted", 2)
        assert "would pass --max-cost $0.05: spent $0.0400" in result["report"]["reason"]
        assert pr.remote_head() == before
        (comment,) = gh.calls("POST", "/comments")
        body = comment.body["body"]
        assert "not fixed (budget_exhausted): nothing pushed" in body
        assert "Next: Nothing was pushed. The next agent call would pass the cost" in body
        assert "refs/greenloop/" not in body  # the attempt ref is in the job's clone only
        assert gh.check_runs[0]["conclusion"] == "failure"


def test_a_suspicious_pass_is_never_pushed(tmp_path: Path) -> None:
    skip = (
        "sed -i 's/    def test_add/    @unittest.skip(\"later\")\\n    def test_add/' test_calc.py"
    )
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        before = pr.remote_head()

        done = pr.run("--agent", skip)

        assert done.returncode == 5, done.stderr
        assert pr.remote_head() == before
        (comment,) = gh.calls("POST", "/comments")
        assert "green, but the run weakened the suite: nothing pushed" in comment.body["body"]


def test_a_branch_that_moved_on_is_not_forced_and_the_comment_says_so(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        seed = tmp_path / "seed"
        (seed / "NOTES").write_text("pushed while the job ran\n")
        git(seed, "add", "-A")
        git(seed, "commit", "-qm", "meanwhile")
        git(seed, "push", "-q", str(pr.origin), "feature")
        theirs = pr.remote_head()

        done = pr.run("--agent", FIX)

        assert done.returncode == 1
        assert pr.remote_head() == theirs  # their commit kept: nothing forced
        assert (
            "the push to feature was refused, not forced: [rejected] (fetch first)" in done.stderr
        )
        (comment,) = gh.calls("POST", "/comments")
        assert "but the push to feature was refused, not forced" in comment.body["body"]


def test_a_detached_checkout_of_the_head_gets_its_branch_and_a_merge_commit_is_refused(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        git(pr.checkout, "checkout", "-q", "--detach", "HEAD")

        done = pr.run("--agent", FIX, "--no-comment")

        assert done.returncode == 0, done.stderr
        assert git(pr.checkout, "symbolic-ref", "--short", "HEAD") == "feature"
        pr.reclone("merge")
        git(pr.checkout, "checkout", "-q", "--detach", "origin/main")  # GitHub's refs/pull/N/merge
        git(pr.checkout, "-c", "user.name=gh", "-c", "user.email=gh@x", "merge", "-q",
            "--no-ff", "-m", "Merge feature into main", pr.head_sha)  # fmt: skip

        refused = pr.run("--agent", FIX, "--no-comment")

        assert refused.returncode == 2
        assert "not the pull request's head feature" in refused.stderr
        assert "ref: ${{ github.head_ref }}" in refused.stderr


def test_without_a_token_the_comment_and_a_fix_pr_are_refused_but_a_bare_push_runs(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        del pr.env["GITHUB_TOKEN"]

        refused = pr.run("--agent", FIX, "--mode", "pr")

        assert refused.returncode == 2
        assert "GITHUB_TOKEN is not set" in refused.stderr
        done = pr.run("--agent", FIX, "--no-comment")
        assert done.returncode == 0, done.stderr
        assert not gh.requests
        assert "return a + b" in git(pr.origin, "show", "feature:calc.py")


SECRET_TEST = """\
import os
import unittest
from pathlib import Path


class Secrets(unittest.TestCase):
    def test_secrets_in_the_failure_message(self):
        text = Path(__file__).with_name("secrets.txt").read_text() + os.environ["GITHUB_TOKEN"]
        print(text)
        self.assertEqual(text, "", text)
"""


def test_no_seeded_secret_or_the_token_reaches_any_output_and_annotations_name_repo_files(
    tmp_path: Path,
) -> None:
    seeded = "\n".join(line for line, _ in SHAPES) + "\n"
    pattern = PROJECT_PATTERN.replace("\\", "\\\\")
    files = {
        "pyproject.toml": f'[tool.greenloop]\nredact = ["{pattern}"]\n',
        "tests/secrets.txt": seeded,
        "tests/test_secrets.py": SECRET_TEST,
    }
    agent = "cat tests/secrets.txt; echo \"token $GITHUB_TOKEN\"; echo 'password: agent-Pw-123456'"
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, files)

        done = pr.run("--agent", agent, "--max-iters", "2", "--html", str(tmp_path / "r.html"),
                      verify=[PY, "-m", "unittest", "discover", "-s", "tests"])  # fmt: skip

        assert done.returncode == 1, done.stderr
        outputs = {
            "stdout": done.stdout,
            "stderr": done.stderr,
            "requests": json.dumps([r.body for r in gh.requests]),
            "summary": (tmp_path / "step_summary.md").read_text(),
            "outputs": (tmp_path / "github_output").read_text(),
            "html": (tmp_path / "r.html").read_text(),
        }
        record = pr.checkout / ".git" / "greenloop"
        outputs |= {str(p): p.read_text(errors="replace") for p in record.rglob("*") if p.is_file()}
        assert len(outputs) > 10
        for name, text in outputs.items():
            assert not leaks(text), (name, leaks(text))
            assert TOKEN not in text, name
            assert "agent-Pw-123456" not in text, name
        (check,) = gh.check_runs
        annotations = check["output"]["annotations"]
        assert annotations
        assert {a["path"] for a in annotations} == {"tests/test_secrets.py"}  # not unittest/case.py
        assert annotations[0]["start_line"] == 10
        assert "[REDACTED]" in annotations[0]["message"]


def _context(tmp_path: Path, url: str, event: str, payload: dict[str, object]):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{event}.json"
    path.write_text(json.dumps(payload))
    environ = {
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_API_URL": url,
        "GITHUB_TOKEN": TOKEN,
    }
    return client_from_env(environ)[0]


def test_the_pull_request_is_read_from_check_run_comment_and_workflow_run_events(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        gh.pulls[NUMBER] = pull_json(REPO, NUMBER, "feature", "main", "abc123")
        gh.pulls[9] = pull_json(REPO, 9, "patch-1", "main", "def456", "someone/app")
        minimal = {"number": NUMBER, "head": {"ref": "feature", "repo": {"id": 1}}, "base": {}}

        check_run = _context(
            tmp_path, gh.url, "check_run", {"check_run": {"pull_requests": [minimal]}}
        )
        comment = _context(
            tmp_path, gh.url, "issue_comment", {"issue": {"number": NUMBER, "pull_request": {}}}
        )
        forked = _context(
            tmp_path, gh.url, "workflow_run",
            {"workflow_run": {"pull_requests": [], "head_branch": "patch-1",
                              "head_repository": {"owner": {"login": "someone"}}}},
        )  # fmt: skip

        for context in (check_run, comment):
            assert (context.number, context.head_ref, context.base_ref) == (
                NUMBER,
                "feature",
                "main",
            )
            assert (context.head_sha, context.fork) == ("abc123", False)
        assert (forked.number, forked.head_repo, forked.fork) == (9, "someone/app", True)
        paths = [r.path for r in gh.requests]
        assert paths == [
            f"/repos/{REPO}/pulls/{NUMBER}",
            f"/repos/{REPO}/pulls/{NUMBER}",
            f"/repos/{REPO}/pulls?state=open&head=someone%3Apatch-1",
        ]


def test_greenloops_own_check_run_completing_starts_no_loop(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        pull = {"number": NUMBER, "head": {"ref": "feature", "sha": pr.head_sha}, "base": {}}
        event = {
            "check_run": {"name": "greenloop", "conclusion": "failure", "pull_requests": [pull]}
        }
        Path(pr.env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event))
        pr.env["GITHUB_EVENT_NAME"] = "check_run"

        done = pr.run("--agent", "touch agent-was-called")

        assert done.returncode == 0, done.stderr
        assert "nothing to do: the event is greenloop's own check run" in done.stdout
        assert not (pr.checkout / "agent-was-called").exists()
        assert not gh.requests
        assert "result=skipped" in (tmp_path / "github_output").read_text()


def test_a_pull_request_the_api_cannot_find_is_one_clear_line(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        Path(pr.env["GITHUB_EVENT_PATH"]).write_text(
            json.dumps({"issue": {"number": 404, "pull_request": {}}})
        )
        pr.env["GITHUB_EVENT_NAME"] = "issue_comment"

        done = pr.run("--agent", FIX)

        assert done.returncode == 2
        assert done.stderr.strip() == (
            f"greenloop: cannot read the pull request: GitHub GET /repos/{REPO}/pulls/404: "
            "HTTP 404: Not Found"
        )


def test_a_base_branch_nobody_names_is_refused_and_base_names_it(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        Path(pr.env["GITHUB_EVENT_PATH"]).write_text("{}")
        pr.env |= {"GITHUB_EVENT_NAME": "push", "GITHUB_HEAD_REF": "feature"}

        refused = pr.run("--agent", FIX, "--no-comment")

        assert refused.returncode == 2
        assert "base branch is not known: pass --base REF" in refused.stderr
        done = pr.run("--agent", FIX, "--no-comment", "--base", "main")
        assert done.returncode == 0, done.stderr
        assert "return a + b" in git(pr.origin, "show", "feature:calc.py")
