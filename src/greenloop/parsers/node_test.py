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
    r"^(?P<type>[A-Z][\w.$]*(?:Error|Exception))(?: \[\w+\])?(?:: (?P<msg>.*))?$"
)
_SOURCE_AT = re.compile(r"^(?P<file>(?:file://)?/\S+?|\S+\.[cm]?[jt]sx?):(?P<line>\d+)$")
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
    before = lines[: next((i for i, ln in enumerate(lines) if ln.startswith(said)), len(lines))]
    tests = [t["name"] for ln in before if ln.startswith("# ") and (t := _TAPE_TEST.match(ln))]
    if tests and any(ln.startswith("TAP version") for ln in before):
        return [replace(first, id=tests[-1].strip())]
    return [replace(first, kind=Kind.CRASH, id=f"{first.file}:{first.line}")]


def _parse_tap(lines: list[str], root: str) -> tuple[list[Failure], list[str]]:
    failures: list[Failure] = []
    killed: list[str] = []
    parents: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if "# Subtest: " in line and (s := _SUBTEST.match(line)):
            depth = len(s["indent"])
            parents = [p for p in parents if p[0] < depth] + [(depth, s["name"].strip())]
            continue
        m = _NOT_OK.match(line) if "not ok " in line else None
        if not m or len(failures) >= MAX_FAILURES:
            continue
        depth = len(m["indent"])
        own = relative(m["name"].strip(), root)  # a test file that died is named by its path
        name = " > ".join([p[1] for p in parents if p[0] < depth] + [own])
        fields = yaml_block(lines, i + 1, depth + 2)
        if _unquote(fields.get("failureType", "")) == "subtestsFailed":
            continue
        signal = _unquote(fields.get("signal", ""))
        if signal not in _NO_SIGNAL:
            killed.append(f"{name} ({signal})")
        failures.append(_tap_failure(name, fields, signal, root))
    return failures, killed


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
        elif key:
            fields[key] = (fields[key] + "\n" + line[indent + 2 :]).lstrip("\n")
    return fields


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _tap_failure(name: str, fields: dict[str, str], signal: str, root: str) -> Failure:
    error = [_unquote(e) for e in fields.get("error", "").split("\n")]
    frames = js_frames(["at " + s.strip() for s in fields.get("stack", "").split("\n")], root)
    where = project_frame(frames) or _location(fields.get("location", ""), root)
    error_type = _unquote(fields.get("name", "")) or ("Error" if error[0] else "")
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
    for failure in failures:  # a file that died without an error of its own: a signal
        if _SCRIPT.search(failure.id) and failure.message.strip("'\"") == "test failed":
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
        line = _uncomment(raw)
        m = _LOAD_ERROR.match(line) if line[:1].isupper() and "E" in line else None
        head = [_uncomment(h) for h in lines[max(0, i - 5) : i]]
        where = next((w for h in reversed(head) if (w := _SOURCE_AT.match(h))), None)
        if m is None or where is None or len(found) >= MAX_FAILURES:
            continue  # only node's own uncaught-exception block names file:line above the error
        source = [h for h in head[head.index(where.string) + 1 :] if h.strip()]
        at = Frame(file=relative(where["file"], root), line=int(where["line"]))
        found.append(
            Failure(
                kind=Kind.TEST,
                id=at.file,
                file=at.file,
                line=at.line,
                error_type=m["type"],
                message=(m["msg"] or "").strip(),
                frames=(*js_frames(_stack(lines, i + 1), root), at),  # its own place: innermost
                detail=tuple(source[:2]),
            )
        )
    return found


def _uncomment(line: str) -> str:
    return line[2:] if line.startswith("# ") else line


def _stack(lines: list[str], start: int) -> list[str]:
    stack: list[str] = []
    for line in map(_uncomment, lines[start : start + 40]):
        if not line.startswith("    at "):
            break
        stack.append(line)
    return stack


def node_counts(lines: list[str]) -> Counts:
    values: dict[str, int] = {}
    for line in lines:
        m = _COUNT.match(line) if line[:2] in ("# ", "\u2139 ") else None
        if m:
            values[m["key"]] = int(m["n"])
    if "tests" not in values:
        return Counts()
    return Counts(
        collected=values["tests"],
        passed=values.get("pass", 0),
        failed=values.get("fail", 0),
        skipped=values.get("skipped", 0) + values.get("todo", 0),
        summary_seen=values.get("cancelled", 0) == 0,
    )
