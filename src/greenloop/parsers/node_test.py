"""node --test: the TAP reporter (default when piped) and the spec reporter."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, relative
from greenloop.parsers.js_tests import js_frames, project_frame, split_error
from greenloop.parsers.model import Counts, Failure, Frame, Kind

_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_NOT_OK = re.compile(r"^(?P<indent> *)not ok \d+ - (?P<name>.*?)(?: # (?:SKIP|TODO)\b.*)?$")
_KEY = re.compile(r"^(?P<indent> *)(?P<key>\w+):(?: (?P<value>.*))?$")
_COUNT = re.compile(r"^(?:# |\u2139 )(?P<key>tests|pass|fail|cancelled|skipped|todo) +(?P<n>\d+)$")
# tape: flat TAP 13, a test is the `# <name>` comment above its assertions (`not ok 5 should be
# deeply equivalent`, no ` - `); its summary pads `# pass  171`
_TAPE_NOT_OK = re.compile(r"^not ok \d+ (?!- )(?P<name>.+?)(?: # (?:SKIP|TODO)\b.*)?$")
_TAPE_TEST = re.compile(r"^# (?!(?:tests|pass|fail|skip|todo|ok)\b|Subtest: )(?P<name>.+)$")
_TAPE_DETAIL = ("operator", "expected", "actual")
_SPEC_FAIL = re.compile(r"^(?P<indent> *)✖ (?P<name>.+?)(?: \([\d.]+m?s\))?$")
_SCRIPT = re.compile(r"(?:^/|\.[cm]?[jt]sx?$)")
_NO_SIGNAL = {"", "~", "null"}
# node's uncaught-exception block: `file:LINE`, the source line, a caret, then `XError: message`
_LOAD_ERROR = re.compile(
    r"^(?P<type>(?:[A-Z][\w.$]*)?(?:Error|Exception))(?: \[\w+\])?(?:: (?P<msg>.*))?$"
)
_SOURCE_AT = re.compile(r"^(?P<file>(?:file://)?/\S+?|\S+\.[cm]?[jt]sx?):(?P<line>\d+)$")
# thrown from node's own module loader (`node:internal/modules/cjs/loader:1210`, `throw err;`): a
# module not found (MODULE_NOT_FOUND, ERR_MODULE_NOT_FOUND); the project's place is in the stack,
# the `Require stack:` below the message (CJS) or its `imported from <file>` (ESM)
_INTERNAL_AT = re.compile(r"^node:internal/[\w/.-]+:\d+$")
_POINT_END = re.compile(r"^(?P<indent> *)(?:not )?ok \d+ ")
_TAP_ESCAPE = re.compile(r"\\([#\\])")
_TIME = re.compile(r"(?<!\s)\s+# time=[\d.]+m?s$")
_NESTED_NAME = re.compile(r"^\s*name: (?P<name>.+)$")
_NESTED_MESSAGE = re.compile(r"^\s*message: ")
_NODE_TRAILER = re.compile(r"^(?:# )?Node\.js v\d+\.\d+\.\d+$")
_REQUIRED_BY = re.compile(r"^- (?P<file>/\S+)$")
_IMPORTED_FROM = re.compile(r" imported from (?P<file>(?:file://)?/\S+?)\s*$")
# util.inspect's own properties after a stack: noise, not facts (actual/expected stay)
_INSPECT_NOISE = re.compile(r"^(?:generatedMessage: \w+,?|code: '\w+',?|operator: '\w+',?|[{}])$")


def parse_tap(lines: list[str], root: str) -> tuple[list[Failure], list[str]]:
    failures, killed = _parse_tap(lines, root)
    return with_load_errors(failures, lines, root) + parse_tape(lines, root), killed


def parse_tape(lines: list[str], root: str) -> list[Failure]:
    """tape's failing assertions, each named by its test (the ``# <name>`` line above it)."""
    failures: list[Failure] = []
    test = ""
    for i, line in enumerate(lines):
        if line.startswith("# ") and (t := _TAPE_TEST.match(line)):
            test = t["name"].strip()
            continue
        m = _TAPE_NOT_OK.match(line) if line.startswith("not ok ") else None
        if m is not None and len(failures) < MAX_FAILURES:
            fields = yaml_block(lines, i + 1, 4)  # tape indents its keys under `  ---`
            failures.append(_tape_failure(test or m["name"], m["name"], fields, root))
    return failures


def running_test(lines: list[str]) -> str:
    """The test a TAP run was inside when its output stopped: node:test's last ``# Subtest:``
    without its ``ok``/``not ok`` line, or tape's last ``# <test>`` heading."""
    open_tests: list[tuple[int, str]] = []
    tape = ""
    for line in lines:
        if "# Subtest: " in line and (s := _SUBTEST.match(line)):
            depth = len(s["indent"])
            open_tests = [t for t in open_tests if t[0] < depth] + [(depth, tap_name(s["name"]))]
        elif (m := _POINT_END.match(line)) is not None:
            depth = len(m["indent"])
            open_tests = [t for t in open_tests if t[0] < depth]
        elif line.startswith("# ") and (t := _TAPE_TEST.match(line)):
            tape = t["name"].strip()
    if open_tests:
        return " > ".join(name for _, name in open_tests)
    return tape


def _tape_failure(test: str, assertion: str, fields: dict[str, str], root: str) -> Failure:
    stack = [s for s in fields.get("stack", "").split("\n") if s.strip().startswith("at ")]
    frames = js_frames(stack, root)
    where = project_frame(frames) or _location(fields.get("at", ""), root)
    error_type, message = split_error(assertion)
    return Failure(
        kind=Kind.TEST,
        id=test,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message,
        frames=frames,
        detail=capped([f"{k}: {fields[k]}" for k in _TAPE_DETAIL if fields.get(k)]),
    )


def uncaught(lines: list[str], root: str) -> list[Failure]:
    """A process node ended with an uncaught exception (``Node.js v20…`` after it) and no test
    report: tape mid-test (the test is its last ``# <name>`` line), a plain ``node test.js``."""
    errors = load_errors(lines, root)[:1]
    if not errors:
        return []
    first = errors[0]
    said = f"{first.error_type}: {first.message}"
    said_at = (i for i, ln in enumerate(lines) if _unbracket(ln).startswith(said))
    before = lines[: next(said_at, len(lines))]
    tests = [t["name"] for ln in before if ln.startswith("# ") and (t := _TAPE_TEST.match(ln))]
    if tests and any(ln.startswith("TAP version") for ln in before):
        return [replace(first, id=tests[-1].strip())]
    place = f"{first.file}:{first.line}" if first.line else first.file
    return [replace(first, kind=Kind.CRASH, id=place)]


def _parse_tap(lines: list[str], root: str) -> tuple[list[Failure], list[str]]:
    failures: list[Failure] = []
    killed: list[str] = []
    parents: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if "# Subtest: " in line and (s := _SUBTEST.match(line)):
            depth = len(s["indent"])
            parents = [p for p in parents if p[0] < depth] + [(depth, tap_name(s["name"]))]
            continue
        m = _NOT_OK.match(line) if "not ok " in line else None
        if not m or len(failures) >= MAX_FAILURES:
            continue
        depth = len(m["indent"])
        # a test file that died is named by its path; vitest's TAP adds ` # time=1.00ms`
        own = relative(tap_name(_TIME.sub("", m["name"])), root)
        name = " > ".join([p[1] for p in parents if p[0] < depth] + [own])
        fields = yaml_block(lines, i + 1, _key_indent(lines, i + 2, depth + 2))
        if _unquote(fields.get("failureType", "")) == "subtestsFailed":
            continue
        signal = _unquote(fields.get("signal", ""))
        if signal not in _NO_SIGNAL:
            killed.append(f"{name} ({signal})")
        failures.append(_tap_failure(name, fields, signal, root))
    return failures, killed


def tap_name(text: str) -> str:
    """A TAP description as the test named it: TAP escapes ``#`` (``nGram(1) \\# unigram``)
    and the backslash itself."""
    if "\\" not in text:
        return text.strip()
    return _TAP_ESCAPE.sub(lambda m: m[1], text).strip()


def _key_indent(lines: list[str], at: int, default: int) -> int:
    """The indent of a YAML block's keys: node's TAP puts them 2 deeper than the point, vitest's 4."""
    line = lines[at] if at < len(lines) else ""
    return len(line) - len(line.lstrip(" ")) if _KEY.match(line) else default


def yaml_block(lines: list[str], start: int, indent: int) -> dict[str, str]:
    """The flat keys of a TAP YAML diagnostic block; block scalars joined with newlines."""
    if start >= len(lines) or lines[start].strip() != "---":
        return {}
    fields: dict[str, str] = {}
    key = ""
    for line in lines[start + 1 : start + 300]:
        if line.strip() == "...":
            break
        m = _KEY.match(line)
        if m and len(m["indent"]) == indent:
            key = m["key"]
            value = m["value"] or ""
            fields[key] = "" if value in ("|-", "|", ">-", ">") else value
        elif key:  # a quoted scalar may go on at column 0 (vitest: esbuild's message)
            cut = min(indent + 2, len(line) - len(line.lstrip(" ")))
            fields[key] = (fields[key] + "\n" + line[cut:]).lstrip("\n")
    return fields


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _tap_failure(name: str, fields: dict[str, str], signal: str, root: str) -> Failure:
    error_type, error = _tap_error(fields)
    frames = js_frames(["at " + s.strip() for s in fields.get("stack", "").split("\n")], root)
    where = project_frame(frames) or _location(fields.get("location") or fields.get("at", ""), root)
    return Failure(
        kind=Kind.CRASH if signal not in _NO_SIGNAL else Kind.TEST,
        id=name,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=signal if signal not in _NO_SIGNAL else error_type,
        message=error[0].rstrip(":").strip() if error else "",
        frames=frames,
        detail=capped([e for e in error[1:] if e.strip()]),
    )


def _tap_error(fields: dict[str, str]) -> tuple[str, list[str]]:
    """(type, message lines): node's ``error:`` scalar beside ``name:``, or vitest's ``error:``
    block of ``name: "…"`` and a quoted ``message:`` that may run over several lines."""
    error = fields.get("error", "").split("\n")
    nested = _NESTED_NAME.match(error[0])
    if nested is None:
        lines = [_unquote(e) for e in error]
        return _unquote(fields.get("name", "")) or ("Error" if lines[0] else ""), lines
    at = next((i for i, e in enumerate(error) if _NESTED_MESSAGE.match(e)), len(error))
    message = [e.strip() for e in error[at:]]
    if message:
        message[0] = message[0].split(":", 1)[1].strip()
        message = [_unquote(m).removeprefix('"').removesuffix('"') for m in message]
    return _unquote(nested["name"]), message or [""]


def _location(value: str, root: str) -> Frame | None:
    frames = js_frames(["at " + _unquote(value)], root)
    return frames[0] if frames else None


def parse_spec(lines: list[str], root: str) -> tuple[list[Failure], list[str]]:
    failures: list[Failure] = []
    killed: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("✖ failing tests:"):
            break  # the reporter repeats every failure below this line
        m = _SPEC_FAIL.match(line) if "✖ " in line else None
        if not m or len(failures) >= MAX_FAILURES:
            continue
        body = _indented_body(lines, i + 1, len(m["indent"]))
        if not body:
            continue  # a suite whose children failed
        name = relative(m["name"].strip(), root)
        failures.append(_spec_failure(name, body, root))
    failures = with_load_errors(failures, lines, root)
    # a file that died without an error of its own: a signal. Not when node reported an uncaught
    # error (its `Node.js v20.x` trailer): that process exited 1, its error unread or not
    uncaught = any(_NODE_TRAILER.match(line) for line in lines)
    for failure in failures:
        unexplained = failure.message.strip("'\"") == "test failed"
        if _SCRIPT.search(failure.id) and unexplained and not uncaught:
            killed.append(f"{failure.id} (test file did not finish)")
    return failures, killed


def _indented_body(lines: list[str], start: int, indent: int) -> list[str]:
    body: list[str] = []
    for line in lines[start : start + 300]:
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            break
        body.append(line)
    return [b for b in body if b.strip()]


def _spec_failure(name: str, body: list[str], root: str) -> Failure:
    frames = js_frames([b.rstrip(" {") for b in body], root)
    text = [b for b in body if not b.lstrip().startswith("at ")]
    error_type, message = split_error(_unquote(text[0])) if text else ("", "")
    where = project_frame(frames)
    return Failure(
        kind=Kind.TEST,
        id=name,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message.rstrip(":").strip(),
        frames=frames,
        detail=capped([t.strip() for t in text[1:] if not _INSPECT_NOISE.match(t.strip())]),
    )


def with_load_errors(failures: list[Failure], lines: list[str], root: str) -> list[Failure]:
    """A test file that failed to load ('test failed') gets the error node printed for it."""
    errors = load_errors(lines, root)
    out: list[Failure] = []
    for failure in failures:
        if errors and _SCRIPT.search(failure.id) and "test failed" in failure.message:
            error = next((e for e in errors if _mentions(e, failure.id)), errors[0])
            errors.remove(error)
            out.append(replace(error, id=failure.id))
        else:
            out.append(failure)
    return out


def _mentions(error: Failure, test_file: str) -> bool:
    return any(f.file == test_file for f in error.frames) or error.file == test_file


def load_errors(lines: list[str], root: str) -> list[Failure]:
    """Uncaught errors node printed while loading a test file (TAP prints them as ``# `` comments)."""
    found: list[Failure] = []
    for i, raw in enumerate(lines):
        line = _unbracket(_uncomment(raw))
        m = _LOAD_ERROR.match(line) if line[:1].isupper() and "E" in line else None
        head = [_uncomment(h) for h in lines[max(0, i - 5) : i]]
        where = next((w for h in reversed(head) if (w := _header(h))), None)
        if m is None or len(found) >= MAX_FAILURES:
            continue
        if where is None and not _not_found(line, lines[i + 1 : i + 2]):
            continue  # only node's own uncaught-exception block names file:line above the error
        said = _said_below(lines, i + 1) if line.endswith(":") else []
        required, stack = _required_and_stack(lines, i + 1 + len(said))
        frames = js_frames(stack, root)
        if where is None or _INTERNAL_AT.match(where.string):
            error = _loader_error(m, frames, required, root)
            found.append(replace(error, detail=capped([*filter(str.strip, said), *error.detail])))
            continue
        source = [h for h in head[head.index(where.string) + 1 :] if h.strip()]
        at = Frame(file=relative(where["file"], root), line=int(where["line"]))
        # thrown in a dependency (mocha's yargs rethrowing a require's error): the project's frame
        place = (project_frame(frames) if "node_modules" in at.file else None) or at
        found.append(
            Failure(
                kind=Kind.TEST,
                id=place.file,
                file=place.file,
                line=place.line,
                error_type=m["type"],
                message=(m["msg"] or "").strip(),
                frames=(*frames, at),  # its own place: innermost
                detail=tuple(source[:2]) if place is at else (),  # not a dependency's source
            )
        )
    return found


def _said_below(lines: list[str], start: int) -> list[str]:
    """What a message ending in a colon says on its next lines, up to the stack: node's
    ``The expression evaluated to a falsy value:``, a blank line, ``  assert(isEven(2))``."""
    said: list[str] = []
    for line in map(_uncomment, lines[start : start + 12]):
        if line.startswith("    at ") or (line.strip() and not line.startswith("  ")):
            break
        said.append(line.strip())
    return said


def _not_found(line: str, after: list[str]) -> bool:
    """A module not found that a runner printed itself (mocha's ESM file loader): no header, but
    node's ``Require stack:`` (CJS) or the ``ERR_MODULE_NOT_FOUND`` code (ESM)."""
    return "[ERR_MODULE_NOT_FOUND]" in line or [_uncomment(a) for a in after] == ["Require stack:"]


def _header(line: str) -> re.Match[str] | None:
    return _SOURCE_AT.match(line) or _INTERNAL_AT.match(line)


def _loader_error(
    m: re.Match[str], frames: tuple[Frame, ...], required: list[str], root: str
) -> Failure:
    """A module node's loader did not find: placed at the project's require/import of it."""
    message = (m["msg"] or "").strip()
    imported = _IMPORTED_FROM.search(message)
    by = [relative(r, root) for r in required if "node_modules" not in r]
    by = by or ([relative(imported["file"], root)] if imported else [])
    where = project_frame(frames)
    file = where.file if where else (by[0] if by else "")
    return Failure(
        kind=Kind.TEST,
        id=file,
        file=file,
        line=where.line if where else None,
        error_type=m["type"],
        message=message,
        frames=frames,
        detail=capped([f"required by {' <- '.join(by[:3])}"] if len(by) > 1 else []),
    )


def _unbracket(line: str) -> str:
    """node prints an error that has no stack as ``[ReferenceError: … is not defined]``."""
    return line[1:-1] if line.startswith("[") and line.endswith("]") else line


def _uncomment(line: str) -> str:
    return line[2:] if line.startswith("# ") else line


def _required_and_stack(lines: list[str], start: int) -> tuple[list[str], list[str]]:
    """The ``Require stack:`` files (the requiring one first) and the ``at`` lines after it."""
    required: list[str] = []
    stack: list[str] = []
    for line in map(_uncomment, lines[start : start + 60]):
        r = _REQUIRED_BY.match(line) if not stack else None
        if line == "Require stack:" and not required and not stack:
            continue
        if r:
            required.append(r["file"])
        elif line.startswith("    at "):
            stack.append(line)
        else:
            break
    return required, stack


def node_counts(lines: list[str]) -> Counts:
    values: dict[str, int] = {}
    for line in lines:
        m = _COUNT.match(line) if line[:2] in ("# ", "\u2139 ") else None
        if m:
            values[m["key"]] = int(m["n"])
    if "tests" not in values:
        return Counts()
    ok, not_ok = _parents(lines)  # node counts a test that ran subtests as one more test
    return Counts(
        collected=values["tests"] - ok - not_ok,
        passed=values.get("pass", 0) - ok,
        failed=values.get("fail", 0) - not_ok,
        skipped=values.get("skipped", 0) + values.get("todo", 0),
        summary_seen=values.get("cancelled", 0) == 0,
    )


_POINT = re.compile(r"^(?P<indent> *)(?P<ok>ok|not ok) \d+ - ")


def _parents(lines: list[str]) -> tuple[int, int]:
    """TAP points of tests that ran subtests (passed, failed): each follows its deeper children.

    The leaves are the tests, as JUnit's ``testcase`` elements and ``go test``'s leaf tests; a
    ``describe`` suite (``type: 'suite'``) is not in node's ``# tests`` count at all."""
    ok = not_ok = 0
    last = -1
    for i, line in enumerate(lines):
        m = _POINT.match(line) if "ok " in line else None
        if m is None:
            continue
        indent = len(m["indent"])
        suite = yaml_block(lines, i + 1, indent + 2).get("type") == "'suite'"  # not in `# tests`
        if indent < last and not suite:
            ok, not_ok = (ok + 1, not_ok) if m["ok"] == "ok" else (ok, not_ok + 1)
        last = indent
    return ok, not_ok
