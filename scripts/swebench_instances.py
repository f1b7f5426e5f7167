"""Build SWE-bench instances from real bug-fix commits of a public Python project.

    python scripts/swebench_instances.py --mirror /work/.mirror/more-itertools+more-itertools/repo \
        --repo more-itertools/more-itertools --out tests/resources/swebench/more-itertools.jsonl \
        --pack tests/resources/swebench/more-itertools.git.tar.gz COMMIT ...

For each fix commit, as SWE-bench builds its instances from a pull request:
- ``base_commit``: the fix's parent;
- ``test_patch``: the fix's changes to test files; ``patch``: its other (source) changes;
- ``FAIL_TO_PASS``: the tests of the touched test files that fail (or do not exist) at the base with
  the test patch applied, and pass with the source patch too (both runs: ``pytest -rA`` on the
  touched test files, parsed from its short summary, as SWE-bench's harness logs are);
- ``PASS_TO_PASS``: the tests passing in both runs, restricted to the test classes (or modules, for
  module-level tests) that hold a FAIL_TO_PASS test: a subset of what SWE-bench lists (it keeps every
  passing test of the touched files);
- ``problem_statement``: the commit message (SWE-bench has the linked issue's text);
- the two lists JSON-encoded in strings, as in the published dataset.

``--pack`` writes the mirror a test clones from: a shallow bare repository holding exactly the base
commits (depth 1, under their real ids), tarred and gzipped.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")
SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED) (\S+::\S+)")
PYTEST_TIMEOUT_S = 600


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.stdout


def diff(mirror: Path, base: str, fix: str, paths: list[str]) -> str:
    if not paths:
        return ""
    return git(mirror, "diff", "--no-color", "--no-ext-diff", base, fix, "--", *paths)


def run_tests(tree: Path, python: str, files: list[str]) -> dict[str, str]:
    """Node id -> PASSED / FAILED / ERROR … from ``pytest -rA``'s short summary."""
    done = subprocess.run(
        [python, "-m", "pytest", "-rA", "-q", "-p", "no:cacheprovider", *files],
        cwd=tree, capture_output=True, text=True, timeout=PYTEST_TIMEOUT_S, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    status: dict[str, str] = {}
    for line in done.stdout.splitlines():
        found = SUMMARY_LINE.match(line)
        if found:
            status[found.group(2)] = found.group(1)
    if not status:
        raise SystemExit(
            f"pytest ran no test in {tree}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return status


def apply(tree: Path, patch: str) -> None:
    subprocess.run(
        ["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True,
        capture_output=True,
    )  # fmt: skip


def group_of(node_id: str) -> str:
    """``tests/test_more.py::SlicedTests::test_x`` -> ``tests/test_more.py::SlicedTests``."""
    return node_id.rsplit("::", 1)[0]


def version_at(mirror: Path, commit: str) -> str:
    for path in git(mirror, "ls-tree", "-r", "--name-only", commit).splitlines():
        if path.endswith("__init__.py") and path.count("/") == 1:
            found = re.search(
                r"__version__ = ['\"]([^'\"]+)", git(mirror, "show", f"{commit}:{path}")
            )
            if found:
                return ".".join(found.group(1).split(".")[:2])
    return ""


def instance(mirror: Path, repo: str, fix: str, python: str) -> dict[str, object]:
    fix = git(mirror, "rev-parse", f"{fix}^{{commit}}").strip()
    base = git(mirror, "rev-parse", f"{fix}^").strip()
    changed = git(mirror, "diff", "--name-only", base, fix).split()
    tests = [p for p in changed if TEST_PATH.search(p)]
    sources = [p for p in changed if p not in tests]
    test_patch, patch = diff(mirror, base, fix, tests), diff(mirror, base, fix, sources)
    if not test_patch or not patch:
        raise SystemExit(f"{fix[:12]} does not change both tests and source: {changed}")
    test_files = [p for p in tests if p.endswith(".py") and Path(p).name.startswith("test")]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        git(Path(tmp), "clone", "-q", "--shared", "--no-checkout", str(mirror), str(tree))
        git(tree, "checkout", "-q", "--detach", base)  # the mirror itself is only read
        apply(tree, test_patch)
        before = run_tests(tree, python, test_files)
        apply(tree, patch)
        after = run_tests(tree, python, test_files)
    fail_to_pass = sorted(
        t for t, s in after.items() if s == "PASSED" and before.get(t) != "PASSED"
    )
    if not fail_to_pass:
        raise SystemExit(f"{fix[:12]}: no test fails before the fix and passes after it")
    groups = {group_of(t) for t in fail_to_pass}
    pass_to_pass = sorted(
        t for t, s in after.items()
        if s == "PASSED" and before.get(t) == "PASSED" and group_of(t) in groups
    )  # fmt: skip
    owner, name = repo.split("/")
    subject = git(mirror, "log", "-1", "--format=%s", fix).strip()
    number = re.search(r"#(\d+)", subject)
    return {
        "repo": repo,
        "instance_id": f"{owner}__{name}-{number.group(1) if number else fix[:7]}",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": git(mirror, "log", "-1", "--format=%B", fix).strip() + "\n",
        "hints_text": "",
        "created_at": git(mirror, "log", "-1", "--format=%aI", fix).strip(),
        "version": version_at(mirror, base),
        "FAIL_TO_PASS": json.dumps(fail_to_pass),
        "PASS_TO_PASS": json.dumps(pass_to_pass),
        "environment_setup_commit": base,
    }


def pack(mirror: Path, bases: list[str], dest: Path, name: str) -> None:
    """A shallow bare repository of exactly ``bases`` (depth 1), as ``name/`` in a .tar.gz."""
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / name
        git(Path(tmp), "init", "-q", "--bare", str(bare))
        refs = [f"{sha}:refs/heads/base-{n}" for n, sha in enumerate(bases)]
        git(bare, "fetch", "-q", "--no-tags", "--depth", "1", f"file://{mirror.resolve()}", *refs)
        git(bare, "symbolic-ref", "HEAD", "refs/heads/base-0")
        git(bare, "gc", "-q", "--aggressive", "--prune=now")
        for extra in ("hooks", "logs", "description", "info", "branches", "FETCH_HEAD"):
            path = bare / extra
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        with tarfile.open(dest, "w:gz") as tar:
            tar.add(bare, arcname=name)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--mirror", type=Path, required=True, help="a clone of the project (bare or not)"
    )
    p.add_argument("--repo", required=True, help="owner/name on GitHub")
    p.add_argument("--out", type=Path, required=True, help="the instances, one JSON line each")
    p.add_argument("--pack", type=Path, help="also write the shallow mirror of the base commits")
    p.add_argument("--python", default=sys.executable, help="an interpreter with pytest")
    p.add_argument("commits", nargs="+", help="the fix commits")
    args = p.parse_args(argv)
    rows = [instance(args.mirror, args.repo, c, args.python) for c in args.commits]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for row in rows:
        f2p, p2p = json.loads(str(row["FAIL_TO_PASS"])), json.loads(str(row["PASS_TO_PASS"]))
        print(f"{row['instance_id']}: base {str(row['base_commit'])[:12]}, "
              f"{len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS")  # fmt: skip
    if args.pack:
        name = args.repo.replace("/", "__") + ".git"
        pack(args.mirror, [str(r["base_commit"]) for r in rows], args.pack, name)
        print(f"{args.pack}: {args.pack.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
