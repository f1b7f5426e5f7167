"""``greenloop batch --format swe-bench FILE --repos DIR``: SWE-bench instances as batch tasks.

Each instance (``instance_id``, ``repo``, ``base_commit``, ``problem_statement``, ``test_patch``,
``FAIL_TO_PASS``, ``PASS_TO_PASS``; any other field, ``patch`` first, is never read) becomes a
start repository under ``DIR/swebench/<id>/``: the local mirror's ``base_commit`` with the test patch
committed on top, and nothing else to look at (one branch, no remote, no tag: the fix's commit is
named by no ref). That repository is the batch task's ``repo``; the statement is its ``task``; the
two lists are its declared acceptance; the verifier runs the test files the test patch touches.
A test patch that does not apply makes the instance ``invalid`` (with git's reason), not a crash.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenloop import git
from greenloop.batch import results, workspace
from greenloop.batch.run import BatchResult, run_batch
from greenloop.batch.tasks import ID_PATTERN, Task, parse_tasks, raise_problems
from greenloop.errors import FatalError

REQUIRED = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
BRANCH = "swebench"
START_DATE = "2000-01-01T00:00:00+00:00"  # the same instance, the same start commit
TEST_FILE = re.compile(r"(^|/)test_[^/]*\.py$|_test\.py$|(^|/)tests?/[^/]*\.py$")
DIFF_PATH = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One SWE-bench instance: what the import reads of it."""

    instance_id: str
    repo: str
    """``owner/name`` on GitHub; its mirror is looked up under ``--repos DIR``."""
    base_commit: str
    problem_statement: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    line: int

    @property
    def test_files(self) -> tuple[str, ...]:
        """The Python test files the test patch touches (what the verifier runs)."""
        paths = {b for a, b in DIFF_PATH.findall(self.test_patch)}
        return tuple(sorted(p for p in paths if TEST_FILE.search(p) and not _helper(p)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """The instances as batch tasks, and those whose start could not be made (invalid)."""

    tasks: tuple[Task, ...]
    invalid: tuple[tuple[Instance, str], ...]


def load_instances(path: Path) -> tuple[Instance, ...]:
    """Read a JSONL file (or a JSON array) of instances; FatalError lists every problem (exit 2)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}") from exc
    found: list[Instance] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, data in _records(text, path.name, problems):
        where = f"{path.name}:{number}"
        item, faults = _instance(data, number)
        problems += [f"{where}: {f}" for f in faults]
        if item is None:
            continue
        if item.instance_id in seen:
            problems.append(
                f"{where}: instance_id {item.instance_id!r} already used on line "
                f"{seen[item.instance_id]}"
            )
            continue
        seen[item.instance_id] = number
        found.append(item)
    if not found and not problems:
        problems.append(f"{path.name}: no instances")
    raise_problems(problems)
    return tuple(found)


def _records(text: str, name: str, problems: list[str]) -> list[tuple[int, Any]]:
    if text.lstrip().startswith("["):  # a JSON array, as some exports write the data set
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{name}: not valid JSON ({exc.msg} at line {exc.lineno})")
            return []
        return list(enumerate(items, start=1))
    records: list[tuple[int, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            records.append((number, json.loads(raw)))
        except json.JSONDecodeError as exc:
            problems.append(f"{name}:{number}: not valid JSON ({exc.msg} at column {exc.colno})")
    return records


def _instance(data: Any, number: int) -> tuple[Instance | None, list[str]]:
    if not isinstance(data, dict):
        return None, ["expected a JSON object (one SWE-bench instance)"]
    problems = [f"{key!r} is required" for key in REQUIRED if key not in data]
    for key in ("repo", "base_commit", "problem_statement", "test_patch"):
        if key in data and not (isinstance(data[key], str) and data[key].strip()):
            problems.append(f"{key!r}: expected a non-empty string, got {data[key]!r}")
    if "instance_id" in data and not (
        isinstance(data["instance_id"], str) and ID_PATTERN.fullmatch(data["instance_id"])
    ):
        problems.append(
            f"'instance_id': expected letters, digits, '.', '_' or '-', got {data['instance_id']!r}"
        )
    repo = data.get("repo")
    if isinstance(repo, str) and repo.strip() and not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        problems.append(f"'repo': expected owner/name, got {repo!r}")
    lists = {key: _test_list(data.get(key), key, problems) for key in REQUIRED[5:]}
    if problems:
        return None, problems
    return Instance(
        instance_id=data["instance_id"],
        repo=data["repo"],
        base_commit=data["base_commit"].strip(),
        problem_statement=data["problem_statement"],
        test_patch=data["test_patch"],
        fail_to_pass=lists["FAIL_TO_PASS"],
        pass_to_pass=lists["PASS_TO_PASS"],
        line=number,
    ), []


def _test_list(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    """A list of test ids, or (as the published data set has it) a JSON string of one."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            problems.append(f"{key!r}: expected a list of test ids or a JSON string of one")
            return ()
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    problems.append(f"{key!r}: expected a list of test ids, got {value!r}"[:200])
    return ()


def find_mirror(repos: Path, repo: str) -> Path | None:
    """``DIR/owner__name``, ``DIR/owner/name`` or ``DIR/name``, each bare (``.git``) or not."""
    owner, name = repo.split("/", 1)
    for stem in (f"{owner}__{name}", f"{owner}/{name}", name):
        for candidate in (repos / stem, repos / f"{stem}.git"):
            if candidate.is_dir() and _git_dir(candidate) is not None:
                return candidate
    return None


def _git_dir(path: Path) -> Path | None:
    done = git.git(path, "rev-parse", "--absolute-git-dir", check=False)
    if done.exit_code != 0:
        return None
    found = Path(done.stdout.strip())
    own = found == path.resolve() or found == (path / ".git").resolve()
    return found if own else None  # not a folder inside some other repository


def check_mirrors(instances: Sequence[Instance], repos: Path, name: str) -> list[str]:
    """One line per instance whose mirror is missing or lacks its base commit (nothing starts)."""
    problems: list[str] = []
    mirrors: dict[str, Path | None] = {}
    for item in instances:
        where = f"{name}:{item.line}: instance {item.instance_id!r}"
        if item.repo not in mirrors:
            mirrors[item.repo] = find_mirror(repos, item.repo)
        mirror = mirrors[item.repo]
        if mirror is None:
            owner, repo = item.repo.split("/", 1)
            problems.append(
                f"{where}: no mirror of {item.repo} in {repos} (looked for {owner}__{repo}, "
                f"{item.repo} and {repo}, each also with .git)"
            )
        elif git.rev_parse(mirror, item.base_commit) is None:
            problems.append(
                f"{where}: base_commit {item.base_commit[:12]} not in {mirror} (fetch it there)"
            )
    return problems


def prepare(
    instances: Sequence[Instance], repos: Path, out: Path, *, name: str = "instances.jsonl"
) -> Prepared:
    """Each instance's start repository under ``out/swebench/`` and its task (or why it is invalid)."""
    raise_problems(check_mirrors(instances, repos, name))
    root = out / "swebench"
    lines: list[str] = []
    invalid: list[tuple[Instance, str]] = []
    for item in instances:
        mirror = find_mirror(repos, item.repo)
        assert mirror is not None  # check_mirrors said so
        why = build_start(item, mirror, root / item.instance_id, out / "aside" / "swebench")
        if why:
            invalid.append((item, why))
        else:
            lines.append(json.dumps(task_line(item)))
    tasks_file = root / "tasks.jsonl"
    tasks_file.parent.mkdir(parents=True, exist_ok=True)
    tasks_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tasks = (
        parse_tasks(tasks_file.read_text(), base=root, name="swebench/tasks.jsonl") if lines else ()
    )
    return Prepared(tasks=tuple(tasks), invalid=tuple(invalid))


def task_line(item: Instance) -> dict[str, Any]:
    """The batch task of an instance whose start repository is ready."""
    line: dict[str, Any] = {"id": item.instance_id, "repo": item.instance_id}
    line["task"] = item.problem_statement.strip()
    if item.test_files:
        line["verifier"] = "python -m pytest " + " ".join(map(shlex.quote, item.test_files))
    if item.fail_to_pass:
        line["fail_to_pass"] = list(item.fail_to_pass)
    if item.pass_to_pass:
        line["pass_to_pass"] = list(item.pass_to_pass)
    return line


def build_start(item: Instance, mirror: Path, dest: Path, aside: Path) -> str:
    """Make ``dest`` (empty string) or say why the instance cannot start (its test patch)."""
    staging = dest.with_name(dest.name + ".new")
    if staging.exists():
        shutil.rmtree(staging)  # our own half-built copy, from a killed run
    why = _build(item, mirror, staging)
    if why:
        shutil.rmtree(staging)
        return why
    if dest.exists() and git.rev_parse(dest, "HEAD") == git.rev_parse(staging, "HEAD"):
        shutil.rmtree(staging)  # the same start as last time (a resumed batch): keep that one
        return ""
    workspace.set_aside(dest, aside)  # another start under the same id: the old one kept aside
    staging.rename(dest)
    return ""


def _build(item: Instance, mirror: Path, dest: Path) -> str:
    objects = _git_dir(mirror)
    assert objects is not None
    dest.mkdir(parents=True)
    git.git(dest, "init", "-q", "-b", BRANCH)
    info = git.git_dir(dest) / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(f"{objects / 'objects'}\n", encoding="utf-8")
    if (objects / "shallow").is_file():  # a shallow mirror: its boundary is this one's too
        (git.git_dir(dest) / "shallow").write_bytes((objects / "shallow").read_bytes())
    git.git(dest, "reset", "-q", "--hard", item.base_commit)
    with tempfile.TemporaryDirectory() as tmp:
        patch = Path(tmp) / "test.patch"
        patch.write_text(item.test_patch, encoding="utf-8")
        done = git.git(dest, "apply", "--index", str(patch), check=False)
    if done.exit_code != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        reason = next((ln for ln in detail if ln.startswith("error:")), detail[0] if detail else "")
        return f"test_patch does not apply at base_commit {item.base_commit[:12]}: {reason}"
    env = {
        "GIT_AUTHOR_NAME": "greenloop swe-bench",
        "GIT_AUTHOR_EMAIL": "swe-bench@greenloop.invalid",
        "GIT_COMMITTER_NAME": "greenloop swe-bench",
        "GIT_COMMITTER_EMAIL": "swe-bench@greenloop.invalid",
        "GIT_AUTHOR_DATE": START_DATE,
        "GIT_COMMITTER_DATE": START_DATE,
    }
    message = f"SWE-bench {item.instance_id}: the instance's test patch"
    git.git(
        dest, "commit", "-q", "--no-verify", "--allow-empty", "-m", message,
        git_env=env,
    )  # fmt: skip
    return ""


def run_swebench(
    instances: Path | str,
    *,
    repos: Path | str,
    out: Path | str,
    **batch: Any,
) -> BatchResult:
    """Import the instances, run the valid ones as a batch; invalid ones count in the summary."""
    path = Path(instances)
    items = load_instances(path)
    out = Path(out).resolve()
    prepared = prepare(items, Path(repos).resolve(), out, name=path.name)  # checks, then writes
    invalid_tasks = _record_invalid(out, prepared.invalid)
    if prepared.tasks:
        result = run_batch(prepared.tasks, out=out, **batch)
    else:
        result = BatchResult(
            out=out, total=0, ran=(), skipped=(), changed=(), summary={}, interrupted=False
        )
    everything = (*prepared.tasks, *invalid_tasks)
    summary = results.summarize(everything, results.read_rows(out))
    results.write_summary(out, summary)
    return BatchResult(
        out=out,
        total=len(everything),
        ran=result.ran,
        skipped=result.skipped,
        changed=result.changed,
        summary=summary,
        interrupted=result.interrupted,
    )


def _record_invalid(out: Path, invalid: Sequence[tuple[Instance, str]]) -> tuple[Task, ...]:
    """One ``invalid`` row per instance that cannot start (not again when it says the same)."""
    latest: Mapping[str, Mapping[str, Any]] = results.latest_by_id(results.read_rows(out))
    tasks: list[Task] = []
    for item, why in invalid:
        task = Task(id=item.instance_id, repo=item.repo, line=item.line)
        tasks.append(task)
        row = latest.get(item.instance_id)
        if row is not None and row.get("result") == results.INVALID and row.get("reason") == why:
            continue
        results.append_row(
            out,
            {
                "id": item.instance_id,
                "result": results.INVALID,
                "reason": why,
                "iterations": 0,
                "line": item.line,
            },
        )
    return tuple(tasks)


def _helper(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name in ("__init__.py", "conftest.py")
