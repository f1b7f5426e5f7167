"""Product output: check results and loop results as text, JSON, Markdown, GitHub annotations."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TextIO

from greenloop.detect.stages import Cascade
from greenloop.digest import Digest
from greenloop.parsers.model import Failure
from greenloop.processes.orphans import describe
from greenloop.report.wording import UNCOUNTED, verifier_state
from greenloop.verify.cache import Reuse
from greenloop.verify.cascade import CheckResult, StageRun

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


def render_reuse(reuse: Reuse, fmt: str) -> str:
    """``check --cache`` when the tree's green run was reused instead of run again."""
    if fmt == "json":
        data = {"verdict": "green", "exit_code": 0, "reused": reuse.as_json()}
        return json.dumps(data | {"digest": reuse.describe()}, indent=2) + "\n"
    return f"greenloop: {reuse.describe()}\n"


def render_check_text(result: CheckResult, digest: Digest) -> str:
    # the failing stage's command is in the digest's first line: not printed twice (issue 11)
    lines = [_stage_line(r, show_command=r is not result.failing) for r in result.runs]
    lines += [f"  -    {name:<8} not run (an earlier stage failed)" for name in result.not_run]
    if result.rewritten:
        lines.append(f"  the fixer rewrote: {', '.join(result.rewritten)} (left modified)")
    lines += [
        f"  {r.stage.name}: {describe(r.result.escaped)}" for r in result.runs if r.result.escaped
    ]
    verdict = verdict_word(result)
    lines.append(f"greenloop: {verdict} in {result.duration_s:.1f} s (exit {result.exit_code})")
    return "\n".join(lines) + "\n\n" + digest.text + "\n"


def verdict_word(result: CheckResult) -> str:
    """``NO TESTS RAN`` rather than ``UNTRUSTED GREEN`` when that is the whole story."""
    failing = result.failing
    reasons = failing.classification.reasons if failing else ()
    if result.flaky_only:
        return "ONLY KNOWN-FLAKY TESTS FAILED"
    if result.verdict.value == "untrusted" and any("no tests" in r for r in reasons):
        return "NO TESTS RAN"
    return VERDICT_WORDS[result.verdict.value]


def _stage_line(run: StageRun, *, show_command: bool = True) -> str:
    res = run.result
    mark = "ok" if run.verdict.passed else run.verdict.value
    extra = f", {res.dropped_bytes} bytes of output dropped" if res.dropped_bytes else ""
    command = f" {run.stage.display} " if show_command else ""
    return f"  {mark:<4} {run.stage.name:<8}{command} ({res.duration_s:.1f} s, exit {res.exit_code}{extra})"


def _green_counts(result: CheckResult) -> dict[str, Any] | None:
    """What the last stage that ran tests counted: a green's evidence (issue 10)."""
    ran = [r.parsed.counts for r in result.runs if r.parsed.counts.ran]
    return asdict(ran[-1]) if ran else None


def check_json(result: CheckResult, digest: Digest) -> dict[str, Any]:
    failing = result.failing
    return {
        "verdict": result.verdict.value,
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "source": result.cascade.source,
        "stages": [_stage_json(r) for r in result.runs],
        "not_run": list(result.not_run),
        "counts": asdict(failing.parsed.counts) if failing else _green_counts(result),
        "failures": [
            failure_json(f, _where(digest, i, f)) for i, f in enumerate(failing.parsed.failures)
        ]
        if failing
        else [],
        "signature": digest.signature,
        "digest": digest.text,
        "digest_tokens": digest.tokens,
        "for_agent": digest.for_agent,
        "rewritten": list(result.rewritten),
        "known_flaky": list(result.known_flaky),
        "flaky_only": result.flaky_only,
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
        "escaped": [{"pid": e.pid, "name": e.name} for e in res.escaped],
        "env_removed": list(run.env_removed),
    }


def failure_json(f: Failure, where: Location | None = None) -> dict[str, Any]:
    """The failure; ``file``/``line``/``column`` where the text digest places it (``where``), its
    ``frames`` as the tool printed them."""
    data = asdict(f)
    data["kind"] = f.kind.value
    if where is not None:
        data["file"], data["line"], data["column"] = where
    return data


Location = tuple[str, int | None, int | None]


def _where(digest: Digest, i: int, f: Failure) -> Location | None:
    """The repository place the digest chose for the failing stage's i-th failure (the deepest
    project frame, not ``unittest/case.py``); the failure's own place when the digest has none."""
    if i < len(digest.locations):
        return digest.locations[i]
    return (f.file, f.line, f.column) if f.file else None


def render_github(result: CheckResult, digest: Digest) -> str:
    """``::error file=…,line=…::`` workflow commands, then the digest."""
    lines = []
    failing = result.failing
    for i, f in enumerate(failing.parsed.failures[:50] if failing else ()):
        level = "warning" if f.severity == "warning" else "error"
        file, line, column = _where(digest, i, f) or ("", None, None)
        props = [f"file={_escape_prop(file)}"] if file else []
        if file and line:
            props.append(f"line={line}")
        if file and column:
            props.append(f"col={column}")
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
            {
                "name": s.name,
                "command": s.display,
                "why": s.why,
                "fix": s.fix,
                "origin": s.origin,
                "cwd": s.cwd or ".",
            }
            for s in cascade.stages
        ]
        skipped = [
            {"origin": k.origin, "command": k.command, "reason": k.reason} for k in cascade.skipped
        ]
        shape: dict[str, Any] = {"source": cascade.source, "stages": stages, "skipped": skipped}
        if cascade.workspace is not None:  # issue 29: a monorepo's packages
            from greenloop.detect.packages import workspace_json

            shape["workspace"] = workspace_json(cascade.workspace)
        return json.dumps(shape, indent=2) + "\n"
    lines = [f"Verifier ({cascade.source}), fastest first:"]
    for i, s in enumerate(cascade.stages, 1):
        fixer = " [fixer: runs twice]" if s.fix else ""
        lines.append(f"  {i}. {s.name:<8} {s.display}{fixer}\n     why: {s.why}")
    if cascade.workspace is not None:
        from greenloop.detect.packages import workspace_text

        lines.append(workspace_text(cascade.workspace))
    if cascade.skipped:
        lines.append("CI steps not taken as stages:")
        lines += [f"  {k.origin}  {k.command[:80]}\n     why: {k.reason}" for k in cascade.skipped]
    return "\n".join(lines) + "\n"


# ---- loop results: one JSON shape (report.json), rendered as text or Markdown ----


def loop_json(result: Any) -> dict[str, Any]:
    """The run record's report.json (fields are a contract: see the README)."""
    return {
        "run_id": result.run_id,
        "result": result.result.value,
        "exit_code": result.exit_code,
        "reason": result.reason,
        "iterations": result.iterations,
        "max_iters": result.max_iters,
        "branch": result.branch,
        "initial_sha": result.initial_sha,
        "final_sha": result.final_sha,
        "attempt_ref": result.attempt_ref,
        "duration_s": round(result.duration_s, 3),
        "agent": result.agent,
        "verifier": list(result.verifier),
        "history": [_iteration_json(row) for row in result.history],
        "remaining_failures": [{"id": i, "message": m} for i, m in result.remaining_failures],
        "suspicious": [
            {"kind": f.kind, "file": f.file, "line": f.line, "text": f.text}
            for f in result.suspicious
        ],
        "warnings": list(result.warnings),
        "flaky": list(result.flaky),
        "acceptance": result.acceptance.to_json() if result.acceptance else None,
        "recommendation": result.recommendation,
        "last_digest": result.last_digest,
        "record_dir": result.record_dir,
    }


def _iteration_json(row: Any) -> dict[str, Any]:
    data = asdict(row)
    data["files_changed"] = list(row.files_changed)
    data["agent_commits"] = list(row.agent_commits)
    return data


def render_run(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "md":
        return render_run_markdown(data)
    return render_run_text(data)


def _trend(data: dict[str, Any]) -> str:
    counts = [
        verifier_state(h["verdict"], h["failures"] + h["errors"])
        for h in data["history"]
        if h["verdict"] not in ("agent_failure",)
    ]
    return " → ".join(counts)


def render_run_text(data: dict[str, Any]) -> str:
    lines = [
        f"greenloop run {data['run_id']}: {data['result'].upper()} — {data['reason']}",
        f"  {data['iterations']}/{data['max_iters']} iterations in {data['duration_s']:.1f} s; "
        f"failing: {_trend(data)}",
        f"  branch {data['branch']}: {data['initial_sha'][:10]} → {data['final_sha'][:10]}",
    ]
    if data["attempt_ref"]:
        lines.append(f"  attempt kept at {data['attempt_ref']} (git log {data['attempt_ref']})")
    for h in data["history"][1:]:
        lines += _iteration_text(h, data["record_dir"])
    for f in data["suspicious"]:
        where = f"{f['file']}:{f['line']}" if f["line"] else f["file"]
        lines.append(f"  SUSPICIOUS {f['kind']}: {where} {f['text'].strip()[:100]}")
    for r in data["remaining_failures"][:10]:
        lines.append(f"  still failing: {r['id']} — {r['message'][:120]}")
    if data.get("acceptance"):
        lines.append(f"  {data['acceptance']['line']}")
    lines += [f"  warning: {w}" for w in data.get("warnings", ())]
    lines.append(f"  next: {data['recommendation']}")
    if data["last_digest"] and data["result"] != "success":
        lines += ["", "Last digest:", data["last_digest"]]
    return "\n".join(lines) + "\n"


def _iteration_text(h: dict[str, Any], record_dir: str) -> list[str]:
    mark = " (rolled back)" if h["rolled_back"] else ""
    if h.get("subset"):  # a monorepo's affected packages (issue 29), or the failing tests
        mark += (
            " (affected packages only)"
            if "packages: " in h.get("ran", "")
            else " (failing tests only)"
        )
    commit = h["commit"][:10] or "no commit"
    files = ", ".join(h["files_changed"][:4])
    if h["verdict"] == "agent_failure":  # nothing was verified: no failing count
        tail = h.get("output_tail") or "(it printed nothing)"
        where = f"{record_dir}/iter-{h['iteration']}/agent.txt"
        return [
            f"  iter {h['iteration']}: agent failed (exit {h['agent_exit']}) after "
            f"{h['agent_s']:.0f} s, {commit} {files}".rstrip(),
            *(f"    | {line}" for line in tail.splitlines()),
            f"    full output: {where}",
        ]
    counted = "" if h["verdict"] in UNCOUNTED else f"{h['failures'] + h['errors']} failing, "
    return [
        f"  iter {h['iteration']}: {h['verdict']}{mark}, {counted}"
        f"agent {h['agent_s']:.0f} s{_backoff(h)}, verify {h['verifier_s']:.1f} s, "
        f"{commit} {files}".rstrip(),
        *([f"    ran: {h['ran']}"] if h.get("ran") else []),
    ]


def _backoff(h: dict[str, Any]) -> str:
    """The part of the agent's time spent waiting out rate limits and server errors."""
    waited = float((h.get("usage") or {}).get("retry_wait_s") or 0)
    return f" ({waited:.1f} s of it waiting to retry after 429/5xx)" if waited else ""


def render_run_markdown(data: dict[str, Any]) -> str:
    icon = "✅" if data["result"] == "success" else "❌"
    lines = [
        f"## {icon} greenloop: {data['result']}",
        "",
        f"**{data['reason']}** — {data['iterations']}/{data['max_iters']} iterations, "
        f"{data['duration_s']:.1f} s, agent `{data['agent']}`, failing: {_trend(data)}",
        "",
        "| iter | verdict | failing | Δ | agent s | verify s | commit | files |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for h in data["history"]:
        delta = "" if h["delta"] is None else f"{h['delta']:+d}"
        files = ", ".join(f"`{f}`" for f in h["files_changed"][:4])
        commit = f"`{h['commit'][:10]}`" if h["commit"] else "—"
        uncounted = h["verdict"] == "agent_failure" or h["verdict"] in UNCOUNTED
        failing = "—" if uncounted else h["failures"] + h["errors"]
        lines.append(
            f"| {h['iteration']} | {h['verdict']} | {failing} | {delta} | "
            f"{h['agent_s']:.0f} | {h['verifier_s']:.1f} | {commit} | {files} |"
        )
    if data.get("acceptance"):
        lines += ["", f"**D{data['acceptance']['line'][1:]}**"]
    if data["suspicious"]:
        lines += ["", "**Suspicious:**", ""]
        lines += [
            f"- {f['kind']} `{f['file']}:{f['line'] or ''}` {f['text'].strip()[:100]}"
            for f in data["suspicious"]
        ]
    if data["remaining_failures"]:
        lines += ["", "**Still failing:**", ""]
        lines += [f"- `{r['id']}` — {r['message'][:160]}" for r in data["remaining_failures"][:10]]
    if data["attempt_ref"]:
        lines += ["", f"Attempt kept at `{data['attempt_ref']}`."]
    lines += ["", f"Next: {data['recommendation']}"]
    if data["last_digest"] and data["result"] != "success":
        lines += [
            "",
            "<details><summary>Last digest</summary>",
            "",
            "```",
            data["last_digest"],
            "```",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


ProgressSink = Callable[[str], None]


def progress_sink(stream: TextIO) -> ProgressSink:
    """Live progress, one line per step: rich on a terminal, plain lines otherwise."""
    if stream.isatty():
        from rich.console import Console

        console = Console(file=stream, highlight=False)

        def show(line: str) -> None:
            console.print(line, markup=False, style="bold" if line.startswith("iter") else None)

        return show

    def plain(line: str) -> None:
        print(line, file=stream, flush=True)

    return plain


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
        f"### {VERDICT_ICONS[verdict]} greenloop check: {verdict_word(result)}",
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

    from greenloop.redact import redact

    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(redact(markdown))
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot write $GITHUB_STEP_SUMMARY %s: %s", path, exc)
        return False
    return True
