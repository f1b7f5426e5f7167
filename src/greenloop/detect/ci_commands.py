"""One shell command from a CI step -> the check it is (test, lint, type, build, fresh) or why it is
not taken (issue 38). Known commands only: an unknown one is listed as skipped, never guessed."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# words that run the command after them: `uv run pytest`, `poetry run mypy`, `npx eslint`
_WRAPPERS = {
    ("uv", "run"): 2, ("poetry", "run"): 2, ("pdm", "run"): 2, ("pipenv", "run"): 2,
    ("hatch", "run"): 2, ("rye", "run"): 2, ("pixi", "run"): 2, ("bundle", "exec"): 2,
    ("pnpm", "exec"): 2, ("yarn", "exec"): 2, ("npm", "exec"): 2, ("npx",): 1, ("bunx",): 1,
    ("uvx",): 1, ("pipx", "run"): 2, ("xvfb-run",): 1,
    ("sudo",): 1, ("time",): 1, ("nice",): 1, ("timeout",): 1,
    ("env",): 1, ("command",): 1, ("exec",): 1,
}  # fmt: skip
# options of those wrappers that take a value: `uv run --group dev tox`, `pnpm --filter web exec`
_VALUED = {
    "--group", "--only-group", "--no-group", "--with", "--with-editable", "--extra", "--python",
    "-p", "--package", "--project", "--directory", "--env-file", "--index", "--from", "-C", "--cwd",
    "--filter", "-F", "--workspace", "-w", "--config", "-c", "-e", "--env", "--frozen-lockfile",
    "-k", "-s", "--signal", "--preserve-env",
}  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MODULE_RUNNERS = {"python", "python3", "py", "pypy3"}

TEST_TOOLS = {
    "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "tap", "tape", "uvu",
    "ctest", "rspec", "trial", "nextest", "unittest", "phpunit", "karma", "playwright", "cypress",
}  # fmt: skip
LINT_TOOLS = {
    "ruff", "flake8", "pylint", "black", "isort", "eslint", "prettier", "golangci-lint",
    "staticcheck", "pre-commit", "prek", "codespell", "shellcheck", "markdownlint", "xo",
    "standard", "biome", "stylelint", "yamllint", "actionlint", "typos", "mdformat", "pydocstyle",
    "bandit", "vulture", "check-manifest", "pyupgrade", "autoflake", "ruff-format", "zizmor",
    "taplo", "rustfmt", "gofmt", "goimports", "revive", "deno-lint", "oxlint", "knip",
    "validate-pyproject", "cargo-deny", "cargo-machete", "cargo-audit", "pycodestyle",
    "check-wheel-contents", "pyroma", "doc8", "rstcheck", "interrogate", "slotscheck",
}  # fmt: skip
TYPE_TOOLS = {"mypy", "pyright", "basedpyright", "tsc", "pytype", "vue-tsc", "stubtest", "ty"}
BUILD_TOOLS = {"sphinx-build", "mkdocs", "cmake", "meson", "ninja", "bazel", "webpack", "vite"}
INSTALL = {
    "pip", "pip3", "pipx", "apt", "apt-get", "brew", "choco", "conda", "mamba", "micromamba",
    "rustup", "corepack", "nvm", "gem", "sdkmanager", "pyenv", "asdf", "dnf", "yum", "apk",
    "zypper", "pacman", "port", "snap",
}  # fmt: skip
PUBLISH = {
    "twine", "gh", "aws", "gcloud", "az", "kubectl", "helm", "firebase", "netlify", "vercel",
    "codecov", "coveralls", "ghp-import", "flit", "wrangler", "heroku", "fly", "buildah",
}  # fmt: skip
SHELL = {
    "echo", "printf", "cat", "ls", "pwd", "which", "type", "mkdir", "cp", "mv", "rm", "touch",
    "chmod", "chown", "ln", "source", ".", "set", "shopt", "ulimit", "true", "sleep", "date",
    "uname", "df", "free", "nproc", "sort", "tee", "head", "tail", "grep", "find", "tar",
    "unzip", "curl", "wget", "export", "cd", "pushd", "popd", "exit", "jq", "du", "whoami",
}  # fmt: skip
_BY_NAME = (  # a script, make target, npm script, tox env or nox session, by its name
    (re.compile(r"publish|release|deploy|upload|bump|tag"), "skip:publish"),
    (re.compile(r"fix|write|^(format|fmt)$|^(format|fmt)[^c]*$"), "skip:rewrites"),
    (re.compile(r"install|setup|deps|bootstrap|prepare|clean|venv|env$"), "skip:install"),
    (re.compile(r"typ(e|ing)|mypy|pyright|tsc"), "type"),
    (
        re.compile(r"lint|fmt|format|style|check-format|pre-?commit|ruff|flake|eslint|prettier"),
        "lint",
    ),
    (re.compile(r"vet\b|vet$"), "lint"),
    (re.compile(r"test|spec|check|verify|ci$|cov|diff"), "test"),
    (re.compile(r"build|compile|docs|dist|package|bundle"), "build"),
)


PUBLISHES = "uploads, publishes or deploys"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What a command is: ``kind`` (test, lint, type, build, fresh) or ``skip`` (why not)."""

    kind: str = ""
    skip: str = ""


def classify(command: str) -> Verdict:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return Verdict(skip="not a command greenloop can read (unbalanced quotes)")
    swallowed = _swallowed(words)
    if swallowed:
        return Verdict(skip=f"its failure is ignored (`|| {swallowed}`): CI does not gate on it")
    words = _unwrapped(words)
    if not words:
        return Verdict(skip="sets variables only")
    return _of(words, command)


def _swallowed(words: list[str]) -> str:
    """The fallback after a top-level ``||`` that turns a failure into success (``|| true``,
    ``|| git diff``); "" when there is none or it fails too (``|| exit 1``, ``|| false``)."""
    if "||" not in words:
        return ""
    fallback = words[len(words) - words[::-1].index("||") :]
    last = [w.strip(";{}") for w in fallback if w.strip(";{}")]  # `|| { cat log; false; }`
    if last[-1:] == ["false"] or (len(last) > 1 and last[-2] == "exit" and last[-1] != "0"):
        return ""
    return " ".join(fallback) or "true"


def _unwrapped(words: list[str]) -> list[str]:
    changed = True
    while words and changed:
        changed = False
        while words and _ASSIGNMENT.match(words[0]):
            words, changed = words[1:], True
        for prefix, width in _WRAPPERS.items():
            if tuple(words[: len(prefix)]) == prefix:
                rest = words[width:]
                while rest[:1] and rest[0].startswith("-"):  # `npx --yes eslint`, `uv run --frozen`
                    valued = rest[0] in _VALUED and prefix != ("timeout",)
                    rest = rest[2:] if valued else rest[1:]
                if prefix == ("timeout",):
                    rest = rest[1:] if rest and rest[0][:1].isdigit() else rest  # `timeout 600 x`
                words, changed = rest, True
                break
    return words


def _of(words: list[str], command: str) -> Verdict:
    head = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if ("/" in words[0] and not words[0].startswith("$")) or head.endswith(".sh"):
        return _script(head, words[0])  # scripts/test, ./ci/lint.sh: the project's own scripts
    if head in _MODULE_RUNNERS or re.fullmatch(r"python\d(\.\d+)?", head):
        return _python(rest, command)
    if head == "git":
        return _git(rest, command)
    if head in ("npm", "yarn", "pnpm", "bun"):
        return _package_manager(head, rest)
    if head in ("make", "just", "task", "invoke", "mage"):
        return _target(rest[0] if rest and not rest[0].startswith("-") else "", head)
    if head in ("go", "cargo", "deno", "dotnet", "swift", "mvn", "gradle", "./gradlew"):
        return _toolchain(head, rest)
    if head in ("tox", "nox"):
        return _session(head, rest)
    if head in ("sh", "bash") and rest:
        script = [w for w in rest if not w.startswith("-")]
        if script and script[0].endswith(".sh"):
            return _target(script[0].rsplit("/", 1)[-1].removesuffix(".sh"), "script")
        return Verdict(skip="runs a shell command greenloop cannot read")
    if head == "meson" and rest:
        steps = {"test": "test", "compile": "build", "dist": "build"}
        kind = steps.get(rest[0], "")
        return Verdict(kind=kind) if kind else Verdict(skip=f"`meson {rest[0]}` is set-up")
    if head == "docker":
        return Verdict(skip="runs a container (docker): not run here")
    if head == "twine":
        return Verdict(kind="lint") if rest[:1] == ["check"] else Verdict(skip=PUBLISHES)
    if head == "uv":
        return _uv(rest)
    if head == "coverage":
        gate = rest[:1] == ["run"] or any(w.startswith("--fail-under") for w in rest)
        return Verdict(kind="test") if gate else Verdict(skip="a coverage report")
    return _tool(head, rest, command)


def _tool(head: str, rest: list[str], command: str) -> Verdict:
    if head in TEST_TOOLS:
        return Verdict(kind="test")
    if head in TYPE_TOOLS:
        return Verdict(kind="type")
    if head in LINT_TOOLS:
        fixing = head in ("black", "isort", "prettier") and not {"--check", "-c", "--diff"} & {
            *rest,
            "--check-only",
        }
        if fixing and "--check-only" not in rest and "-l" not in rest:
            return Verdict(
                skip=f"{head} rewrites files here (no --check): a formatter, not a check"
            )
        return Verdict(kind="lint")
    if head in BUILD_TOOLS:
        return Verdict(kind="build")
    if "lint" in head:
        return Verdict(kind="lint")  # gobject-linter, cpplint, yamllint-like tools by name
    if head in INSTALL:
        return Verdict(skip="installs tools or packages (set-up)")
    if head in PUBLISH or head.startswith("codecov"):
        return Verdict(skip=PUBLISHES)
    if head in {"test", "["}:
        return Verdict(kind="fresh") if "git" in command else Verdict(skip="a shell condition")
    if head in SHELL:
        return Verdict(skip="prints or prepares, checks nothing")
    return Verdict(skip=f"`{head}` is not a check greenloop knows; not run (never guessed)")


def _script(head: str, path: str) -> Verdict:
    if head in TEST_TOOLS | LINT_TOOLS | TYPE_TOOLS:  # node_modules/.bin/eslint, .venv/bin/pytest
        return _tool(head, [], path)
    return _target(head.removesuffix(".sh"), "script")


def _uv(rest: list[str]) -> Verdict:
    sub = rest[0] if rest else ""
    if sub == "build":
        return Verdict(kind="build")
    if sub == "publish":
        return Verdict(skip=PUBLISHES)
    return Verdict(skip=f"`uv {sub}` installs or prepares (set-up)")


def _python(rest: list[str], command: str) -> Verdict:
    if rest[:1] == ["-m"] and len(rest) > 1:
        module = rest[1]
        if module in ("pip", "venv", "ensurepip", "pipx"):
            return Verdict(skip="installs tools or packages (set-up)")
        if module in ("build",):
            return Verdict(kind="build")
        return _of([module, *rest[2:]], command)
    if rest and rest[0].endswith(".py"):
        name = rest[0].rsplit("/", 1)[-1]
        if name == "manage.py":
            return Verdict(kind="test") if "test" in rest[1:2] else Verdict(skip="a Django command")
        return _target(name.removesuffix(".py"), "script")
    if {"-V", "--version", "-c"} & set(rest[:1]):
        return Verdict(skip="prints or prepares, checks nothing")
    return Verdict(skip="runs Python code that is not a known check; not run (never guessed)")


def _git(rest: list[str], command: str) -> Verdict:
    if rest[:1] == ["diff"] and ({"--exit-code", "--quiet"} & set(rest)):
        return Verdict(kind="fresh")
    if rest[:1] in (["push"], ["tag"]):
        return Verdict(skip=PUBLISHES)
    if rest[:1] == ["status"] and "--porcelain" in rest and ("test" in command or "-z" in command):
        return Verdict(kind="fresh")
    return Verdict(skip="a git command that checks nothing (set-up)")


def _package_manager(head: str, rest: list[str]) -> Verdict:
    if not rest or rest[0] in ("ci", "install", "i", "add", "rebuild", "dedupe", "config"):
        return Verdict(skip="installs tools or packages (set-up)")
    if rest[0] in ("publish", "pack", "version", "login", "deploy"):
        return Verdict(skip=PUBLISHES)
    if rest[0] in ("test", "t", "tst"):
        return Verdict(kind="test")
    if rest[0] in ("audit", "outdated", "ls", "list", "why", "-v", "--version", "info", "view"):
        return Verdict(skip="prints or prepares, checks nothing")
    script = rest[1] if rest[0] in ("run", "run-script") and len(rest) > 1 else rest[0]
    if script in TEST_TOOLS | LINT_TOOLS | TYPE_TOOLS:  # `pnpm vitest --coverage`: its binary
        return _tool(script, rest[2:] if rest[0] in ("run", "run-script") else rest[1:], script)
    if head == "bun" and rest[0] == "x":
        return _tool(rest[1] if len(rest) > 1 else "", rest[2:], " ".join(rest))
    return _target(script, f"{head} script")


def _toolchain(head: str, rest: list[str]) -> Verdict:
    sub = rest[0] if rest else ""
    if head == "go":
        kinds = {"test": "test", "vet": "lint", "build": "build", "generate": "skip:generate"}
        kind = kinds.get(sub, "")
        if kind == "skip:generate":
            return Verdict(skip="generates code (part of a freshness check when one follows)")
        return Verdict(kind=kind) if kind else Verdict(skip=f"`go {sub}` is set-up, not a check")
    if head == "cargo":
        if sub in ("test", "nextest") or (sub == "miri" and rest[1:2] == ["test"]):
            return Verdict(kind="test")
        if sub in ("clippy", "deny", "audit", "machete") or (sub == "fmt" and "--check" in rest):
            return Verdict(kind="lint")
        if sub in ("build", "check", "doc", "bench", "docs-rs", "hack", "msrv"):
            return Verdict(kind="build")
        if sub in ("publish", "release"):
            return Verdict(skip=PUBLISHES)
        return Verdict(skip=f"`cargo {sub}` is set-up, not a check")
    if sub in ("test", "check"):
        return Verdict(kind="test")
    if sub in ("lint", "fmt") and head == "deno":
        return Verdict(kind="lint")
    return Verdict(skip=f"`{head} {sub}` is not a check greenloop knows; not run")


def _session(head: str, rest: list[str]) -> Verdict:
    names = [
        rest[i + 1]
        for i, w in enumerate(rest[:-1])
        if w in ("-e", "-s", "--session", "--sessions", "-k")
    ]
    if not names:
        return Verdict(kind="test")  # the default environments or sessions: the project's tests
    kinds = {_target(n, head).kind or "test" for part in names for n in part.split(",")}
    order = ("test", "type", "lint", "build")
    return Verdict(kind=next((k for k in order if k in kinds), "test"))


def _target(name: str, what: str) -> Verdict:
    low = name.lower()
    if not low:
        return Verdict(kind="build") if what == "make" else Verdict(skip=f"a bare `{what}`")
    for pattern, kind in _BY_NAME:
        if pattern.search(low):
            if kind == "skip:publish":
                return Verdict(skip=f"{what} `{name}` publishes or deploys")
            if kind == "skip:install":
                return Verdict(skip=f"{what} `{name}` sets up, checks nothing")
            if kind == "skip:rewrites":
                return Verdict(skip=f"{what} `{name}` rewrites files: a fixer, not a check")
            return Verdict(kind=kind)
    return Verdict(skip=f"{what} `{name}` is not named as a check; not run (never guessed)")


def check_key(command: str | tuple[str, ...]) -> str:
    """What a command checks, to tell whether two stages are the same check: the tool it runs
    (``ruff``, ``pytest``), or the script it names (``npm:lint``, ``make:test``, ``tox:typing``).
    ``python -m pytest -q`` and ``uv run pytest tests`` are both ``pytest``."""
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError:
        return str(command)
    words = _unwrapped(words)
    if not words:
        return ""
    head = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if (head in _MODULE_RUNNERS or head.startswith("python")) and rest[:1] == ["-m"]:
        return check_key(tuple(rest[1:]))
    if head in ("npm", "yarn", "pnpm", "bun") and rest:
        script = rest[1] if rest[0] in ("run", "run-script") and len(rest) > 1 else rest[0]
        return f"npm:{'test' if script in ('t', 'tst') else script}"
    if head in ("make", "just", "tox", "nox", "cargo", "go", "uv", "deno") and rest:
        named = [w for w in rest if not w.startswith("-")]
        return f"{head}:{named[0] if named else ''}"
    return head
