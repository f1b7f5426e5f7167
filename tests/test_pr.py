"""Issue 27: ``greenloop pr`` on a pull request's head, against a bare ``origin`` on disk and
GitHub's REST API served on 127.0.0.1 (comments, pull requests, check runs), bodies asserted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from github_server import TOKEN, github_server
from pr_fixtures import BROKEN, FIX, NUMBER, REPO, git, make_pr

MARKER = "<!-- greenloop:pr-comment -->"


def test_a_red_pr_is_fixed_pushed_and_its_one_comment_edited_when_it_runs_again(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        gh.comments[NUMBER] = [{"id": i, "body": f"review {i}"} for i in range(1, 121)]  # 2 pages
        pr = make_pr(tmp_path, gh, BROKEN)
        before = pr.remote_head()

        done = pr.run("--agent", FIX)

        assert done.returncode == 0, done.stderr
        pushed = git(pr.origin, "log", "--format=%s", f"{before}..feature").splitlines()
        assert pushed == ["agent[iter 1/5]: add adds"]
        assert "return a + b" in git(pr.origin, "show", "feature:calc.py")
        created = gh.calls("POST", rf"/issues/{NUMBER}/comments$")
        assert len(created) == 1
        assert not gh.calls("PATCH")
        body = created[0].body["body"]
        assert body.startswith(MARKER)
        assert "pushed 1 commit(s) to `feature`" in body
        assert "## ✅ greenloop: success" in body  # report --format md
        assert created[0].headers["Authorization"] == f"Bearer {TOKEN}"
        (check,) = gh.check_runs
        assert (check["head_sha"], check["conclusion"]) == (pr.remote_head(), "success")
        outputs = (tmp_path / "github_output").read_text()
        assert "result=success\niterations=1\naction=pushed\n" in outputs
        report = outputs.split("report=", 1)[1].splitlines()[0]
        assert Path(report).read_text().startswith("## ✅ greenloop: success")
        assert "## ✅ greenloop: success" in (tmp_path / "step_summary.md").read_text()

        # the developer pushes on: a new job on a head that is theirs again, and green
        seed = tmp_path / "seed"
        git(seed, "pull", "-q", str(pr.origin), "feature")
        (seed / "README").write_text("docs\n")
        git(seed, "add", "-A")
        git(seed, "commit", "-qm", "docs")
        git(seed, "push", "-q", str(pr.origin), "feature")
        pr.reclone("checkout2")
        gh.requests.clear()
        (first_id,) = (c["id"] for c in gh.comments[NUMBER] if MARKER in c["body"])

        again = pr.run("--agent", "touch agent-was-called")

        assert again.returncode == 0, again.stderr
        assert not (pr.checkout / "agent-was-called").exists()
        assert not gh.calls("POST", "/comments")  # edited in place, not a second comment
        (edit,) = gh.calls("PATCH", r"/issues/comments/\d+$")
        assert edit.path == f"/repos/{REPO}/issues/comments/{first_id}"
        assert edit.body["body"].startswith(MARKER)
        assert gh.calls("GET", r"page=2")  # found again on the second page
        ours = [c for c in gh.comments[NUMBER] if MARKER in c["body"]]
        assert len(ours) == 1
        assert "the verifier is green at" in ours[0]["body"]
        assert "no agent was called" in ours[0]["body"]


def test_a_second_run_on_greenloops_own_push_does_nothing(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        assert pr.run("--agent", FIX).returncode == 0
        pr.reclone("after-push")  # the push started the workflow again
        gh.requests.clear()

        done = pr.run("--agent", "touch agent-was-called")

        assert done.returncode == 0, done.stderr
        assert "nothing to do: the newest commit is greenloop's own" in done.stdout
        assert not (pr.checkout / "agent-was-called").exists()
        assert not gh.requests  # the event said it all: no request, nothing written
        assert "result=skipped" in (tmp_path / "github_output").read_text()


def test_mode_pr_opens_one_pull_request_whose_head_holds_the_commits(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        before = pr.remote_head()

        done = pr.run("--agent", FIX, "--mode", "pr", "--format", "json")

        assert done.returncode == 0, done.stderr
        assert pr.remote_head() == before  # the PR's own branch untouched
        (opened,) = gh.calls("POST", rf"/repos/{REPO}/pulls$")
        head, base = opened.body["head"], opened.body["base"]
        assert base == "feature"
        assert head.startswith(f"greenloop/fix-{NUMBER}-")
        commits = git(pr.origin, "log", "--format=%s", f"feature..{head}").splitlines()
        assert commits == ["agent[iter 1/5]: add adds"]
        assert opened.body["body"].startswith(f"**greenloop** made #{NUMBER} green: 1 commit(s)")
        assert "## ✅ greenloop: success" in opened.body["body"]
        result = json.loads(done.stdout)
        assert result["action"] == "opened"
        assert result["branch"] == head
        assert result["pull_url"].endswith("/pull/8")
        (comment,) = gh.calls("POST", "/comments")
        assert result["pull_url"] in comment.body["body"]


def test_a_fork_pr_is_refused_with_one_clear_line_and_nothing_run(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        pr.write_event(head_repo="someone/app")

        done = pr.run("--agent", "touch agent-was-called")

        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert lines == [
            "greenloop: the pull request's head is in the fork someone/app, which this job's "
            "token cannot push to: nothing run; use --mode suggest to comment the fix instead"
        ]
        assert not (pr.checkout / "agent-was-called").exists()
        assert not gh.calls("POST")
        assert not gh.calls("PATCH")


def test_a_pr_whose_head_is_its_base_branch_is_refused(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        pr.write_event(base="feature")

        done = pr.run("--agent", FIX)

        assert done.returncode == 2
        assert "greenloop never pushes to the base branch" in done.stderr
        assert not gh.calls("POST")


def test_suggest_mode_comments_the_diff_and_pushes_nothing(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        before = pr.remote_head()

        done = pr.run("--agent", FIX, "--mode", "suggest")

        assert done.returncode == 0, done.stderr
        assert pr.remote_head() == before
        assert git(pr.origin, "for-each-ref", "--format=%(refname)") == (
            "refs/heads/feature\nrefs/heads/main"
        )
        (comment,) = gh.calls("POST", "/comments")
        body = comment.body["body"]
        assert "nothing pushed (`--mode suggest`)" in body
        assert "```diff\n" in body
        assert "-    return a - b\n+    return a + b" in body


def test_run_pr_as_a_library_call_pushes_and_comments_through_the_forge_protocol(
    tmp_path: Path,
) -> None:
    from greenloop import Config
    from greenloop.agents.command import CommandAgent
    from greenloop.pr import Action, run_pr
    from greenloop.pr.forge import PrContext
    from greenloop.pr.github import GitHub
    from pr_fixtures import VERIFY

    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        context = PrContext(
            repo=REPO, number=NUMBER, head_ref="feature", base_ref="main", head_repo=REPO,
            head_sha=pr.head_sha,
        )  # fmt: skip
        forge = GitHub(context, token=TOKEN, api_url=gh.url)

        result = run_pr(
            pr.checkout, CommandAgent(command=FIX), context=context, forge=forge,
            config=Config(max_iters=3), command=VERIFY,
        )  # fmt: skip

        assert (result.result, result.exit_code, result.action) == ("success", 0, Action.PUSHED)
        assert result.pushed == (pr.remote_head(),)
        assert result.comment_url == gh.comments[NUMBER][0]["html_url"]
        assert result.check_url.startswith("https://github.example/runs/")


def test_a_pip_install_e_egg_info_left_by_the_ci_set_up_is_kept_out_not_refused(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        before = pr.remote_head()
        # what `pip install -e .` leaves in a setuptools project, as docs/ci.md's set-up runs it
        (pr.checkout / "calc.egg-info").mkdir()
        (pr.checkout / "calc.egg-info" / "PKG-INFO").write_text("Name: calc\n")

        done = pr.run("--agent", FIX)

        assert done.returncode == 0, done.stderr
        assert "commit or stash" not in done.stderr
        assert "kept out of git: calc.egg-info/" in done.stderr
        pushed = git(pr.origin, "diff", "--name-only", before, "feature").splitlines()
        assert pushed == ["calc.py"]  # the metadata is not committed with the agent's fix


def test_a_comment_by_another_user_carrying_the_marker_is_never_edited(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        forged = {"id": 7, "body": f"{MARKER}\nhello", "user": {"login": "mallory", "type": "User"}}
        gh.comments[NUMBER] = [forged]
        pr = make_pr(tmp_path, gh, BROKEN)

        done = pr.run("--agent", FIX)

        assert done.returncode == 0, done.stderr
        assert not gh.calls("PATCH")  # mallory's comment keeps its words
        assert gh.comments[NUMBER][0]["body"] == f"{MARKER}\nhello"
        (created,) = gh.calls("POST", rf"/issues/{NUMBER}/comments$")
        assert created.body["body"].startswith(MARKER)
        assert "ignored comment 7 by mallory: it carries greenloop's marker" in done.stderr

        # the next run finds its own comment, not mallory's
        from greenloop.pr.forge import PrContext
        from greenloop.pr.github import GitHub

        context = PrContext(repo=REPO, number=NUMBER, head_ref="feature", base_ref="main",
                            head_repo=REPO)  # fmt: skip
        forge = GitHub(context, token=TOKEN, api_url=gh.url, environ={"GITHUB_ACTIONS": "true"})
        found = forge.find_comment()
        assert found is not None
        assert found.id == str(created_id(gh))
        assert forge.ignored == ["comment 7 by mallory"]


def created_id(gh: Any) -> int:
    (mine,) = [c for c in gh.comments[NUMBER] if c.get("user", {}).get("type") == "Bot"]
    return int(mine["id"])


def test_a_prs_budget_spent_by_two_runs_stops_the_third_before_any_agent_call(
    tmp_path: Path,
) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        # spends $0.50 a call and never fixes anything
        agent = (
            'echo \'{"cost_usd": 0.5}\' > "$GREENLOOP_USAGE_FILE"; touch called; echo x >> n.txt'
        )
        codes = []
        for n in range(3):  # each a new job on a fresh runner: nothing kept on the machine
            pr.reclone(f"job{n}")
            done = pr.run("--agent", agent, "--max-iters", "1", "--pr-max-cost", "1.0")
            codes.append(done.returncode)
            called = (pr.checkout / "called").exists() or bool(
                git(pr.checkout, "log", "--all", "--format=%s", "--grep=agent\\[iter")
            )
            assert called is (n < 2), (n, done.stdout, done.stderr)
        assert codes == [1, 1, 7]
        ours = [c for c in gh.comments[NUMBER] if MARKER in c["body"]]
        assert len(ours) == 1  # one comment, kept up to date across the three runs
        body = ours[0]["body"]
        assert "greenloop: budget spent" in body
        assert "$1.00 spent over 2 runs (cap $1.00); last verdict: exhausted" in body
        assert "no agent was called" in done.stderr


def test_a_forged_comment_cannot_rearm_a_prs_budget(tmp_path: Path) -> None:
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, BROKEN)
        agent = 'echo \'{"cost_usd": 0.5}\' > "$GREENLOOP_USAGE_FILE"; echo x >> n.txt'
        for n in range(2):
            pr.reclone(f"job{n}")
            pr.run("--agent", agent, "--max-iters", "1", "--pr-max-cost", "1.0")
        # someone posts a comment with greenloop's markers claiming nothing was spent
        reset = '<!-- greenloop:pr-budget {"spent_usd":0,"attempts":0,"last":""} -->'
        gh.comments[NUMBER].insert(
            0, {"id": 1, "body": f"{MARKER}\n{reset}", "user": {"login": "m"}}
        )
        pr.reclone("job2")
        done = pr.run("--agent", agent, "--max-iters", "1", "--pr-max-cost", "1.0")
        assert done.returncode == 7, done.stdout + done.stderr
