"""The project's CI -> the verification commands it runs on a pull request (issue 38).

GitHub Actions (``.github/workflows/*.yml``) and GitLab (``.gitlab-ci.yml``): the jobs that run on
pull requests (on push where nothing runs on pull requests), their ``run:``/``script:`` lines, each
with the line it stands on, its job's working directory and its environment less secrets. Set-up,
install, upload, deploy and publish steps, steps that read a secret, expressions greenloop cannot
resolve and commands it does not know are listed as skipped with why; nothing is ever executed here.
A matrix runs the row that fits this machine; the others are listed.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from greenloop.detect.ci_commands import Verdict, classify
from greenloop.detect.ci_yaml import line_of, load

PR_EVENTS = {"pull_request", "pull_request_target", "merge_group"}
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_MATRIX_REF = re.compile(r"^matrix\.([\w-]+)$")
_ENV_REF = re.compile(r"^env\.([\w-]+)$")
_OTHER_OS = re.compile(r"windows|macos|mac-|osx", re.I)
# actions that verify, as the command each runs by default; anything else `uses:` is skipped
KNOWN_ACTIONS = {
    "astral-sh/ruff-action": ("lint", "ruff check ."),
    "chartboost/ruff-action": ("lint", "ruff check ."),
    "pre-commit/action": (
        "lint",
        "pre-commit run --show-diff-on-failure --color=always --all-files",
    ),
    "psf/black": ("lint", "black --check --diff ."),
    "golangci/golangci-lint-action": ("lint", "golangci-lint run"),
    "actions-rust-lang/rustfmt": ("lint", "cargo fmt --all -- --check"),
    "jakebailey/pyright-action": ("type", "pyright"),
    "j178/prek-action": ("lint", "prek run --all-files"),
    "hynek/build-and-inspect-python-package": ("build", "python -m build"),
    "actions-rs/cargo": ("", "cargo {command} {args}"),
    "actions-rs/clippy-check": ("lint", "cargo clippy {args}"),
}
# an action's inputs that add to its command: golangci-lint's `args`, actions-rs/cargo's own
ACTION_ARGS = {"golangci/golangci-lint-action": "args", "astral-sh/ruff-action": "args"}
SETUP_ACTIONS = re.compile(
    r"^(actions/(checkout|setup-\w+|cache|upload-artifact|download-artifact|github-script|"
    r"labeler|stale|configure-pages|upload-pages-artifact|deploy-pages)|[\w-]+/setup-[\w-]+|"
    r"dtolnay/rust-toolchain|Swatinem/rust-cache|astral-sh/setup-uv|pnpm/action-setup|"
    r"codecov/codecov-action|coverallsapp/github-action|pypa/gh-action-pypi-publish|"
    r"softprops/action-gh-release|docker/[\w-]+)(@|$)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CiCommand:
    """One verification command CI runs."""

    kind: str
    command: str
    """As CI runs it, with the environment the job and step set (less secrets) in front."""
    origin: str
    """``PATH:LINE`` of the line holding the command, relative to the repository root."""
    cwd: str = ""
    job: str = ""
    job_name: str = ""
    """The job's ``name:`` as CI shows it (a check run's name), else its key."""

    def of_check(self, check: str) -> bool:
        """Whether this command belongs to the CI check named ``check``: the job's key or name
        (``tests (3.11)`` for a matrix job named ``tests``), or the workflow file."""
        if not check:
            return False
        names = {self.job, self.job_name.split("${{")[0].strip()}
        if check in names or check == self.origin.rpartition(":")[0]:
            return True
        return any(n and check.startswith(f"{n} (") for n in names)


@dataclass(frozen=True, slots=True, kw_only=True)
class CiSkip:
    origin: str
    command: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CiReading:
    commands: tuple[CiCommand, ...] = ()
    skipped: tuple[CiSkip, ...] = ()
    files: tuple[str, ...] = ()


@dataclass(slots=True)
class _Found:
    commands: list[CiCommand] = field(default_factory=list)
    skipped: list[CiSkip] = field(default_factory=list)

    def skip(self, origin: str, command: str, reason: str) -> None:
        self.skipped.append(CiSkip(origin=origin, command=command, reason=reason))


def ci_files(root: Path) -> tuple[Path, ...]:
    folder = root / ".github" / "workflows"
    found = sorted(folder.glob("*.y*ml")) if folder.is_dir() else []
    gitlab = root / ".gitlab-ci.yml"
    return (*found, *([gitlab] if gitlab.is_file() else []))


def read_ci(root: Path, environ: Mapping[str, str] = os.environ) -> CiReading:
    """Every verification command of the project's CI; FatalError for a malformed file."""
    found = _Found()
    files = ci_files(root)
    workflows = [(p, load(p, root)) for p in files if p.name != ".gitlab-ci.yml"]
    on_pr = any(PR_EVENTS & _triggers(doc) for _, doc in workflows if isinstance(doc, dict))
    for path, doc in workflows:
        _workflow(path.relative_to(root).as_posix(), doc, on_pr, found)
    gitlab = [p for p in files if p.name == ".gitlab-ci.yml"]
    if gitlab:
        from greenloop.detect.ci_gitlab import read_gitlab

        read_gitlab(".gitlab-ci.yml", load(gitlab[0], root), found)
    shown = tuple(p.relative_to(root).as_posix() for p in files)
    # matrix rows that differ in what the command does not use give the same command once
    commands = {(c.origin, c.command, c.cwd): c for c in found.commands}
    skipped = {(s.origin, s.command, s.reason): s for s in found.skipped}
    return CiReading(
        commands=tuple(commands.values()), skipped=tuple(skipped.values()), files=shown
    )


def _triggers(doc: Mapping[str, Any]) -> set[str]:
    on = doc.get("on", doc.get("true"))
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return {str(v) for v in on}
    return {str(k) for k in on} if isinstance(on, dict) else set()


def _workflow(path: str, doc: Any, on_pr: bool, found: _Found) -> None:
    if not isinstance(doc, dict):
        return
    triggers = _triggers(doc)
    runs = bool(PR_EVENTS & triggers) if on_pr else "push" in triggers
    if not runs:
        when = ", ".join(sorted(triggers)) or "nothing"
        wanted = "pull requests" if on_pr else "push"
        found.skip(f"{path}:1", f"workflow {path}", f"runs on {when}, not on {wanted}")
        return
    found_jobs = doc.get("jobs")
    jobs: dict[str, Any] = found_jobs if isinstance(found_jobs, dict) else {}
    env = _env(doc.get("env"))
    defaults = _working_directory(doc.get("defaults"))
    first = len(found.commands)
    for name, job in jobs.items():
        if isinstance(job, dict):
            _job(path, name, job, env, defaults, found)
    shown = {str(k): str(j.get("name") or k) for k, j in jobs.items() if isinstance(j, dict)}
    found.commands[first:] = [
        replace(c, job_name=shown.get(c.job, c.job)) for c in found.commands[first:]
    ]


def _job(
    path: str, name: str, job: dict[str, Any], env: dict[str, str], cwd: str, found: _Found
) -> None:
    where = f"{path}:{line_of(name)}"
    if "uses" in job:
        found.skip(where, f"job {name}", f"calls the reusable workflow {job['uses']}: not read")
        return
    rows = _matrix_rows(job.get("strategy"))
    row, others = _pick_row(rows)
    others = [o for o in others if o]
    if others:
        found.skip(where, f"job {name}", f"matrix rows not run here: {'; '.join(others)}")
    runs_on = _resolve(str(job.get("runs-on", "")), row, {})
    if runs_on is not None and _OTHER_OS.search(runs_on) and not _OTHER_OS.search(sys.platform):
        found.skip(where, f"job {name}", f"runs on {runs_on}: cannot run here")
        return
    condition = job.get("if")
    if condition is not None and _may_run(str(condition), row) is False:
        found.skip(where, f"job {name}", f"if: {condition} (not on a pull request)")
        return
    job_env = {**env, **_env(job.get("env"))}
    job_cwd = _working_directory(job.get("defaults")) or cwd
    for each in _expanded(rows, row):
        for step in job.get("steps") or []:
            if isinstance(step, dict):
                _step(path, name, step, job_env, job_cwd, each, found)


def _step(
    path: str,
    job: str,
    step: dict[str, Any],
    env: dict[str, str],
    cwd: str,
    row: dict[str, str],
    found: _Found,
) -> None:
    uses, run = step.get("uses"), step.get("run")
    shown = str(run).strip().splitlines()[0] if isinstance(run, str) and run.strip() else ""
    if step.get("continue-on-error") is True or str(step.get("continue-on-error")) == "true":
        where = f"{path}:{line_of(run if run is not None else uses)}"
        found.skip(where, shown or f"uses: {uses}", "continue-on-error: CI ignores its failure")
        return
    if step.get("if") is not None and _may_run(str(step["if"]), row) is False:
        where = f"{path}:{line_of(run if run is not None else uses)}"
        found.skip(where, shown or f"uses: {uses}", f"if: {step['if']} (not on a pull request)")
        return
    if uses is not None:
        _uses(path, job, str(uses), step.get("with"), found, line_of(uses))
        return
    if not isinstance(run, str):
        return
    where = f"{path}:{line_of(run)}"
    step_env = {**env, **_env(step.get("env"))}
    if "secrets." in run or any("secrets." in str(v) for v in (step.get("env") or {}).values()):
        found.skip(where, run.strip().splitlines()[0], "reads a secret")
        return
    folder = folder_of(str(step["working-directory"])) if step.get("working-directory") else cwd
    shell = str(step.get("shell", "bash"))
    if shell.split(maxsplit=1)[0] not in ("bash", "sh"):
        found.skip(where, run.strip().splitlines()[0], f"runs in {shell}, not a POSIX shell")
        return
    take_lines(path, job, run, step_env, folder, row, found)


def _uses(path: str, job: str, uses: str, inputs: object, found: _Found, line: int) -> None:
    action = uses.split("@", 1)[0]
    where = f"{path}:{line}"
    known = KNOWN_ACTIONS.get(action)
    given = {str(k): str(v) for k, v in inputs.items()} if isinstance(inputs, dict) else {}
    if known:
        kind, command = known
        command = command.format(command=given.get("command", ""), args=given.get("args", ""))
        extra = given.get(ACTION_ARGS.get(action, ""), "")
        command = " ".join(f"{command} {extra}".split())
        kind = kind or classify(command).kind
        if kind and "${{" not in command:
            found.commands.append(CiCommand(kind=kind, command=command, origin=where, job=job))
        else:
            found.skip(where, f"uses: {uses}", f"runs `{command}`, which is not a check")
    elif SETUP_ACTIONS.search(uses):
        found.skip(where, f"uses: {uses}", "set-up, upload or publish action")
    else:
        found.skip(where, f"uses: {uses}", "an action greenloop does not map to a command")


def take_lines(
    path: str,
    job: str,
    run: str,
    env: Mapping[str, str],
    cwd: str,
    row: Mapping[str, str],
    found: _Found,
    *,
    checks: str = "",
) -> None:
    """Each command of a ``run:`` block, or of a GitLab ``script:`` entry: ``cd`` and ``export``
    lines carry on to the lines below them; a generator before ``git diff --exit-code`` is one
    freshness check with it. ``checks``: the GitLab stage (``test``) whose job exists to check,
    so a script greenloop does not know by name is its check (``sh ci/downstream-php.sh``)."""
    env = dict(env)
    pending: list[tuple[str, int]] = []  # set-up lines a freshness check would take along
    for command, line in _blocks(_commands(run)):
        if "\n" in command:  # an `if … fi`, `for … done`: one command, as the shell runs it
            _block(path, job, command, line, env, cwd, row, found)
            continue
        where = f"{path}:{line}"
        resolved = _resolve(command, row, env)
        if resolved is None:
            found.skip(where, command, "an expression greenloop cannot resolve here")
            continue
        if _shell_state(resolved, env):
            cwd = _cd(resolved, cwd)
            continue
        verdict = classify(resolved)
        if checks and not verdict.kind and "never guessed" in verdict.skip:
            verdict = Verdict(kind="build" if "build" in checks else "test")
        if verdict.kind == "fresh" and pending:
            resolved = " && ".join([*(c for c, _ in pending), resolved])
            pending = []
        if verdict.kind:
            command_text = _with_env(resolved, env)
            found.commands.append(
                CiCommand(kind=verdict.kind, command=command_text, origin=where, cwd=cwd, job=job)
            )
            continue
        if "generat" in verdict.skip or _generator(resolved):
            pending.append((resolved, line))
            continue
        found.skip(where, command, verdict.skip)
    for command, line in pending:  # a generator no freshness check followed
        found.skip(f"{path}:{line}", command, "generates files; no freshness check follows it")


def _commands(run: str) -> Iterator[tuple[str, int]]:
    """The logical lines of a script (``\\`` continues a line) with their 1-based line."""
    first = line_of(run)
    buffer, start = "", 0
    for offset, raw in enumerate(str(run).splitlines()):
        text = raw.strip()
        if not buffer:
            start = first + offset
        if not text or (text.startswith("#") and not buffer):
            continue
        if text.endswith("\\"):
            buffer += text[:-1] + " "
            continue
        yield (buffer + text).strip(), start
        buffer = ""
    if buffer.strip():
        yield buffer.strip(), start


_OPENERS = {"if": "fi", "for": "done", "while": "done", "until": "done", "case": "esac"}
_KEYWORDS = ("then", "else", "elif", "do", "fi", "done", "esac", ";;")


def _blocks(lines: Iterator[tuple[str, int]]) -> Iterator[tuple[str, int]]:
    """Logical lines, a compound command (``if … fi``) joined into one with newlines."""
    depth, start = 0, 0
    block: list[tuple[str, int]] = []
    for command, line in lines:
        first = command.split(maxsplit=1)[0] if command.split() else ""
        opened = len(re.findall(r"(?:^|;|\s)(if|for|while|until|case)\s", command))
        closed = len(re.findall(r"(?:^|;|\s)(fi|done|esac)\s*(?:;|$|\|\||&&)", command))
        if depth == 0 and first not in _OPENERS:
            yield command, line
            continue
        if depth == 0:
            block, start = [], line
        block.append((command, line))
        depth += opened - closed
        if depth <= 0:
            depth = 0
            yield "\n".join(c for c, _ in block), start
            block = []
    if block:
        yield "\n".join(c for c, _ in block), start


def _block(
    path: str,
    job: str,
    block: str,
    line: int,
    env: Mapping[str, str],
    cwd: str,
    row: Mapping[str, str],
    found: _Found,
) -> None:
    """A compound command is taken whole where a line inside it is a check; its origin is that
    line."""
    for offset, inner in enumerate(block.splitlines()):
        text = inner.strip()
        for keyword in ("if ", "then ", "else ", "elif ", "do ", "while ", "until "):
            text = text.removeprefix(keyword)
        if not text or text.split()[0] in _KEYWORDS or text.endswith((" then", "; then", "do")):
            continue
        verdict = classify(text.rstrip(";"))
        if verdict.kind:
            resolved = _resolve(block, row, env)
            if resolved is None:
                break
            command = _with_env(resolved, env)
            found.commands.append(
                CiCommand(
                    kind=verdict.kind, command=command, origin=f"{path}:{line + offset}",
                    cwd=cwd, job=job,
                )
            )  # fmt: skip
            return
    found.skip(f"{path}:{line}", block.splitlines()[0], "a shell block that runs no known check")


def _shell_state(command: str, env: dict[str, str]) -> bool:
    """``cd x``, ``export A=b``, ``set -e``: they change what the lines below run with."""
    words = command.split()
    if words[:1] == ["export"] and len(words) > 1:
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if sep:
                env[key] = value.strip("'\"")
        return True
    return words[:1] in (["cd"], ["set"], ["shopt"], ["ulimit"]) and "&&" not in command


def _cd(command: str, cwd: str) -> str:
    words = command.split()
    if words[:1] != ["cd"] or len(words) != 2:
        return cwd
    target = words[1].replace("$GITHUB_WORKSPACE", ".").replace("${GITHUB_WORKSPACE}", ".")
    if target.startswith("/") or target.startswith("$"):
        return cwd
    return os.path.normpath(os.path.join(cwd or ".", target)).removeprefix("./")


def _generator(command: str) -> bool:
    words = command.split()
    return bool(words) and (
        "generate" in command or "codegen" in command or words[0] in ("protoc", "buf")
    )


def _with_env(command: str, env: Mapping[str, str]) -> str:
    own = {k: v for k, v in env.items() if not k.startswith(("GITHUB_", "RUNNER_", "CI"))}
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in own.items())
    return f"{prefix} {command}" if prefix else command


def _env(table: object) -> dict[str, str]:
    """A workflow's, job's or step's ``env``, less secrets and values greenloop cannot know."""
    if not isinstance(table, dict):
        return {}
    out = {}
    for key, value in table.items():
        text = str(value)
        if "secrets." in text or _EXPRESSION.search(text):
            continue
        out[str(key)] = text
    return out


def _working_directory(defaults: object) -> str:
    run = defaults.get("run") if isinstance(defaults, dict) else None
    folder = run.get("working-directory") if isinstance(run, dict) else None
    return folder_of(str(folder)) if folder else ""


def folder_of(folder: str) -> str:
    """A working directory relative to the checkout; the checkout's own path (``$GITHUB_WORKSPACE``,
    ``…/${{ github.repository }}``, where CI put it) is the root."""
    if "github.repository" in folder or "GITHUB_WORKSPACE" in folder or folder in (".", "./"):
        return ""
    return os.path.normpath(folder).removeprefix("./") if not folder.startswith("/") else ""


def _resolve(text: str, row: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """``${{ matrix.x }}`` and ``${{ env.X }}`` filled in; None when another expression remains."""
    unknown = False

    def fill(m: re.Match[str]) -> str:
        nonlocal unknown
        inner = m.group(1)
        matrix, named = _MATRIX_REF.match(inner), _ENV_REF.match(inner)
        if matrix and matrix.group(1) in row:
            return row[matrix.group(1)]
        if named and named.group(1) in env:
            return env[named.group(1)]
        unknown = True
        return m.group(0)

    filled = _EXPRESSION.sub(fill, text)
    return None if unknown else filled


def _may_run(condition: str, row: Mapping[str, str]) -> bool | None:
    """Whether an ``if:`` holds on a pull request: True, False, or None (not known: the job or
    step is taken, as CI mostly runs it; only what is known not to run is left out)."""
    text = condition.strip().removeprefix("${{").removesuffix("}}").strip()
    if text in ("always()", "success()", "!cancelled()", "true"):
        return True
    event = re.fullmatch(r"github\.event_name\s*(==|!=)\s*'(\w+)'", text)
    if event:
        is_pr = event.group(2) in PR_EVENTS
        return is_pr if event.group(1) == "==" else not is_pr
    matrix = re.fullmatch(r"matrix\.([\w-]+)\s*(==|!=)\s*'([^']*)'", text)
    if matrix and matrix.group(1) in row:
        same = row[matrix.group(1)] == matrix.group(3)
        return same if matrix.group(2) == "==" else not same
    if re.search(r"startsWith\(github\.ref,\s*'refs/tags/'\)", text) and "||" not in text:
        return False  # a tag push: a release
    if re.fullmatch(r"github\.ref\s*==\s*'refs/heads/[\w./-]+'", text):
        return False  # a push to one branch, never a pull request's merge ref
    return None


def _matrix_rows(strategy: object) -> list[dict[str, str]]:
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return []
    axes = {
        k: v for k, v in matrix.items() if isinstance(v, list) and k not in ("include", "exclude")
    }
    rows: list[dict[str, str]] = [{}]
    for key, values in axes.items():
        rows = [{**r, str(key): str(v)} for r in rows for v in values][:256]
    for extra in matrix.get("include") or []:
        if not isinstance(extra, dict):
            continue
        entry = {str(k): str(v) for k, v in extra.items()}
        # GitHub's include: it extends every row whose axis values it does not change, else it
        # is a row of its own
        fitting = [
            r
            for r in rows
            if r and axes and all(r.get(k, v) == v for k, v in entry.items() if k in axes)
        ]
        for row in fitting:
            row.update({k: v for k, v in entry.items() if k not in axes})
        if not fitting:
            rows.append(entry)
    return [r for r in rows if r]


# axes that say which machine a row runs on: one of their values is run here
_MACHINE_AXES = re.compile(
    r"(^|[-_.])(os|runner|runs-on|platform|python|py|pypy|node|go|golang|rust|toolchain|jdk|java|"
    r"ruby|php|deno|bun|arch)($|[-_.])|version"
)


def _pick_row(rows: list[dict[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The machine axes' row that fits this machine (its OS, its Python), and the other machines
    as text; axes that name checks (``check: [lint, mypy]``) are all run (``_expanded``)."""
    if not rows:
        return {}, []
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"

    def fits(row: dict[str, str]) -> tuple[int, int, int]:
        system = " ".join(v for k, v in row.items() if _MACHINE_AXES.search(k.lower()))
        on_os = 0 if (system and _OTHER_OS.search(system)) else 1
        python = [v for k, v in row.items() if "python" in k.lower()]
        stable = 1 if re.search(r"\bstable\b|latest|lts", system) else 0
        return on_os, 1 if here in python else 0, stable

    best = max(rows, key=fits)
    machines = {_machine(r) for r in rows} - {_machine(best)}
    others = sorted(", ".join(f"{k}={v}" for k, v in m) for m in machines if m)
    shown = others[:5] + ([f"{len(others) - 5} more"] if len(others) > 5 else [])
    return best, shown


def _machine(row: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in row.items() if _MACHINE_AXES.search(k.lower()))


def _expanded(rows: list[dict[str, str]], best: dict[str, str]) -> list[dict[str, str]]:
    """Every row on the chosen machine: one per value of the axes that are not about machines."""
    if not rows:
        return [best]
    chosen = _machine(best)
    same = [r for r in rows if _machine(r) == chosen]
    unique = {tuple(sorted(r.items())): r for r in same}
    return list(unique.values()) or [best]
