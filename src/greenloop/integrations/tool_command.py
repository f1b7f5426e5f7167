"""Is the shell command an agent ran a verifier, and did it run the whole suite?

Pure and cheap: the PostToolUse hook asks this on every shell call of the agent (issue 25), so
a command that names no runner is answered by one regular expression, before anything else is
imported or parsed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from greenloop.integrations import tool_grammar
from greenloop.integrations.tool_gate import CANDIDATE

_FD_REDIRECT = re.compile(r"(?<!\d)\d*>&\d*-?|&>>?")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "\n"})
# Wrappers that run the rest of the line: dropped, with the options they take a value for.
_WRAPPERS: dict[tuple[str, ...], frozenset[str]] = {
    ("env",): frozenset({"-u", "--unset", "-C", "--chdir"}),
    ("time",): frozenset(),
    ("nice",): frozenset({"-n"}),
    ("nohup",): frozenset(),
    ("command",): frozenset(),
    ("exec",): frozenset(),
    ("timeout",): frozenset({"-s", "--signal", "-k", "--kill-after"}),
    ("uv", "run"): frozenset(
        {"--with", "-p", "--python", "--extra", "--group", "--package", "--directory", "--project"}
    ),
    ("uvx",): frozenset({"--with", "-p", "--python", "--from"}),
    ("poetry", "run"): frozenset(),
    ("pdm", "run"): frozenset(),
    ("hatch", "run"): frozenset(),
    ("pipenv", "run"): frozenset(),
    ("rye", "run"): frozenset(),
    ("npx",): frozenset({"-p", "--package"}),
    ("pnpm", "exec"): frozenset(),
    ("pnpm", "dlx"): frozenset(),
    ("yarn", "dlx"): frozenset(),
    ("yarn", "exec"): frozenset(),
    ("bunx",): frozenset(),
    ("bun", "x"): frozenset(),
    ("bundle", "exec"): frozenset(),
    # coverage tools run the rest of the line under coverage: the same tests, whole
    ("coverage", "run"): frozenset(
        {"--source", "--rcfile", "--omit", "--include", "--data-file", "--context"}
    ),
    ("c8",): frozenset(
        {"-r", "--reporter", "-n", "--include", "-x", "--exclude", "-o", "--reports-dir"}
        | {"--temp-directory", "--src", "-e", "--extension", "--lines", "--functions"}
        | {"--branches", "--statements", "--per-file"}
    ),
    ("nyc",): frozenset(
        {"-r", "--reporter", "-n", "--include", "-x", "--exclude", "--report-dir", "-e"}
        | {"--temp-dir", "--extension", "--lines", "--functions", "--branches", "--statements"}
    ),
}
_TAKES_A_COUNT = frozenset({"timeout"})  # `timeout 60 pytest`: the duration is no command
_PYTHON = re.compile(r"^(?:python|python3|python3\.\d+|py|pypy3?)$")
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_SCRIPT = re.compile(
    r"^(?:test|tests|unit|spec|check|lint|typecheck|type-check|types|tsc)(?:[:_-][\w:-]*)?$"
)
_TEST_RUNNERS = frozenset(
    {"vitest", "jest", "mocha", "ava", "tap", "tape", "uvu", "jasmine", "rspec", "bnt"}
)
_LINTERS = {
    "ruff": "lint",
    "flake8": "lint",
    "eslint": "lint",
    "black": "lint",
    "mypy": "type",
    "dmypy": "type",
    "pyright": "type",
    "basedpyright": "type",
    "tsc": "type",
    "vue-tsc": "type",
    "xo": "lint",
    "tsd": "type",
    "prettier": "lint",
}
_NOT_A_RUN = frozenset({"--version", "-V", "--help", "-h", "--collect-only", "--co", "--init"})
_WATCH = frozenset({"--watch", "-w", "--watchAll", "watch", "dev"})
_CARGO = {"test": "tests", "nextest": "tests", "check": "build", "clippy": "lint", "build": "build"}
_GO = {"test": "tests", "vet": "lint", "build": "build"}
_LINT_SCRIPT = re.compile(r"^(?:check|lint|typecheck|type-check|types|tsc)(?:[:_-][\w:-]*)?$")
_MAKE_TARGETS = frozenset({"test", "tests", "check", "lint", "typecheck"})
_SOURCE_FILE = re.compile(r"\.(?:py|pyi|js|jsx|ts|tsx|mjs|cjs|mts|cts|vue|rs|go|rb)$")
_FILTERS = {
    "pytest": {"-k", "-m", "--deselect", "--lf", "--last-failed", "--sw", "--stepwise"},
    "go": {"-run", "--run", "-skip", "--skip", "-short"},
    "cargo": {"--test", "--lib", "--bin", "--doc", "--exact", "--skip", "--example"},
}
_BOOLEAN_FLAGS = frozenset(
    {"--onlyChanged", "-o", "--changed", "--lib", "--doc", "--exact", "-short", "--test-only"}
)
_STOPS_EARLY = frozenset({"-x", "--exitfirst", "--maxfail", "--bail", "-failfast", "--failfast"})
_PYTEST_VALUED = frozenset("kmpcoWrnx")  # short options whose value may follow in the same word


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """A verifier the agent ran itself, as its command line reads."""

    runner: str
    """The runner's name: ``pytest``, ``jest``, ``cargo``, ``npm test`` …"""
    kind: str
    """``tests``, ``lint``, ``type`` or ``build``."""
    partial: tuple[str, ...] = ()
    """Why this run is not a verdict on the whole suite (``-k``, one file, piped into tail …)."""
    exit_code_lost: bool = False
    """The shell's exit code is another command's (``| tail``): the output tells."""
    words: tuple[str, ...] = ()
    """The verifier's own words, wrappers and environment assignments dropped."""


def maybe_verifier(command: str) -> bool:
    """The fast path: False means the command cannot be a known runner invocation."""
    return CANDIDATE.search(command) is not None


def find_verifier(command: str, configured: tuple[str, ...] = ()) -> Invocation | None:
    """The first verifier the command runs, or None. ``configured``: the repo's stage commands."""
    stripped = command.strip()
    for stage in configured:
        if stripped == stage.strip():
            return Invocation(runner=stage.strip(), kind="tests", words=tuple(stage.split()))
    segments, operators = _segments(stripped)
    for i, segment in enumerate(segments):
        words = _unwrap(segment)
        found = _recognize(words) or _configured(words, configured)
        if found is None:
            continue
        piped = operators[i] in {"|", "|&"}
        return _with(found, _after(segments[i + 1 :], operators[i]), piped=piped)
    return None


def _after(rest: list[list[str]], operator: str) -> str:
    """What the shell does after the verifier that changes its exit code or its output."""
    follower = _unwrap(rest[0])[:1] if rest else []
    name = f"`{follower[0]}`" if follower else "another command"
    if operator in {"|", "|&"}:
        return f"output piped into {name}: its exit code and what it kept"
    if operator == "||":
        return f"`|| {follower[0] if follower else '…'}` after it: a failure exits as that command"
    return ""


def _with(found: Invocation, reason: str, *, piped: bool) -> Invocation:
    """``| tail``: the exit code is the last command's, the output tells; ``|| true`` keeps it,
    so a failure it hides reads as the untrusted green it is."""
    if not reason:
        return found
    return Invocation(
        runner=found.runner, kind=found.kind, partial=(*found.partial, reason), words=found.words,
        exit_code_lost=piped,
    )  # fmt: skip


def _segments(command: str) -> tuple[list[list[str]], list[str]]:
    """Simple commands and the operator after each (``cd x && pytest -q | tail`` -> 3, 2)."""
    import shlex

    command = _FD_REDIRECT.sub(" ", command.replace("|&", "|")).replace("\n", " ; ")  # 2>&1
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: the words as they stand
        tokens = command.split()
    segments: list[list[str]] = [[]]
    operators: list[str] = []
    for token in tokens:
        if token in _OPERATORS:
            segments.append([])
            operators.append(token)
        else:
            segments[-1].append(token)
    operators.append("")
    return segments, operators


def _unwrap(words: list[str]) -> list[str]:
    """Drop environment assignments and wrappers (``FOO=1 uv run python -m pytest`` -> pytest)."""
    words = list(words)
    while words:
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
        wrapper = next((w for w in _WRAPPERS if tuple(words[: len(w)]) == w), None)
        if wrapper is None:
            break
        del words[: len(wrapper)]
        words = _drop_options(words, _WRAPPERS[wrapper])
        if wrapper[0] in _TAKES_A_COUNT and words:
            words.pop(0)
    if len(words) >= 3 and _PYTHON.match(os.path.basename(words[0])) and words[1] == "-m":
        return words[2:]
    return words


def _drop_options(words: list[str], valued: frozenset[str]) -> list[str]:
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in valued and words:
            words.pop(0)
    return words


def _recognize(words: list[str]) -> Invocation | None:
    if not words or any(w in _NOT_A_RUN for w in words[1:]):
        return None
    head = os.path.basename(words[0])
    args = words[1:]
    if head in {"pytest", "py.test"}:
        return _found("pytest", "tests", words, _pytest_partial(args))
    if head == "unittest":
        return _found(head, "tests", words, _unittest_partial(args))
    if head in {"tox", "nox"} or head == "runtests.py" or _runs_a_script(words, "runtests.py"):
        return _found(os.path.basename(head), "tests", words, ())
    if head in _PACKAGE_MANAGERS:
        return _package_script(head, words)
    if head in _TEST_RUNNERS:
        return _js_runner(head, words)
    if head == "node" and any(a == "--test" or a.startswith("--test=") for a in args):
        selects = tool_grammar.selection([a for a in args if a != "--test"], "node")
        return _found("node --test", "tests", words, tuple(selects))
    if head == "node" and any(a.startswith("--test-") for a in args):  # node:test, one program
        filters = tool_grammar.FILTERS["node"]
        return _found("node", "tests", words, _flags(args, set(filters)))
    if head == "node" and _test_program(args):  # `node test.js`: node:test or tape, run direct
        return _found("node", "tests", words, ())
    if head == "go" and args and args[0] in _GO:
        return _found(f"go {args[0]}", _GO[args[0]], words, _go_partial(args))
    if head in {"cargo", "cargo-nextest"} and args and args[0] in _CARGO:
        filtered = _cargo_partial(args[1:]) if _CARGO[args[0]] == "tests" else ()
        return _found(f"cargo {args[0]}", _CARGO[args[0]], words, filtered)
    if head in _LINTERS:
        return _linter(head, words)
    if head in {"make", "gmake", "just"} and any(a in _MAKE_TARGETS for a in args):
        return _found(f"{head} {next(a for a in args if a in _MAKE_TARGETS)}", "tests", words, ())
    if head == "rake" and any(a in {"test", "spec"} for a in args):
        return _found("rake", "tests", words, ())
    return None


def _found(runner: str, kind: str, words: list[str], partial: tuple[str, ...]) -> Invocation:
    return Invocation(runner=runner, kind=kind, partial=partial, words=tuple(words))


def _configured(words: list[str], configured: tuple[str, ...]) -> Invocation | None:
    line = " ".join(words)
    for stage in configured:
        if line and line == " ".join(_unwrap(stage.split())):
            return Invocation(runner=stage.strip(), kind="tests", words=tuple(words))
    return None


def _package_script(manager: str, words: list[str]) -> Invocation | None:
    """``npm test``, ``npm run test:unit``, ``pnpm -r test``, ``yarn lint``, ``bun test``."""
    args = [a for a in words[1:] if not a.startswith("-")]
    if args and args[0] in {"run", "run-script"}:
        args = args[1:]
    if not args or args[0] in _WATCH:
        return None
    script = "test" if args[0] == "t" else args[0]
    if not _SCRIPT.match(script):
        return None
    if any(w in _WATCH for w in words):
        return None
    extra = words[words.index("--") + 1 :] if "--" in words else []
    kind = "lint" if _LINT_SCRIPT.match(script) else "tests"
    partial = _js_partial(extra, "") if extra else ()
    if manager == "bun" and script == "test":
        partial = _js_partial(words[words.index("test") + 1 :], "")
    return _found(f"{manager} {script}", kind, words, partial)


def _js_runner(head: str, words: list[str]) -> Invocation | None:
    if any(w in _WATCH for w in words[1:]) and "run" not in words[1:]:
        return None
    args = [a for a in words[1:] if a != "run"]
    return _found(head, "tests", words, _js_partial(args, tool_grammar.runner_of(head)))


def _js_partial(args: list[str], runner: str) -> tuple[str, ...]:
    reasons = tool_grammar.selection(args, runner)
    if "--passWithNoTests" in args:
        reasons.append("--passWithNoTests")
    return tuple(reasons)


def _unittest_partial(args: list[str]) -> tuple[str, ...]:
    """``python -m unittest test_calc`` runs one module; ``discover`` (or nothing) the suite."""
    if args[:1] == ["discover"]:
        return tuple(f"-k {_value(args, i)}" for i, a in enumerate(args) if a == "-k")
    valued = {"-k", "-p", "--pattern", "-s", "--start-directory", "-t", "--top-level-directory"}
    reasons = [f"-k {_value(args, i)}" for i, a in enumerate(args) if a == "-k"]
    modules = _positionals(args, valued)
    if modules:
        reasons.append(f"only {_names(modules)}")
    return tuple(reasons)


def _runs_a_script(words: list[str], name: str) -> bool:
    """``python runtests.py``, ``./runtests.py``: the project's own test script."""
    script = words[1] if len(words) > 1 and _PYTHON.match(os.path.basename(words[0])) else ""
    return os.path.basename(script) == name


def _linter(head: str, words: list[str]) -> Invocation | None:
    args = words[1:]
    if head == "ruff" and args and args[0] not in {"check", "format"}:
        return None
    if head == "ruff" and args and args[0] == "format" and "--check" not in args:
        return None  # formats the files: a fixer, its output is no verdict
    if head == "black" and "--check" not in args:
        return None
    if head == "prettier" and not {"--check", "-c", "--list-different", "-l"} & set(args):
        return None  # writes the files: a fixer
    files = [a for a in args if not a.startswith("-") and _SOURCE_FILE.search(a)]
    partial = (f"only {_names(files)}",) if files else ()
    return _found(head, _LINTERS[head], words, partial)


def _pytest_partial(args: list[str]) -> tuple[str, ...]:
    reasons: list[str] = []
    for i, arg in enumerate(args):
        if arg in _FILTERS["pytest"] or arg.split("=")[0] in _FILTERS["pytest"]:
            reasons.append(arg if arg.startswith("--") else f"{arg} {_value(args, i)}".strip())
        elif arg in _STOPS_EARLY or arg.startswith("--maxfail"):
            reasons.append(f"{arg}: stops at the first failures")
        elif arg.startswith("-") and not arg.startswith("--"):
            reasons += _short_flags(arg, args, i)
    skip = {"-k", "-m", "-p", "-c", "-o", "-W", "-r", "-n", "--deselect", "--maxfail", "--rootdir"}
    targets = [a for a in _positionals(args, skip) if "::" in a or a.endswith(".py") or _sub_dir(a)]
    if targets:
        reasons.append(f"only {_names(targets)}")
    return tuple(dict.fromkeys(reasons))


def _sub_dir(arg: str) -> bool:
    """A folder below the top one (``tests/oauth2``): part of the suite; ``tests`` is all of it."""
    path = arg.removeprefix("./").rstrip("/")
    return "/" in path and not path.startswith(("/", "../", "$")) and "*" not in path


def _short_flags(arg: str, args: list[str], i: int) -> list[str]:
    """``-xvs`` holds -x; ``-k expr`` / ``-kexpr`` is a filter; ``-p xdist`` is neither."""
    for pos, flag in enumerate(arg[1:]):
        if flag == "x":
            return ["-x: stops at the first failure"]
        if flag in "km":
            value = arg[pos + 2 :] or _value(args, i)
            return [f"-{flag} {value}".strip()]
        if flag in _PYTEST_VALUED:
            return []
    return []


def _cargo_partial(args: list[str]) -> tuple[str, ...]:
    before = args[: args.index("--")] if "--" in args else args
    after = args[args.index("--") + 1 :] if "--" in args else []
    reasons = list(_flags(before, _FILTERS["cargo"]))
    valued = {"-p", "--package", "--test", "--bin", "--example", "--features", "-F", "-j"}
    valued |= {"--target", "--profile", "--manifest-path", "--color", "--message-format"}
    filters = _positionals(before, valued) + [a for a in after if not a.startswith("-")]
    if filters:
        reasons.append(f"only tests matching {_names(filters)}")
    if "--skip" in after:
        reasons.append("--skip")
    return tuple(reasons)


def _flags(args: list[str], names: set[str]) -> tuple[str, ...]:
    found = []
    for i, arg in enumerate(args):
        name = arg.split("=")[0]
        if name in names:
            value = arg.split("=", 1)[1] if "=" in arg else ""
            if not value and name not in _BOOLEAN_FLAGS and not _value(args, i).startswith("-"):
                value = _value(args, i)
            found.append(f"{name} {value}".strip() if value else name)
        elif name in _STOPS_EARLY:
            found.append(f"{name}: stops at the first failures")
    return tuple(found)


_GO_VALUED = frozenset(
    {"-run", "-skip", "-count", "-timeout", "-p", "-parallel", "-tags", "-coverprofile"}
    | {"-covermode", "-coverpkg", "-bench", "-benchtime", "-cpu", "-o", "-exec", "-ldflags"}
    | {"-gcflags", "-mod", "-modfile", "-shuffle", "-list", "-vet", "-C", "-fuzz", "-fuzztime"}
)


def _go_partial(args: list[str]) -> tuple[str, ...]:
    """Go's filters, and a package other than the module's own (``./...``, ``.``): one package
    of many (``go test ./middleware``) is part of the suite."""
    packages = [
        a for a in _positionals(args[1:], set(_GO_VALUED)) if a not in ("./...", ".", "...")
    ]
    named = (f"only {_names(packages)}",) if packages and args[0] == "test" else ()
    return (*_flags(args, _FILTERS["go"]), *named)


def _positionals(args: list[str], valued: set[str]) -> list[str]:
    found: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            break
        elif arg.startswith("-"):
            skip = arg in valued
        else:
            found.append(arg)
    return found


def _value(args: list[str], i: int) -> str:
    return args[i + 1] if i + 1 < len(args) else ""


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


_TEST_PROGRAM = re.compile(
    r"(?:^|/)(?:tests?|spec)(?:/[\w.-]+)?\.[cm]?[jt]s$|[\w-]\.(?:test|spec)\.[cm]?[jt]s$"
)


def _test_program(args: list[str]) -> bool:
    """Node runs a test file directly (``node --conditions development test.js``, ``node
    test/index.js``): the first word after node's own options names a test program."""
    valued = tool_grammar.VALUED["node"]
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in valued and "=" not in option and rest:
            rest.pop(0)
    return bool(rest) and _TEST_PROGRAM.search(rest[0]) is not None
