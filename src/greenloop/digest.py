"""Failures + context -> Digest: the bounded message that becomes the agent's next prompt.

Shape (seed 000 step 3): status header; the first failure with its last project frame and
assertion detail; the other failures clustered by file; the anchor to the last edit; progress and
repeat notes. No pleas: the failure is the prompt.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from greenloop.anchor import EditAnchor, parse_diff
from greenloop.classify import Verdict, runs_tests
from greenloop.parsers.model import Failure, Frame, Kind
from greenloop.redact import redact
from greenloop.verify import CheckResult, StageRun

DEFAULT_BUDGET = 2000
CHARS_PER_TOKEN = 3  # chars/4 under-counts tool output by up to 27 % (issue 3)
MAX_GROUPS = 5
PER_GROUP = 4
TAIL_LINES = 40
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}

_NORMALIZERS = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s'\":]*"), "<tmp>"),
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<date>",
    ),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|µs|us|ns)\b"), "<time>"),
    (re.compile(r"\b(?:pid|PID|process)[ =:]*\d+"), "pid <n>"),
    (re.compile(r"\bgw\d+\b"), "gw?"),
)
_NOT_PROJECT = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|\.venv|venv|node_modules|\.tox|\.nox|\.cargo|rustc)/"
    r"|^<|^/usr/lib/|^/usr/local/lib/|/lib/python\d|/_pytest/|/pluggy/|^node:|^internal/"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """What the loop knows from earlier iterations (all optional)."""

    previous_failing: tuple[str, ...] | None = None
    """Failure ids of the previous iteration, for progress framing (OP-7)."""
    times_seen: int = 0
    """How many times this same signature has appeared, this one included (case 4)."""
    earlier_files: tuple[str, ...] = ()
    """Files earlier attempts changed."""
    subset: bool = False
    """The run covered only the previously failing tests."""
    reverted: str = ""
    """Why the last edit was rolled back, if it was."""
    flaky: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Digest:
    text: str
    signature: str
    """Hash of the normalized failure signatures: equal means 'the same error'."""
    signatures: tuple[str, ...]
    failing_ids: tuple[str, ...]
    tokens: int
    for_agent: bool
    """False for environment failures: those are for the human, never the model."""
    parse_complete: bool = True


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def build_digest(
    result: CheckResult,
    *,
    root: Path | str = ".",
    budget: int = DEFAULT_BUDGET,
    diff: str | None = None,
    history: History | None = None,
) -> Digest:
    history = history or History()
    run = result.failing
    failures = _primary(run) if run else ()
    anchor = parse_diff(diff) if diff else None
    sections = _sections(result, run, failures, anchor, history, Path(root))
    text = redact(fit_budget(sections, budget * CHARS_PER_TOKEN))
    sigs = signatures_of(result, root)
    return Digest(
        text=text,
        signature=hashlib.sha256("\n".join(sigs).encode()).hexdigest()[:16] if sigs else "",
        signatures=sigs,
        failing_ids=tuple(dict.fromkeys(f.id for f in failures)),
        tokens=estimate_tokens(text),
        for_agent=result.verdict is not Verdict.ENV_FAILURE,
        parse_complete=not (run and run.verdict is Verdict.FAILED and not failures),
    )


def signatures_of(result: CheckResult, root: Path | str = ".") -> tuple[str, ...]:
    """The normalized failure signatures of a result: equal sets mean "the same error"."""
    run = result.failing
    if run is None:
        return ()
    sigs = tuple(sorted({failure_signature(f) for f in _primary(run)}))
    return sigs or (normalize(f"{run.stage.name}:{run.verdict}:{_last_lines(run, 3)}"),)


def normalize(text: str) -> str:
    for pattern, repl in _NORMALIZERS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def failure_signature(f: Failure) -> str:
    return normalize(f"{f.id} | {f.error_type} | {f.message}")


def _primary(run: StageRun) -> tuple[Failure, ...]:
    errors = tuple(f for f in run.parsed.failures if f.severity == "error")
    return errors or tuple(run.parsed.failures) if run.verdict is not Verdict.GREEN else ()


# ---- sections, most important first; fit_budget shortens from the end ----


@dataclass(frozen=True, slots=True)
class Section:
    text: str
    keep: bool = False
    """Never dropped (header, first failure); only its long blocks are shortened."""


def _sections(
    result: CheckResult,
    run: StageRun | None,
    failures: tuple[Failure, ...],
    anchor: EditAnchor | None,
    history: History,
    root: Path,
) -> list[Section]:
    out = [Section(header(result, run, history), keep=True)]
    if run is None:
        return out
    if run.verdict is Verdict.ENV_FAILURE:
        return [*out, Section(_env_advice(run, root), keep=True), Section(_tail(run))]
    if history.reverted:
        out.append(Section(f"Your last edit was reverted: {history.reverted}", keep=True))
    if failures:
        first = failures[0]
        out.append(Section(render_first(first, run, root, anchor), keep=True))
        progress = _progress(failures, history)
        if progress:
            out.append(Section(progress, keep=True))
        if history.times_seen >= 2:
            out.append(Section(_repeat_note(history), keep=True))
        if anchor:
            out.append(Section(anchor.describe(first_location(first, root)), keep=True))
        common = shared_location(failures, root)
        if common:
            out.append(Section(common, keep=True))
        if len(failures) > 1:
            out.append(Section(render_others(failures[1:], root)))
        warned = len(run.parsed.failures) - len(failures)
        if warned > 0:
            out.append(Section(f"(+{warned} warning(s) not shown: errors first)"))
    else:
        if anchor:
            out.append(Section(anchor.describe(None), keep=True))
        out.append(Section(_tail(run), keep=run.verdict is not Verdict.GREEN))
    return out


def header(result: CheckResult, run: StageRun | None, history: History) -> str:
    if run is None:
        stages = ", ".join(r.stage.name for r in result.runs)
        soft = any(r.classification.soft for r in result.runs)
        note = " with warnings (soft success)" if soft else ""
        return f"The verifier passed{note} ({stages}, {result.duration_s:.1f} s)."
    res = run.result
    where = f"`{run.stage.display}`, stage {run.stage.name}, {res.duration_s:.1f} s"
    subset = " on the previously failing tests only" if history.subset else ""
    verdict = run.verdict
    if verdict is Verdict.TIMEOUT:
        return (
            f"The verifier timed out after {res.duration_s:.0f} s ({where}){subset} and was killed: "
            "likely an infinite loop or a hang in the code under test."
        )
    if verdict is Verdict.KILLED:
        reason = "; ".join(run.classification.reasons)
        return f"The verifier was killed ({reason}; {where}){subset}: coverage is incomplete, nothing here counts as fixed."
    if verdict is Verdict.ENV_FAILURE:
        return (
            f"ENVIRONMENT FAILURE, not a code problem ({where}): "
            f"{'; '.join(run.classification.reasons)}. Not sent to the agent."
        )
    if verdict is Verdict.UNTRUSTED:
        return f"The verifier exited {res.exit_code} but the result can't be trusted ({where}): {'; '.join(run.classification.reasons)}."
    return f"The verifier failed (exit {res.exit_code}, {where}){subset}: {_counts_line(run)}."


def _counts_line(run: StageRun) -> str:
    c = run.parsed.counts
    if c.summary_seen and (c.ran or c.skipped) and runs_tests(run.parsed):
        parts = [
            f"{n} {word}"
            for n, word in (
                (c.failed, "failed"),
                (c.errors, "errors"),
                (c.passed, "passed"),
                (c.skipped, "skipped"),
            )
            if n
        ]
        return ", ".join(parts) or "nothing ran"
    errors = [f for f in run.parsed.failures if f.severity == "error"]
    if errors:
        files = len({f.file for f in errors if f.file})
        noun = "problem" if len(errors) == 1 else "problems"
        return f"{len(errors)} {noun}" + (f" in {files} file{'s' * (files != 1)}" if files else "")
    if run.parsed.counts.summary_seen:
        return "the summary reports no failures"
    return "the output could not be parsed in full; its relevant tail follows"


def project_frame(f: Failure, root: Path) -> Frame | None:
    """The deepest frame inside the repository and outside libraries and the test framework."""
    for frame in reversed(f.frames):
        if _is_project(frame.file, root):
            return frame
    return None


def _is_project(path: str, root: Path) -> bool:
    if not path or _NOT_PROJECT.search(path):
        return False
    if path.startswith("/"):
        return path.startswith(str(root) + "/")
    return True


def relative(path: str, root: Path) -> str:
    prefix = str(root) + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def first_location(f: Failure, root: Path) -> tuple[str, int | None] | None:
    frame = project_frame(f, root)
    if frame:
        return relative(frame.file, root), frame.line
    return (relative(f.file, root), f.line) if f.file else None


def render_first(f: Failure, run: StageRun, root: Path, anchor: EditAnchor | None) -> str:
    label = "FIRST FAILING TEST" if f.kind is Kind.TEST else "FIRST ERROR"
    lines = [f"{label}: {f.id}"]
    what = ": ".join(p for p in (f.error_type, f.message) if p)
    if f.code and f.code not in what and f.code not in f.id:
        what = f"[{f.code}] {what}"
    if what:
        lines.append(f"  {what}")
    frame = project_frame(f, root)
    if frame:
        loc = (
            f"{relative(frame.file, root)}:{frame.line}"
            if frame.line
            else relative(frame.file, root)
        )
        fn = f" in {frame.function}" if frame.function else ""
        lines.append(f"  at {loc}{fn}")
        if frame.source:
            lines.append(f"      {frame.source.strip()}")
    elif f.file and f.kind is not Kind.TEST and relative(f.file, root) not in f.id:
        col = f":{f.column}" if f.column else ""
        lines.append(f"  at {relative(f.file, root)}:{f.line or '?'}{col}")
    if f.detail:
        lines += ["  " + d for d in f.detail]
    return "\n".join(lines)


def shared_location(failures: tuple[Failure, ...], root: Path) -> str:
    """When most failures end in the same project line, say so: one root cause is likely."""
    if len(failures) < 3:
        return ""
    spots: dict[str, int] = {}
    for f in failures:
        frame = project_frame(f, root)
        if frame is not None and frame.line:
            key = f"{relative(frame.file, root)}:{frame.line}" + (
                f" in {frame.function}" if frame.function else ""
            )
            spots[key] = spots.get(key, 0) + 1
    if not spots:
        return ""
    where, count = max(spots.items(), key=lambda kv: kv[1])
    if count < 3 or count * 2 < len(failures):
        return ""
    return f"{count} of {len(failures)} failures end at {where}: one root cause is likely."


def render_others(others: Sequence[Failure], root: Path) -> str:
    groups: dict[str, list[Failure]] = {}
    for f in others:
        groups.setdefault(_group_key(f), []).append(f)
    title = "OTHER FAILURES" if others[0].kind is Kind.TEST else "OTHER PROBLEMS"
    lines = [f"{title} ({len(others)}):"]
    for key, items in list(groups.items())[:MAX_GROUPS]:
        lines.append(f"  {key}:")
        lines += [f"    {_one_line(f, root)}" for f in items[:PER_GROUP]]
        if len(items) > PER_GROUP:
            kinds = {f.error_type for f in items[PER_GROUP:] if f.error_type}
            same = f", all {kinds.pop()}" if len(kinds) == 1 else ""
            lines.append(f"    +{len(items) - PER_GROUP} more here{same}")
    hidden = list(groups.items())[MAX_GROUPS:]
    if hidden:
        count = sum(len(v) for _, v in hidden)
        lines.append(f"  +{count} more in {len(hidden)} other file(s)")
    return "\n".join(lines)


def _group_key(f: Failure) -> str:
    if f.kind is Kind.TEST and "::" in f.id:
        return f.id.split("::", 1)[0]
    return f.file or "(no file)"


def _one_line(f: Failure, root: Path) -> str:
    name = f.id.split("::", 1)[1] if f.kind is Kind.TEST and "::" in f.id else f.id
    if f.kind is not Kind.TEST and f.line:
        name = f"line {f.line}" + (f":{f.column}" if f.column else "")
    what = ": ".join(p for p in (f.error_type, f.message) if p)
    code = f" [{f.code}]" if f.code and f.code not in what else ""
    frame = project_frame(f, root) if f.kind is Kind.TEST else None
    at = f" (at {relative(frame.file, root)}:{frame.line})" if frame and frame.line else ""
    line = f"{name}{code} — {what}" if what else name
    return line[: 240 - len(at)] + at


def _progress(failures: tuple[Failure, ...], history: History) -> str:
    if history.previous_failing is None:
        return f"Flaky (ignore): {', '.join(history.flaky)}." if history.flaky else ""
    before, now = set(history.previous_failing), {f.id for f in failures}
    fixed, still, new = before - now, before & now, now - before
    parts = []
    if before:
        parts.append(
            f"{len(fixed)} of {len(before)} previously failing now pass; {len(still)} still fail."
        )
    if new:
        names = ", ".join(sorted(new)[:5]) + (f" (+{len(new) - 5} more)" if len(new) > 5 else "")
        parts.append(f"New failures: {names}.")
    if history.flaky:
        parts.append(f"Flaky (ignore): {', '.join(history.flaky)}.")
    return "PROGRESS: " + " ".join(parts) if parts else ""


def _repeat_note(history: History) -> str:
    n = history.times_seen
    nth = _ORDINAL.get(n, f"{n}th")
    files = ", ".join(history.earlier_files) or "no files"
    return f"This is the {nth} time this error appears; earlier attempts changed {files}. A different hypothesis is needed."


# Import names whose pip distribution is called something else.
PIP_NAMES = {
    "yaml": "PyYAML", "PIL": "Pillow", "cv2": "opencv-python", "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "jwt": "PyJWT", "dotenv": "python-dotenv",
    "Crypto": "pycryptodome", "attr": "attrs", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
}  # fmt: skip
_FRAME_REF = re.compile(r'^(\S+\.py):(\d+): in |File "([^"]+\.py)", line (\d+)', re.M)


def _env_advice(run: StageRun, root: Path) -> str:
    c = run.classification
    lines = [f"What failed: {c.evidence or '; '.join(c.reasons)}"]
    if c.missing_module:
        top = c.missing_module.split(".")[0]
        needer = _importer(run.result.merged, c.missing_module, root)
        if needer:
            lines.append(f"Needed by: {needer}")
        lines.append(
            f"Install it where the verifier runs (`pip install {PIP_NAMES.get(top, top)}`), then re-run."
        )
    elif run.result.exit_code == 127:
        lines.append(f"Install `{run.stage.argv[0]}` or fix the command, then re-run.")
    else:
        lines.append("Fix the environment, then re-run.")
    lines.append("The agent has not been asked to change code for this.")
    return "\n".join(lines)


def _importer(text: str, module: str, root: Path) -> str:
    """The project file whose import failed: the last project frame before the error."""
    end = text.find(f"No module named '{module}'")
    refs = [m for m in _FRAME_REF.finditer(text, 0, end if end >= 0 else len(text))]
    for m in reversed(refs):
        path, line = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if _is_project(path, root):
            return f"{relative(path, root)}:{line}"
    return ""


def _tail(run: StageRun) -> str:
    body = run.result.merged.strip("\n")
    if not body:
        return "(the command printed nothing)"
    lines = body.splitlines()
    shown = lines[-TAIL_LINES:]
    cut = f"[... {len(lines) - len(shown)} earlier lines ...]\n" if len(lines) > len(shown) else ""
    return "OUTPUT (tail):\n" + cut + "\n".join(shown)


def _last_lines(run: StageRun, n: int) -> str:
    return "\n".join(run.result.merged.strip().splitlines()[-n:])


def fit_budget(sections: list[Section], max_chars: int) -> str:
    """Drop optional sections from the end, then shorten long blocks in the middle."""
    kept = list(sections)
    while _size(kept) > max_chars and any(not s.keep for s in kept):
        i = max(i for i, s in enumerate(kept) if not s.keep)
        excess = _size(kept) - max_chars
        shortened = shorten(kept[i].text, len(kept[i].text) - excess)
        if shortened:
            kept[i] = Section(shortened)
        else:
            kept.pop(i)
    while _size(kept) > max_chars and len(kept) > 1:
        i = max(range(1, len(kept)), key=lambda j: len(kept[j].text))
        excess = _size(kept) - max_chars
        shortened = shorten(kept[i].text, max(len(kept[i].text) - excess, 0))
        if shortened:
            kept[i] = Section(shortened, keep=True)
        else:
            kept.pop(i)
    text = "\n\n".join(s.text for s in kept)
    return text if len(text) <= max_chars else shorten(text, max_chars) or text[:max_chars]


def _size(sections: list[Section]) -> int:
    return sum(len(s.text) for s in sections) + 2 * max(0, len(sections) - 1)


def shorten(text: str, max_chars: int) -> str:
    """Keep the top and the bottom lines, with a count of what was elided in between."""
    if len(text) <= max_chars:
        return text
    if max_chars < 80:
        return ""
    lines = [line[: max_chars // 2] for line in text.splitlines()]
    head: list[str] = []
    tail: list[str] = []
    room = max_chars - 40
    lo, hi, take_head = 0, len(lines) - 1, True
    while lo <= hi:
        line = lines[lo] if take_head else lines[hi]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if take_head:
            head.append(line)
            lo += 1
        else:
            tail.append(line)
            hi -= 1
        take_head = not take_head
    elided = hi - lo + 1
    if elided <= 0:
        return "\n".join(lines)[:max_chars]
    return "\n".join([*head, f"[... {elided} lines elided ...]", *reversed(tail)])
