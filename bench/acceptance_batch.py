"""Issue 28 item 4's must-hold batch: declared acceptance on real public projects.

20 tasks over four small pure-Python projects (cachetools, markupsafe, tomli, itsdangerous), each a
one-line bug planted in the project's own source (a ``greenloop.bench.mutate`` single-site
mutation, written out here as its line): 14 a scripted agent fixes (it reverts the planted line),
2 it cannot (it edits nothing: stalled), 2 whose planted bug no test catches (already green at
baseline: invalid), and 3 with declared ``fail_to_pass`` / ``pass_to_pass`` tests (found by running
the suite on the bug once): one the agent fixes, one it "fixes" by deleting the failing tests and
one by marking them skipped. Expected: ``14/18 solved (78 %), 2 invalid: already green at
baseline, declared acceptance met in 1/3, 20 finished``; both cheats are not solved.

Sources: a clone of the fetched repository (``/work/.mirror/<owner>+<name>/repo``) when there is
one, else the project's sdist from PyPI (pinned; cached under ``~/.cache/greenloop-bench``).

Usage: python bench/acceptance_batch.py [--out DIR] [--workers 2] [--small]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

PYTHON = sys.executable
AGENT = Path(__file__).resolve().parent / "_acceptance_agent.py"
CACHE = Path.home() / ".cache" / "greenloop-bench" / "sdists"
TIMEOUT_S = 600


@dataclass(frozen=True, slots=True, kw_only=True)
class Project:
    name: str
    mirror: str
    """``owner+name`` under /work/.mirror (the ``fetch`` tool's copy of the GitHub repository)."""
    sdist: str
    """``name==version`` on PyPI, whose sdist carries the tests."""
    tests: str
    """The verifier's test paths."""


PROJECTS = {
    "cachetools": Project(
        name="cachetools", mirror="tkem+cachetools", sdist="cachetools==7.0.6", tests="tests"
    ),
    "markupsafe": Project(
        name="markupsafe", mirror="pallets+markupsafe", sdist="markupsafe==3.0.4", tests="tests"
    ),
    "tomli": Project(name="tomli", mirror="hukkin+tomli", sdist="", tests="tests"),
    "itsdangerous": Project(
        name="itsdangerous",
        mirror="pallets+itsdangerous",
        sdist="itsdangerous==2.2.0",
        # test_timed.py and test_url_safe.py need freezegun: not a dependency worth adding here
        tests="tests/test_itsdangerous/test_signer.py tests/test_itsdangerous/test_encoding.py "
        "tests/test_itsdangerous/test_serializer.py",
    ),
}
CACHETOOLS = "src/cachetools/__init__.py"
MARKUPSAFE = "src/markupsafe/__init__.py"
TOMLI = "src/tomli/_parser.py"
SIGNER = "src/itsdangerous/signer.py"


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    """One task: a planted line in ``file`` (the ``nth`` occurrence of ``old``) and what the agent does."""

    id: str
    project: str
    file: str
    old: str
    new: str
    nth: int = 0
    agent: str = "fix"
    """``fix`` (reverts the planted line), ``nothing``, ``delete`` or ``skip`` (the declared
    failing tests: the two cheats)."""
    declared: bool = False
    expected: str = "success"


FULL = (
    Spec(id="ct-ttl-delete", project="cachetools", file=CACHETOOLS,
         old="and not (time < curr.expires):", new="and not (time <= curr.expires):",
         agent="delete", declared=True, expected="suspicious_pass"),
    Spec(id="ct-tlru-order", project="cachetools", file=CACHETOOLS,
         old="(order[0].removed or not", new="(order[0].removed and not"),
    Spec(id="ct-tlru-removed", project="cachetools", file=CACHETOOLS,
         old="item.removed = True", new="item.removed = False"),
    Spec(id="ct-cached-info", project="cachetools", file=CACHETOOLS,
         old="        if info:", new="        if not (info):"),
    Spec(id="ct-lfu-uncaught", project="cachetools", file=CACHETOOLS,
         old="LFUCache._Link(link.count + 1)", new="LFUCache._Link(link.count - 1)",
         expected="invalid"),
    Spec(id="ms-add-declared", project="markupsafe", file=MARKUPSAFE,
         old='str) or hasattr(value, "__html__"):\n            return self.escape(value).__add__',
         new='str) and hasattr(value, "__html__"):\n            return self.escape(value).__add__',
         declared=True),
    Spec(id="ms-keepends", project="markupsafe", file=MARKUPSAFE,
         old="keepends: bool = False", new="keepends: bool = True"),
    Spec(id="ms-comment", project="markupsafe", file=MARKUPSAFE,
         old='while (start := value.find("<!--")) != -1:',
         new='while (start := value.find("<!--")) == -1:'),
    Spec(id="ms-soft-str-stuck", project="markupsafe", file=MARKUPSAFE,
         old="return str(s)", new="return None", agent="nothing", expected="stalled"),
    Spec(id="ms-rsplit-uncaught", project="markupsafe", file=MARKUPSAFE,
         old="maxsplit: t.SupportsIndex = -1", new="maxsplit: t.SupportsIndex = -2", nth=1,
         expected="invalid"),
    Spec(id="tl-equals", project="tomli", file=TOMLI,
         old='if char != "=":', new='if char == "=":'),
    Spec(id="tl-float", project="tomli", file=TOMLI,
         old="return pos + 3, parse_float(first_three)", new="return None"),
    Spec(id="tl-array-skip", project="tomli", file=TOMLI,
         old="return pos + 1, array", new="return pos - 1, array",
         agent="skip", declared=True, expected="suspicious_pass"),
    Spec(id="id-concat", project="itsdangerous", file=SIGNER,
         old='if self.key_derivation == "concat":', new='if self.key_derivation != "concat":'),
    Spec(id="id-hmac", project="itsdangerous", file=SIGNER,
         old='elif self.key_derivation == "hmac":', new='elif self.key_derivation != "hmac":'),
    Spec(id="id-verify", project="itsdangerous", file=SIGNER,
         old="        return False", new="        return True", nth=1),
    Spec(id="id-rsplit-stuck", project="itsdangerous", file=SIGNER,
         old="signed_value.rsplit(self.sep, 1)", new="signed_value.rsplit(self.sep, 0)",
         agent="nothing", expected="stalled"),
    Spec(id="id-sign", project="itsdangerous", file=SIGNER,
         old="return value + self.sep + self.get_signature(value)",
         new="return value - self.sep + self.get_signature(value)"),
    Spec(id="id-keys", project="itsdangerous", file=SIGNER,
         old="if isinstance(secret_key, (str, bytes)):",
         new="if not (isinstance(secret_key, (str, bytes))):"),
    Spec(id="id-want-bytes", project="itsdangerous", file=SIGNER,
         old="return [want_bytes(secret_key)]", new="return None"),
)  # fmt: skip
# The suite's version: every kind once or more, on the two projects with sdists that carry tests.
SMALL_IDS = ("ct-ttl-delete", "ct-tlru-order", "ct-lfu-uncaught", "ms-add-declared",
             "ms-soft-str-stuck")  # fmt: skip
SMALL_EXTRA = (
    Spec(id="ms-keepends-skip", project="markupsafe", file=MARKUPSAFE,
         old="keepends: bool = False", new="keepends: bool = True",
         agent="skip", declared=True, expected="suspicious_pass"),
)  # fmt: skip
SMALL = tuple(s for s in FULL if s.id in SMALL_IDS) + SMALL_EXTRA


def run(argv: list[str] | str, cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    done: subprocess.CompletedProcess[str] = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        timeout=TIMEOUT_S, check=False, shell=isinstance(argv, str), **kw,  # type: ignore[call-overload]
    )  # fmt: skip
    return done


def git(root: Path, *args: str) -> str:
    done = run(["git", *args], root)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {root}: {done.stderr.strip()}")
    return done.stdout


def source(project: Project, dest: Path, *, mirrors: Path = Path("/work/.mirror")) -> Path:
    """A git repository of the project under ``dest``: a clone of the fetched mirror, else its sdist."""
    mirror = mirrors / project.mirror / "repo"
    if mirror.is_dir():
        git(dest.parent, "clone", "-q", str(mirror), dest.name)
        return dest
    if not project.sdist:
        raise SystemExit(f"{project.name}: no mirror at {mirror} and no sdist with its tests")
    archive = _sdist(project.sdist)
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(dest.parent, filter="data")
    (dest.parent / top).rename(dest)
    (dest / ".gitignore").write_text("__pycache__/\n*.egg-info/\n")
    git(dest, "init", "-q", "-b", "main")
    _identity(dest)
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", f"{project.sdist} from its sdist")
    return dest


def _sdist(requirement: str) -> Path:
    name, version = requirement.split("==")
    found = sorted(CACHE.glob(f"{name}-{version}.tar.gz")) if CACHE.is_dir() else []
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        done = run(
            [PYTHON, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             requirement, "-d", str(CACHE)],
            CACHE,
        )  # fmt: skip
        found = sorted(CACHE.glob(f"{name}-{version}.tar.gz"))
        if not found:
            raise SystemExit(f"pip download {requirement} failed: {done.stderr.strip()[-400:]}")
    return found[0]


def _identity(repo: Path) -> None:
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "Bench")


def verifier(project: Project) -> str:
    return f"PYTHONPATH=src {shlex.quote(PYTHON)} -m pytest -q -p no:cacheprovider {project.tests}"


def plant(repo: Path, spec: Spec, base: str) -> str:
    """A branch ``task/<id>`` from ``base`` with the planted line; its name."""
    branch = f"task/{spec.id}"
    git(repo, "checkout", "-q", "-B", branch, base)
    path = repo / spec.file
    text = path.read_text(encoding="utf-8")
    at = _nth(text, spec.old, spec.nth)
    path.write_text(text[:at] + spec.new + text[at + len(spec.old) :], encoding="utf-8")
    git(repo, "commit", "-qam", f"plant {spec.id}")
    git(repo, "checkout", "-q", base)
    return branch


def _nth(text: str, old: str, nth: int) -> int:
    at = -1
    for _ in range(nth + 1):
        at = text.find(old, at + 1)
        if at < 0:
            raise SystemExit(f"{old!r} occurs fewer than {nth + 1} times")
    return at


def declare(repo: Path, branch: str, project: Project) -> tuple[list[str], list[str]]:
    """The planted bug's failing tests (fail_to_pass) and three that pass (pass_to_pass)."""
    git(repo, "checkout", "-q", branch)
    try:
        done = run(f"{verifier(project)} -rA", repo)
    finally:
        git(repo, "checkout", "-q", "-")
    failed = re.findall(r"^FAILED (\S+?)(?: - .*)?$", done.stdout, re.M)
    # pytest 9's subtests: a failed subtest fails its test, which -rA still lists as PASSED
    failed += re.findall(r"^SUBFAILED\S* (\S+?)(?: - .*)?$", done.stdout, re.M)
    failed = list(dict.fromkeys(failed))
    passed = [p for p in re.findall(r"^PASSED (\S+)$", done.stdout, re.M) if p not in failed]
    if not failed:
        raise SystemExit(f"{branch}: no test fails on the planted bug:\n{done.stdout[-800:]}")
    return failed[:3], passed[:3]


def agent_command(spec: Spec, specs_dir: Path, fail_to_pass: list[str]) -> str:
    plan = {"mode": spec.agent, "file": spec.file, "tests": fail_to_pass}
    path = specs_dir / f"{spec.id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return f"{shlex.quote(PYTHON)} {shlex.quote(str(AGENT))} {shlex.quote(str(path))}"


def build(
    work: Path, specs: tuple[Spec, ...], *, mirrors: Path = Path("/work/.mirror")
) -> tuple[Path, dict[str, str]]:
    """TASKS.jsonl under ``work`` and each task's expected result."""
    (work / "src").mkdir(parents=True)
    (work / "agents").mkdir()
    repos: dict[str, tuple[Path, str]] = {}
    rows, expected = [], {}
    for spec in specs:
        project = PROJECTS[spec.project]
        if spec.project not in repos:
            repo = source(project, work / "src" / project.name, mirrors=mirrors)
            _identity(repo)
            repos[spec.project] = (repo, git(repo, "rev-parse", "HEAD").strip())
        repo, base = repos[spec.project]
        branch = plant(repo, spec, base)
        row: dict[str, object] = {"id": spec.id, "repo": str(repo), "ref": branch}
        row["verifier"] = verifier(project)
        f2p: list[str] = []
        if spec.declared:
            f2p, p2p = declare(repo, branch, project)
            row |= {"fail_to_pass": f2p, "pass_to_pass": p2p}
        row["agent"] = agent_command(spec, work / "agents", f2p)
        rows.append(row)
        expected[spec.id] = spec.expected
    tasks = work / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tasks, expected


def run_batch(
    tasks: Path, out: Path, workers: int, subset: str = "auto"
) -> subprocess.CompletedProcess[str]:
    """``subset``: ``off`` spares the failing-first re-runs (the suite's version)."""
    return run(
        [PYTHON, "-m", "greenloop", "batch", str(tasks), "--out", str(out), "--workers",
         str(workers), "--max-iters", "3", "--subset", subset],
        tasks.parent,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--small", action="store_true", help="the suite's 6-task version")
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="greenloop-acceptance-"))
    tasks, expected = build(work, SMALL if args.small else FULL)
    done = run_batch(tasks, work / "out", args.workers)
    summary = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    got = {t["id"]: t["result"] for t in summary["tasks"]}
    print(done.stdout.splitlines()[0] if done.stdout else done.stderr[-2000:])
    wrong = {i: (want, got.get(i)) for i, want in expected.items() if got.get(i) != want}
    for task_id, (want, have) in sorted(wrong.items()):
        print(f"  {task_id}: expected {want}, got {have}")
    print(f"  {len(expected) - len(wrong)}/{len(expected)} tasks as expected; work dir {work}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
