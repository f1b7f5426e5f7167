"""Capture the agent-invocation matrix (issue 36, item 7): real projects, run as agents type it.

For each project of the conformance corpus whose checkout and install are on this machine
(``/tmp/glreal/<project>``, ``/tmp/glreal-venv/<project>``: ``capture.py`` puts them there), on
the clean tree (green) and with one of its seeded bugs applied (red), every command line below
is run once, as an agent's shell tool runs it (``sh -c``, the output captured as the host hands
it over), and so is the project's own full command (``full``: what ``greenloop check`` judges the
tree by). Each run is stored in the corpus' case.json shape, the checkout's path replaced by
``cwd_placeholder``, under ``tests/resources/invocations/<project>/``. Nothing of the projects'
code is kept. ``tests/test_invocation_matrix.py`` feeds each run through ``hook post-tool`` in
every host's payload shape.

    python3 scripts/conformance/invocations.py [--project NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "resources" / "real"
OUT = ROOT / "tests" / "resources" / "invocations"
CHECKOUTS = Path(os.environ.get("GLREAL_ROOT", "/tmp/glreal"))
VENVS = Path(os.environ.get("GLREAL_VENV", "/tmp/glreal-venv"))
TIMEOUT_S = 600
ENV = {
    "NO_COLOR": "1",
    "CARGO_TERM_COLOR": "never",
    "PAGER": "cat",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "",
    "npm_config_update_notifier": "false",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
}

PYTEST = [
    "pytest", "pytest -q", "pytest -x", "pytest -x -q", "pytest --tb=short -q",
    "pytest --tb=line -q", "pytest --tb=no -q", "pytest -q -rN", "pytest -v",
    "pytest -q 2>&1 | tail -n 50", "pytest 2>&1 | head -n 100", "python -m pytest -q",
    "pytest -q {file}", "pytest -q {dir}", "pytest -q -k {k}",
]  # fmt: skip
GO = [
    "go test ./...", "go test -v ./...", "go test -count=1 ./...",
    "go test ./... 2>&1 | tail -n 50", "go test -run {k} ./...", "go test {dir}",
]  # fmt: skip
MOCHA = [
    "npm test", "npx mocha", "npx mocha --reporter=dot", "npx mocha --reporter spec 2>&1 | tail -n 50",
    "npx mocha --grep {k}", "npx mocha {file}",
]  # fmt: skip
NODE_TEST = [
    "node test.js", "node --test", "node --test --test-reporter=dot",
    "node --test 2>&1 | tail -n 50", "node --test --test-name-pattern={k}",
    "node --conditions development test.js",
]  # fmt: skip
TAPE = ["node test.js", "node test.js 2>&1 | tail -n 50", "npx tape test.js", "npm test"]
VITEST = [
    "npx vitest run", "npx vitest run --reporter=dot", "npx vitest run -t {k}",
    "npx vitest run 2>&1 | tail -n 50", "npx vitest run {file}",
]  # fmt: skip
CARGO = ["cargo test", "cargo test -q", "cargo test {k}", "cargo test 2>&1 | tail -n 50", "cargo test --lib"]

PROJECTS: dict[str, dict[str, object]] = {
    "flask": {"tool": "pytest", "lines": PYTEST, "file": "tests/test_views.py", "dir": "tests", "k": "test_init_once"},
    "oauthlib": {"tool": "pytest", "lines": PYTEST, "file": "tests/oauth2/rfc6749/endpoints/test_client_authentication.py", "dir": "tests/oauth2", "k": "test_basicauth_web"},
    "chi": {"tool": "go-test", "lines": GO, "dir": "./middleware", "k": "TestStripSlashes"},
    "golang-lru": {"tool": "go-test", "lines": GO, "dir": "./simplelru", "k": "TestLRU"},
    "mapstructure": {"tool": "go-test", "lines": GO, "dir": ".", "k": "TestMapOmitEmpty"},
    "http-errors": {"tool": "mocha", "lines": MOCHA, "file": "test/test.js", "k": "'Extending Existing Errors'"},
    "n-gram": {"tool": "node-test", "lines": NODE_TEST, "k": "unigram"},
    "comma-separated-tokens": {"tool": "node-test", "lines": NODE_TEST, "k": "stringify"},
    "n-gram-tape": {"tool": "tape", "lines": TAPE, "case": "n-gram-tape-1"},
    "levenshtein-edit-distance": {"tool": "tape", "lines": TAPE, "case": "levenshtein-edit-distance-1"},
    "destr": {"tool": "vitest", "lines": VITEST, "file": "test/index.test.ts", "k": "'parses'"},
    "shell-words": {"tool": "cargo-test", "lines": CARGO, "k": "join"},
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--project", action="append", choices=sorted(PROJECTS))
    args = parser.parse_args()
    for name in args.project or sorted(PROJECTS):
        capture(name)


def capture(name: str) -> None:
    spec = PROJECTS[name]
    case = _case(name, str(spec["tool"]))
    checkout = CHECKOUTS / name
    if not checkout.is_dir():
        print(f"{name}: no checkout at {checkout}: run capture.py --project {name} first")
        return
    rows = []
    for tree in ("green", "red"):
        _reset(checkout)
        if tree == "red":
            _apply(checkout, case["mutation"])
        full = _argv_line(case["argv"])
        lines = [full, *(str(x) for x in spec["lines"] if x != full)]  # type: ignore[attr-defined]
        for line in lines:
            command = line.format(**{k: v for k, v in spec.items() if isinstance(v, str)})
            row = _run(name, checkout, command, case)
            mutation = case["mutation"] if tree == "red" else None
            row.update(tree=tree, full=line == full, line=line, mutation=mutation)
            rows.append(row)
            print(f"{name} {tree} exit {row['exit_code']:>3} {command}", flush=True)
    _reset(checkout)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def _case(name: str, tool: str) -> dict[str, object]:
    """The project's first corpus case where a seeded bug makes the suite fail."""
    for path in sorted(REAL.glob(f"{tool}*/{name}-*/case.json")):
        data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
        facts = data["facts"]
        if data.get("mutation") and isinstance(facts, dict) and facts["verdict"] == "failed":
            return data
    raise SystemExit(f"{name}: no {tool} case with a failing seeded bug in {REAL}")


def _argv_line(argv: object) -> str:
    import shlex

    return argv if isinstance(argv, str) else shlex.join(str(a) for a in argv)  # type: ignore[arg-type]


def _reset(checkout: Path) -> None:
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=checkout, check=True)


def _apply(checkout: Path, mutation: object) -> None:
    assert isinstance(mutation, dict)
    path = checkout / str(mutation["file"])
    lines = path.read_text(encoding="utf-8").split("\n")
    index = int(mutation["line"]) - 1
    assert lines[index] == mutation["before"], (lines[index], mutation["before"])
    lines[index] = str(mutation["after"])
    path.write_text("\n".join(lines), encoding="utf-8")


def _run(name: str, checkout: Path, command: str, case: dict[str, object]) -> dict[str, object]:
    env = {**os.environ, **ENV}
    venv = VENVS / name / "bin"
    if venv.is_dir():
        env["PATH"] = f"{venv}{os.pathsep}{env['PATH']}"
        env["VIRTUAL_ENV"] = str(venv.parent)
    try:
        done = subprocess.run(
            ["sh", "-c", command], cwd=checkout, env=env, capture_output=True, text=True,
            timeout=TIMEOUT_S, start_new_session=True, check=False,
        )  # fmt: skip
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code = str(exc.stdout or ""), str(exc.stderr or ""), -9
    place = str(case["cwd_placeholder"])
    return {
        "tool": case["tool"],
        "case": f"{name}-invocation",
        "project": name,
        "argv": command,
        "cwd_placeholder": place,
        "exit_code": code,
        "stdout": stdout.replace(str(checkout), place),
        "stderr": stderr.replace(str(checkout), place),
        "repo_modules": case.get("repo_modules", []),
        "repo_files": case.get("repo_files", {}),
    }


if __name__ == "__main__":
    sys.exit(main())
