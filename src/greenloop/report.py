"""Product output: check results and loop results as text, JSON, Markdown, GitHub annotations."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from greenloop.detect import Cascade
from greenloop.digest import Digest
from greenloop.parsers.model import Failure
from greenloop.verify import CheckResult, StageRun

VERDICT_WORDS = {
    "green": "GREEN",
    "failed": "FAILED",
    "env_failure": "ENVIRONMENT FAILURE",
    "timeout": "TIMED OUT",
    "killed": "KILLED",
    "untrusted": "UNTRUSTED GREEN",
}


def render_check(result: CheckResult, digest: Digest, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(check_json(result, digest), indent=2) + "\n"
    if fmt == "github":
        return render_github(result, digest)
    return render_check_text(result, digest)


def render_check_text(result: CheckResult, digest: Digest) -> str:
    lines = [_stage_line(r) for r in result.runs]
    lines += [f"  -    {name:<8} not run (an earlier stage failed)" for name in result.not_run]
    verdict = VERDICT_WORDS[result.verdict.value]
    lines.append(f"greenloop: {verdict} in {result.duration_s:.1f} s (exit {result.exit_code})")
    return "\n".join(lines) + "\n\n" + digest.text + "\n"


def _stage_line(run: StageRun) -> str:
    res = run.result
    mark = "ok" if run.verdict.passed else run.verdict.value
    extra = f", {res.dropped_bytes} bytes of output dropped" if res.dropped_bytes else ""
    return f"  {mark:<4} {run.stage.name:<8} {run.stage.display}  ({res.duration_s:.1f} s, exit {res.exit_code}{extra})"


def check_json(result: CheckResult, digest: Digest) -> dict[str, Any]:
    failing = result.failing
    return {
        "verdict": result.verdict.value,
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "source": result.cascade.source,
        "stages": [_stage_json(r) for r in result.runs],
        "not_run": list(result.not_run),
        "counts": asdict(failing.parsed.counts) if failing else None,
        "failures": [failure_json(f) for f in failing.parsed.failures] if failing else [],
        "signature": digest.signature,
        "digest": digest.text,
        "digest_tokens": digest.tokens,
        "for_agent": digest.for_agent,
        "rewritten": list(result.rewritten),
    }


def _stage_json(run: StageRun) -> dict[str, Any]:
    res = run.result
    return {
        "name": run.stage.name,
        "command": run.stage.display,
        "why": run.stage.why,
        "verdict": run.verdict.value,
        "reasons": list(run.classification.reasons),
        "exit_code": res.exit_code,
        "duration_s": round(res.duration_s, 3),
        "timed_out": res.timed_out,
        "signal": res.signal,
        "bytes_dropped": res.dropped_bytes,
        "parser": run.parsed.tool,
        "killed_inside": list(run.parsed.killed),
        "rewritten": list(run.rewritten),
    }


def failure_json(f: Failure) -> dict[str, Any]:
    data = asdict(f)
    data["kind"] = f.kind.value
    return data


def render_github(result: CheckResult, digest: Digest) -> str:
    """``::error file=…,line=…::`` workflow commands, then the digest."""
    lines = []
    failing = result.failing
    for f in failing.parsed.failures[:50] if failing else ():
        level = "warning" if f.severity == "warning" else "error"
        props = [f"file={_escape_prop(f.file)}"] if f.file else []
        if f.line:
            props.append(f"line={f.line}")
        if f.column:
            props.append(f"col={f.column}")
        title = _escape_prop(f.id)
        message = _escape_data(": ".join(p for p in (f.error_type, f.message) if p) or f.id)
        lines.append(f"::{level} {','.join([*props, f'title={title}'])}::{message}")
    if failing and not lines:
        lines.append(f"::error title=greenloop::{_escape_data(digest.text.splitlines()[0])}")
    return "\n".join([*lines, render_check_text(result, digest)])


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_cascade(cascade: Cascade, fmt: str) -> str:
    if fmt == "json":
        stages = [
            {"name": s.name, "command": s.display, "why": s.why, "fix": s.fix}
            for s in cascade.stages
        ]
        return json.dumps({"source": cascade.source, "stages": stages}, indent=2) + "\n"
    lines = [f"Verifier ({cascade.source}), fastest first:"]
    for i, s in enumerate(cascade.stages, 1):
        fixer = " [fixer: runs twice]" if s.fix else ""
        lines.append(f"  {i}. {s.name:<8} {s.display}{fixer}\n     why: {s.why}")
    return "\n".join(lines) + "\n"


# ---- GitHub Actions step summary ($GITHUB_STEP_SUMMARY) ----

VERDICT_ICONS = {
    "green": "✅",
    "failed": "❌",
    "env_failure": "⚠️",
    "timeout": "⏱️",
    "killed": "⛔",
    "untrusted": "❓",
}


def render_check_markdown(result: CheckResult, digest: Digest) -> str:
    """The check as GitHub-flavoured Markdown: verdict, one table row per stage, the digest."""
    verdict = result.verdict.value
    lines = [
        f"### {VERDICT_ICONS[verdict]} greenloop check: {VERDICT_WORDS[verdict]}",
        "",
        f"{result.duration_s:.1f} s, exit {result.exit_code}, verifier from {result.cascade.source}.",
        "",
        "| Stage | Command | Result | Time |",
        "| --- | --- | --- | --- |",
    ]
    for run in result.runs:
        res = run.result
        outcome = "ok" if run.verdict.passed else f"{run.verdict.value} (exit {res.exit_code})"
        command = _md_cell(run.stage.display)
        lines.append(f"| {run.stage.name} | `{command}` | {outcome} | {res.duration_s:.1f} s |")
    lines += [f"| {name} | | not run | |" for name in result.not_run]
    return "\n".join([*lines, "", _md_fence(digest.text), ""]) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def _md_fence(text: str) -> str:
    """A fenced block whose fence is longer than any backtick run inside the text."""
    import re

    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def append_step_summary(markdown: str, path: str | None) -> bool:
    """Append to the file GitHub Actions names in $GITHUB_STEP_SUMMARY (None: not in Actions)."""
    import logging

    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown)
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot write $GITHUB_STEP_SUMMARY %s: %s", path, exc)
        return False
    return True
