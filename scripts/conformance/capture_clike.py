"""Capture the JS/TS, Go and Rust part of the real-project conformance corpus.

For each manifest ``tests/resources/real/projects/<project>.toml`` whose ``lang`` is
js, go or rust: clone the pinned commit to ``/tmp/glreal/<project>``, install it the
way its maintainers do, then per runner record an unmodified baseline and seeded
one-line mutants, each committed before it runs (so no diff points at the site).
Every case is run twice: once as a user runs it (the captured output) and once
with the runner's structured reporter (the ground truth). Outputs and facts only are
written under ``tests/resources/real/<runner>/<project>-<n>/``.

    python3 scripts/conformance/capture_clike.py               # every js/go/rust project
    python3 scripts/conformance/capture_clike.py --only kleur  # one project
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import clike
import native
import node
from truth import Truth, strip_ansi

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL = REPO_ROOT / "tests" / "resources" / "real"
WORK = Path(os.environ.get("GLREAL_ROOT", "/tmp/glreal"))
MIRROR = Path(os.environ.get("GLREAL_MIRROR", "/work/.mirror"))
ENV = {
    "NO_COLOR": "1",
    "FORCE_COLOR": "0",
    "CARGO_TERM_COLOR": "never",
    "PAGER": "cat",
    "LANG": "C.UTF-8",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "-mod=mod",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
}
DROP = ("CI", "COLUMNS", "RUST_BACKTRACE", "LC_ALL", "PYTEST_ADDOPTS", "NODE_OPTIONS")
TIMEOUT_S = 600
COMPILE_KINDS = ("syntax_error", "undefined_name")

Reader = Callable[..., Truth]
READERS: dict[str, Reader] = {
    "jest": node.read_jest,
    "vitest": lambda report, root: node.read_jest(report, joiner=" > ", root=root),
    "mocha": node.read_mocha,
    "node-junit": node.read_node_junit,
    "ava-tap": lambda report, root: node.read_tap(report, root=root, source="ava --tap"),
    "tap-tap": lambda report, root: node.read_tap(report, root=root, source="tap -R tap"),
    "uvu": node.read_uvu,
    "tsc": node.read_tsc,
    "eslint": node.read_eslint,
    "go-json": native.read_go_test,
    "go-diag": native.read_go_diagnostics,
    "cargo-json": native.read_cargo_json,
    "libtest": native.read_libtest,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool


def run(
    argv: list[str], cwd: Path, *, timeout: int = TIMEOUT_S, unset: tuple[str, ...] = ()
) -> Run:
    env = {k: v for k, v in (os.environ | ENV).items() if k not in DROP + unset}
    env["PATH"] = f"{cwd / 'node_modules' / '.bin'}:{env['PATH']}"
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, timeout=timeout,
            stdin=subprocess.DEVNULL, start_new_session=True, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as expired:
        return Run(argv=argv, exit_code=-9, stdout=_text(expired.stdout),
                   stderr=_text(expired.stderr), timed_out=True)  # fmt: skip
    return Run(argv=argv, exit_code=done.returncode, stdout=_text(done.stdout),
               stderr=_text(done.stderr), timed_out=False)  # fmt: skip


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data or ""


def git(root: Path, *args: str) -> str:
    ident = ["-c", "user.name=conformance", "-c", "user.email=conformance@localhost"]
    return subprocess.run(
        ["git", *ident, *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def prepare(manifest: dict[str, object]) -> Path:
    """Clone the pinned commit into the fixed work path and install it."""
    root = WORK / str(manifest["project"])
    owner_name = str(manifest["repo"]).replace("/", "+")
    if not root.exists():
        mirror = MIRROR / owner_name / "repo"
        source = str(mirror) if mirror.exists() else f"https://github.com/{manifest['repo']}"
        subprocess.run(["git", "clone", "-q", source, str(root)], check=True)
    git(root, "checkout", "-q", "--detach", str(manifest["commit"]))
    git(root, "reset", "-q", "--hard", str(manifest["commit"]))
    for command in manifest.get("install", []):  # type: ignore[attr-defined]
        done = run(["sh", "-c", command], root, timeout=1200)
        if done.exit_code != 0:
            sys.exit(f"{manifest['project']}: install failed: {command}\n{done.stderr[-2000:]}")
    return root


def capture_project(manifest: dict[str, object], *, only_runner: str | None) -> None:
    root = prepare(manifest)
    for runner in manifest["runner"]:  # type: ignore[attr-defined]
        if only_runner and runner["name"] != only_runner:
            continue
        capture_runner(manifest, runner, root)


def capture_runner(manifest: dict[str, object], runner: dict[str, object], root: Path) -> None:
    base = str(manifest["commit"])
    version = _version(runner, root)
    git(root, "reset", "-q", "--hard", base)
    if write_case(manifest, runner, root, 0, None, version) != "green":
        print(f"  {manifest['project']}/{runner['name']}: the baseline is not green, no mutants")
        return
    n = 1
    for kind in runner["kinds"]:  # type: ignore[attr-defined]
        mutation = find_mutant(manifest, runner, root, str(kind))
        if mutation is not None:
            write_case(manifest, runner, root, n, mutation, version)
            n += 1
        git(root, "reset", "-q", "--hard", base)


def find_mutant(
    manifest: dict[str, object], runner: dict[str, object], root: Path, kind: str
) -> clike.Mutation | None:
    """The first seeded mutation of ``kind`` that the runner sees (exit code not 0)."""
    files = [str(f) for f in runner.get("sources", manifest["sources"])]  # type: ignore[attr-defined]
    seed = int(runner.get("seed", manifest.get("seed", 1)))  # type: ignore[arg-type]
    tries = int(runner.get("tries", 6))  # type: ignore[arg-type]
    for mutation in clike.mutate(root, files, lang=str(manifest["lang"]), kind=kind, seed=seed)[
        :tries
    ]:
        clike.apply(root, mutation)
        git(root, "commit", "-q", "-am", "wip")  # a neutral message: nothing names the site
        if run(_argv(runner["argv"]), root, unset=_unset(runner)).exit_code != 0:
            return mutation
        git(root, "reset", "-q", "--hard", str(manifest["commit"]))
    print(f"  {manifest['project']}/{runner['name']}: no red {kind} mutant in {tries} tries")
    return None


def _argv(value: object) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]  # type: ignore[attr-defined]


def _unset(runner: dict[str, object]) -> tuple[str, ...]:
    """Variables a project's tests need absent (kleur's tests expect colour by default)."""
    return tuple(str(v) for v in runner.get("env_unset", ()))  # type: ignore[attr-defined]


def _version(runner: dict[str, object], root: Path) -> str:
    done = run(_argv(runner["version"]), root)
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[0] if done.stdout or done.stderr else ""


def ground_truth(runner: dict[str, object], root: Path) -> tuple[Truth, Run]:
    """The second run, with the runner's structured reporter, read by its reader."""
    report_path = root.parent / f".{root.name}-report"
    report_path.unlink(missing_ok=True)
    argv = [a.replace("{report}", str(report_path)) for a in _argv(runner["truth_argv"])]
    second = run(argv, root, unset=_unset(runner))
    if report_path.exists():
        report = report_path.read_text(encoding="utf-8", errors="replace")
    else:
        report = second.stdout + ("\n" + second.stderr if runner.get("truth_stderr") else "")
    return READERS[str(runner["truth"])](report, root=root), second


def write_case(
    manifest: dict[str, object],
    runner: dict[str, object],
    root: Path,
    n: int,
    mutation: clike.Mutation | None,
    version: str,
) -> str:
    first = run(_argv(runner["argv"]), root, unset=_unset(runner))
    truth, second = ground_truth(runner, root)
    raw = strip_ansi(first.stdout + "\n" + first.stderr)
    facts = {
        "verdict": verdict(first, truth),
        "failing_ids": list(truth.ids),
        "error_type": truth.error_type,
        "message": truth.message,
        "frame": _frame(mutation, raw, root),
        "counts": truth.counts(),
    }
    if first.exit_code != 0 and not facts["failing_ids"] and truth.message is None:
        facts["message"] = _first_error_line(raw)
    unverified = [k for k in ("error_type", "message") if facts[k] and str(facts[k]) not in raw]
    unverified += [f"failing_ids[{i}]" for i, x in enumerate(facts["failing_ids"]) if x not in raw]
    case = {
        "tool": runner["name"],
        "case": f"{manifest['project']}-{n}",
        "project": manifest["project"],
        "repo": manifest["repo"],
        "commit": manifest["commit"],
        "argv": first.argv,
        "cwd_placeholder": str(root),
        "exit_code": first.exit_code,
        "stdout": first.stdout,
        "stderr": first.stderr,
        "tool_version": version,
        "captured_at": datetime.date.today().isoformat(),
        "env": {k: v for k, v in ENV.items() if k not in _unset(runner)},
        "timed_out": first.timed_out,
        "mutation": _mutation_json(mutation),
        "facts": facts,
        "facts_unverified": unverified,
        "ground_truth": {
            "source": truth.source,
            "argv": second.argv,
            "exit_code": second.exit_code,
            "same_exit_code": second.exit_code == first.exit_code,
        },
    }
    out = REAL / str(runner["name"]) / str(case["case"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "case.json").write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    (out / "case.txt").write_text(first.stdout + first.stderr)
    print(f"  {runner['name']}/{case['case']}: exit {first.exit_code} {facts['verdict']}"
          f" ids={facts['failing_ids'][:2]} counts={facts['counts']}")  # fmt: skip
    return str(facts["verdict"])


def verdict(first: Run, truth: Truth) -> str:
    """The verdict class from the exit code and the report, never from greenloop.

    The baseline is green in this environment and a mutant differs from it by one
    line of project code, so a non-zero exit of a mutant is a code failure.
    """
    if first.timed_out:
        return "timeout"
    if first.exit_code < 0:
        return "killed"
    if first.exit_code == 0:
        return "untrusted" if truth.failed else "green"
    return "failed"


def _frame(mutation: clike.Mutation | None, raw: str, root: Path) -> str | None:
    if mutation is None:
        return None
    site = f"{mutation.file}:{mutation.line}"
    return site if (site + ":" in raw or site + "\n" in raw or f"{mutation.file}({mutation.line}," in raw) else None


def _first_error_line(raw: str) -> str | None:
    for line in raw.splitlines():
        if "Error" in line or "error" in line:
            return line.strip()
    return None


def _mutation_json(mutation: clike.Mutation | None) -> dict[str, object] | None:
    if mutation is None:
        return None
    return {"file": mutation.file, "line": mutation.line, "kind": mutation.kind,
            "before": mutation.before, "after": mutation.after}  # fmt: skip


def manifests(only: list[str]) -> list[dict[str, object]]:
    found = []
    for path in sorted((REAL / "projects").glob("*.toml")):
        data = tomllib.loads(path.read_text())
        if data.get("lang") in ("js", "go", "rust") and (not only or data["project"] in only):
            found.append(data)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="project name")
    parser.add_argument("--runner", help="one runner of the project(s)")
    args = parser.parse_args()
    for manifest in manifests(args.only):
        print(f"{manifest['project']} @ {str(manifest['commit'])[:12]}")
        capture_project(manifest, only_runner=args.runner)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
