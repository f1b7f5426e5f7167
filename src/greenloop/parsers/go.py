"""go test (text and ``-json``), go build and go vet."""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from itertools import islice

from greenloop.parsers import go_race, go_timeout
from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput
from greenloop.parsers.values_cut import cut_inline

_RUN = re.compile(r"^=== (?:RUN|CONT|PAUSE|NAME)\s+(?P<name>\S+)")
_RESULT = re.compile(r"^\s*--- (?P<what>FAIL|PASS|SKIP): (?P<name>\S+) \(")
_MESSAGE = re.compile(r"^(?P<indent>\s+)(?P<file>[\w./-]+\.go):(?P<line>\d+): ?(?P<msg>.*)$")
_PACKAGE = re.compile(r"^(?P<st>ok|FAIL|\?)\s+(?P<pkg>[\w./~-]+)(?:\s+|$)")
_DIAG = re.compile(
    r"^(?:vet: )?(?P<file>[^\s:]+\.go):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<msg>\S.*)$"
)
_FUNC = re.compile(r"^(?=.*\)$)(?P<fn>[\w./*()\[\]{}-]+)\(.*\)$")
# a space inside: GOROOT on Windows is C:/Program Files/Go
_LOC = re.compile(r"^\t(?P<file>[^\s:][^\t:]*\.(?:go|s)):(?P<line>\d+)")
_SLASH = re.compile("/")
_SIGNAL = re.compile(r"^(?:signal: (?P<sig>\w[\w ]*)|\*\*\* Test killed(?P<why>.*))$")

_Key = tuple[int, str]
"""(the package's output block, the test's name): a test name is unique within its package only."""


@dataclass
class _Test:
    name: str
    lines: list[tuple[str, int | None, str]] = field(default_factory=list)
    detail: list[str] = field(default_factory=list)
    panic: str = ""
    frames: list[Frame] = field(default_factory=list)
    package: str = ""
    races: list[go_race.Race] = field(default_factory=list)
    example: list[str] = field(default_factory=list)
    """An example's ``got:`` / ``want:`` output, the two markers included."""
    hung: list[str] = field(default_factory=list)
    """A ``-timeout`` panic's tests still running (go_timeout.py); [""] until they are known."""
    goroutines: list[tuple[int, str]] = field(default_factory=list)
    """Where each goroutine of a dump starts in ``frames``, and its header (``goroutine 36 [running]:``)."""


@dataclass
class _State:
    root: str
    diag_kind: Kind
    tests: dict[_Key, _Test] = field(default_factory=dict)
    logs: dict[str, _Test] = field(default_factory=dict)
    """What running tests printed (``-v``/``-json``), kept until ``--- FAIL`` makes it a failure."""
    diagnostics: list[Failure] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    passed: list[_Key] = field(default_factory=list)
    skipped: list[_Key] = field(default_factory=list)
    block: int = 0
    """The package whose output is being read: text output names it only after its tests."""
    packages: int = 0
    ok_packages: int = 0
    """``ok <pkg>`` lines of packages that ran tests (``[no tests to run]`` excluded)."""
    running: str = ""
    current: str = ""
    started: list[str] = field(default_factory=list)
    """``-v``'s ``=== RUN`` tests without a result yet: the ones running when a binary timed out."""
    import_paths: list[str] = field(default_factory=list)
    """Every package ``go test`` reported (``ok``/``FAIL``/``?`` lines): where the module's root is."""


def parse(inp: ParserInput) -> ParseResult:
    state = _State(root=inp.root, diag_kind=Kind.LINT if "vet" in inp.argv else Kind.BUILD)
    text_lines, packages = _split_json(lines_of(inp))
    for package, lines in packages.items():
        _scan(state, lines, package)
    _scan(state, text_lines, "")
    _name_hung(state)
    parents = _parents([*state.tests, *state.passed, *state.skipped])
    # a parent whose subtest failed fails because of it: its own lines are t.Log context (toml's
    # "valid: passed 218; failed 0"), not one more failing test ahead of the subtest's error
    in_trouble = _parents(list(state.tests))
    failed = [
        t
        for key, t in state.tests.items()
        if key not in parents or t.panic or (t.lines and key not in in_trouble)
    ]
    hung: list[Failure] = []
    if (inp.exit_code < 0 or inp.exit_code > 128) and state.started:
        # killed from outside mid-test (greenloop's time limit): the tests -v saw start, no end
        state.killed += go_timeout.leaves(state.started)
        hung = [go_timeout.killed_in(name) for name in go_timeout.leaves(state.started)]
    module = _module_path(state.import_paths, inp.root)
    failures = [_failure(t, state.root, module) for t in failed] + hung + state.diagnostics
    counts = Counts()
    if state.packages:
        counts = Counts(
            passed=sum(key not in parents for key in state.passed),
            failed=len(failed),
            skipped=sum(key not in parents for key in state.skipped),
            # a quiet `go test` (no -v) prints `ok <pkg>` only: tests ran, their number is unknown
            summary_seen=not state.killed and not _quiet(state),
        )
    elif state.diagnostics:  # go build / go vet: the diagnostics are the count (as mypy's total)
        counts = Counts(failed=len(state.diagnostics), summary_seen=True)
    return ParseResult(
        tool="go",
        failures=tuple(failures[:MAX_FAILURES]),
        counts=counts,
        killed=tuple(state.killed),
    )


def _name_hung(state: _State) -> None:
    """A ``-timeout`` panic is a failure of each test still running, not a test named panic."""
    for key, test in list(state.tests.items()):
        if not test.hung:
            continue
        names = [h for h in test.hung if h] or go_timeout.from_functions(
            [f.function for f in test.frames]
        )
        if not names:
            continue
        del state.tests[key]
        frames = go_timeout.test_goroutine(test.frames, test.goroutines)
        for name in names:
            state.tests[key[0], name] = _Test(
                name=name, lines=test.lines, detail=test.detail, panic=test.panic, frames=frames,
                package=test.package,
            )  # fmt: skip


def _quiet(state: _State) -> bool:
    return state.ok_packages > 0 and not state.tests and not state.passed and not state.skipped


def _parents(keys: list[_Key]) -> set[_Key]:
    """Tests that ran subtests: go reports them too, but (as ``go test -json``'s leaves) the
    subtests are the tests; a parent fails only because a subtest did, unless it says why itself.
    A parent is one in its own package only (another package's ``TestX`` is a test of its own).

    Every prefix at a ``/`` (a subtest's own name may hold one: ``TestRoute/path=/a``), of the
    first 16 levels only, so that a 100 000-level name stays linear.
    """
    return {
        (block, name[: m.start()])
        for block, name in keys
        for m in islice(_SLASH.finditer(name), 16)
    }


def _split_json(lines: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``go test -json`` events -> each package's own output text; other lines stay text."""
    text: list[str] = []
    packages: dict[str, list[str]] = {}
    for line in lines:
        event = _event(line) if line.startswith("{") else None
        if event is None:
            text.append(line)
            continue
        output = event.get("Output")
        if isinstance(output, str):
            pkg = str(event.get("Package") or "")
            packages.setdefault(pkg, []).extend(output.rstrip("\n").split("\n"))
    return text, packages


def _event(line: str) -> dict[str, object] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "Action" in value else None


def _scan(state: _State, lines: list[str], package: str) -> None:
    pending: list[_Test] = []
    diag_pkg = ""
    state.block += 1
    panic_test: _Test | None = None
    race: go_race.Race | None = None
    example: _Test | None = None
    for line in lines:
        if panic_test is not None and _panic_line(panic_test, line, state.root):
            continue
        if example is not None and _example_line(example, line):
            continue
        panic_test = example = None
        if race is not None or line == go_race.START:
            race = _race_line(state, race, line)
        elif line.startswith("=== "):
            r = _RUN.match(line)
            state.running = r["name"] if r else state.running
            if r and line.startswith("=== RUN"):
                state.started.append(r["name"])
            state.current = ""
        elif "--- " in line and (m := _RESULT.match(line)):
            example = _result(state, m["what"], m["name"], package, pending)
        elif line.startswith("panic: "):
            panic_test = _panic_start(state, line, package, pending)
        elif line[:1] in (" ", "\t") and (msg := _MESSAGE.match(line)):
            _message(state, msg)
        elif line.startswith("# "):
            diag_pkg = line[2:].split(" ")[0]
        elif (
            line[:1] in "oF?" and (p := _PACKAGE.match(line)) and ("\t" in line or p["st"] == "ok")
        ):
            state.packages += 1
            state.import_paths.append(p["pkg"])
            state.started.clear()
            state.ok_packages += p["st"] == "ok" and "[no tests to run]" not in line
            _end_package(state, p["st"] == "FAIL", package, pending)
            for test in pending:
                test.package = test.package or p["pkg"]
            pending = []
            state.block += 1
        elif ".go:" in line and (d := _DIAG.match(line)) is not None:
            state.diagnostics.append(_diagnostic(state, d, diag_pkg))
        elif line[:1] in "s*" and (s := _SIGNAL.match(line)) is not None:
            state.killed.append(f"{package or diag_pkg or 'test binary'} ({s['sig'] or 'killed'})")
        elif line.startswith("        ") and (open_test := _open_test(state)) is not None:
            open_test.detail.append(line.strip())


def _result(
    state: _State, what: str, name: str, package: str, pending: list[_Test]
) -> _Test | None:
    """Records a test's result; returns a failed example (its got/want output follows)."""
    state.current = ""
    if name in state.started:
        state.started.remove(name)
    logged = state.logs.pop(name, None)  # a t.Log / t.Skip line is a failure only under --- FAIL
    if what == "PASS":
        state.passed.append((state.block, name))
    elif what == "SKIP":
        state.skipped.append((state.block, name))
    else:
        test = _fail(state, name, package, pending, logged)
        state.current = name
        return test if name.startswith("Example") else None
    return None


def _example_line(test: _Test, line: str) -> bool:
    """testing prints a failed example's output as ``got:``, the lines, ``want:``, the lines."""
    if not test.example and line != "got:":
        return False
    if line.startswith(("=== ", "--- ")) or line in ("FAIL", "PASS") or _PACKAGE.match(line):
        return False
    test.example.append(line)
    return True


def _fail(
    state: _State, name: str, package: str, pending: list[_Test], logged: _Test | None
) -> _Test:
    test = state.tests.setdefault((state.block, name), _Test(name=name, package=package))
    if logged is not None:
        test.lines[:0] = logged.lines
        test.detail[:0] = logged.detail
        test.races[:0] = logged.races
    if test not in pending:
        pending.append(test)
    return test


def _end_package(state: _State, failed: bool, package: str, pending: list[_Test]) -> None:
    """A test that printed but never reported (os.Exit, a crash) is the failing one of a FAIL."""
    if failed and state.running in state.logs:
        _fail(state, state.running, package, pending, state.logs.pop(state.running))
    state.logs.clear()


def _open_test(state: _State) -> _Test | None:
    """The test that the current output belongs to: a reported failure, else the running test."""
    if (state.block, state.current) in state.tests:
        return state.tests[state.block, state.current]
    name = state.running
    if not name or state.current:
        return None
    return state.logs.setdefault(name, _Test(name=name))


def _race_line(state: _State, race: go_race.Race | None, line: str) -> go_race.Race | None:
    """A data race report, line by line; at its end it belongs to the test that was running."""
    if race is None:
        return go_race.Race()
    if line != go_race.END:
        go_race.read_line(race, line, state.root)
        return race
    test = _open_test(state)
    if test is not None and race.stacks:
        test.races.append(race)
    return None


def _message(state: _State, msg: re.Match[str]) -> None:
    test = _open_test(state)
    if test is not None and len(test.lines) < 30:
        test.lines.append((msg["file"], to_int(msg["line"]), msg["msg"].strip()))


def _panic_start(state: _State, line: str, package: str, pending: list[_Test]) -> _Test:
    name = state.current or state.running or "panic"
    timed_out = line.startswith(go_timeout.PANIC)
    if timed_out:  # the binary, not one test: the tests that were running are named below
        name = "panic"
    test = _fail(state, name, package, pending, state.logs.pop(name, None))
    if not test.panic:
        test.panic = line[len("panic: ") :].removesuffix(" [recovered]").strip()
    if timed_out:
        test.hung = go_timeout.leaves(state.started) or [""]
        state.started.clear()
    return test


def _panic_line(test: _Test, line: str, root: str) -> bool:
    """Lines of a panic's goroutine dump; False ends it."""
    if line.startswith("goroutine "):
        test.goroutines.append((len(test.frames), line))
        return True
    if line.startswith(("\tpanic: ", "created by ")) or not line.strip():
        return True
    if test.hung and (line == "running tests:" or (name := go_timeout.listed(line))):
        if line != "running tests:":
            test.hung = [*(h for h in test.hung if h), name]
        return True
    loc = _LOC.match(line)
    if loc:
        function = test.detail.pop() if test.detail and test.detail[-1].startswith("fn:") else ""
        frame = Frame(
            file=relative(loc["file"], root), line=to_int(loc["line"]), function=function[3:]
        )
        test.frames.append(frame)
        return True
    if _FUNC.match(line):
        test.detail.append("fn:" + line.rsplit("(", 1)[0])
        return True
    return False


def _diagnostic(state: _State, d: re.Match[str], package: str) -> Failure:
    file = relative(d["file"], state.root)
    col = f":{d['col']}" if d["col"] else ""
    return Failure(
        kind=state.diag_kind,
        id=f"{file}:{d['line']}{col}",
        file=file,
        line=to_int(d["line"]),
        column=to_int(d["col"]),
        error_type="vet" if state.diag_kind is Kind.LINT else "compile error",
        message=d["msg"].strip(),
        detail=(f"package {package}",) if package else (),
    )


# t.Log and t.Error print alike: the headline is the first line that reads like a failure.
_FAILURE_WORDS = re.compile(r"want|got|expect|fail|error|mismatch|unexpected|!=|should|panic", re.I)


def _headline(lines: list[tuple[str, int | None, str]]) -> int:
    """Index of the line that explains the failure: a failure-worded line, else the last one."""
    worded = (i for i, (_, _, msg) in enumerate(lines) if _FAILURE_WORDS.search(msg))
    return next(worded, len(lines) - 1)


def _module_path(import_paths: list[str], root: str) -> str:
    """The module's import path: go.mod's ``module`` line when the root has one, else what the
    packages of a ``./...`` run share (the root package, or their common parent folder)."""
    try:
        with open(os.path.join(root, "go.mod"), encoding="utf-8") as handle:
            for line in islice(handle, 200):
                if line.startswith("module "):
                    return line.split()[1].strip('"')
    except (OSError, UnicodeDecodeError, IndexError):
        pass
    if not import_paths:
        return ""
    shortest = min(import_paths, key=len)
    if all(p == shortest or p.startswith(shortest + "/") for p in import_paths):
        return shortest
    return posixpath.commonpath(import_paths)


def _in_package(file: str, package: str, module: str) -> str:
    """go test names a test file by its base name (``lru_test.go``); in a sub-package that is
    ``simplelru/lru_test.go`` from the module's root, which may hold an ``lru_test.go`` too."""
    if not file or "/" in file or not module or not package.startswith(module + "/"):
        return file
    return f"{package[len(module) + 1 :]}/{file}"


def _failure(test: _Test, root: str, module: str = "") -> Failure:
    if test.races and not test.panic:
        return _race_failure(test, root)
    if test.example:
        return _example_failure(test)
    head = _headline(test.lines) if test.lines else 0
    first = test.lines[head] if test.lines else ("", None, "")
    if first[0]:
        first = (_in_package(first[0], test.package, module), first[1], first[2])
    frames = tuple(reversed(test.frames[:40]))  # goroutine dumps list the innermost call first
    if not frames and first[0]:
        frames = (Frame(file=relative(first[0], root), line=first[1]),)
    if not first[0] and frames:  # a panic: the innermost frame inside the repository
        inner = next((f for f in reversed(frames) if not f.file.startswith("/")), frames[-1])
        first = (inner.file, inner.line, "")
    others = test.lines[:head] + test.lines[head + 1 :]
    detail = [f"{f}:{n}: {m}" for f, n, m in others] + [
        d for d in test.detail if not d.startswith("fn:")
    ]
    if len(test.lines) == 1 and not test.panic:  # its lines below are the message's own
        message, used = _continued(first[2], detail)
        first, detail = (first[0], first[1], message), detail[used:]
    return Failure(
        kind=Kind.TEST,
        id=f"{test.package}.{test.name}" if test.package else test.name,
        file=first[0] if test.panic else relative(first[0], root),
        line=first[1],
        error_type="panic" if test.panic else "",
        message=test.panic or cut_inline(first[2]),
        frames=frames,
        detail=capped([cut_inline(d) for d in detail]),
    )


def _continued(message: str, below: list[str]) -> tuple[str, int]:
    """``t.Errorf("Expected \\n%s", got)`` prints ``Expected`` and the value on the lines below:
    a message of one word, or one that ends in a colon, goes on with them (at most 3)."""
    used = 0
    while used < min(len(below), 3) and (len(message.split()) < 2 or message.endswith(":")):
        message = f"{message} {below[used].strip()}".strip()
        used += 1
    return message, used


def _race_failure(test: _Test, root: str) -> Failure:
    """A test failed by the race detector: the report says which code raced, testing.go's
    ``race detected during execution of test`` line says nothing more."""
    message, frames, race_detail = go_race.summary(test.races)
    own = [f"{relative(f, root)}:{n}: {m}" for f, n, m in test.lines if go_race.DETECTED not in m]
    inner = frames[-1] if frames else Frame(file="")
    return Failure(
        kind=Kind.TEST,
        id=f"{test.package}.{test.name}" if test.package else test.name,
        file=inner.file,
        line=inner.line,
        error_type="DATA RACE",
        message=message,
        frames=frames,
        detail=capped([*race_detail, *own, *test.detail]),
    )


def _example_failure(test: _Test) -> Failure:
    """An example whose output is not its ``// Output:`` comment: the first line that differs."""
    cut = test.example.index("want:") if "want:" in test.example else len(test.example)
    got, want = test.example[1:cut], test.example[cut + 1 :]
    pairs = [(g, w) for g, w in zip(got, want, strict=False) if g != w]
    g, w = pairs[0] if pairs else (got[len(want)] if len(got) > len(want) else "", "")
    if not pairs and len(want) > len(got):
        w = want[len(got)]
    return Failure(
        kind=Kind.TEST,
        id=f"{test.package}.{test.name}" if test.package else test.name,
        error_type="output mismatch",
        message=f"got {g!r}, want {w!r}",
        detail=capped([*test.example[:cut][:7], *test.example[cut:][:7]]),
    )
