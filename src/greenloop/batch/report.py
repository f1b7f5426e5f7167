"""The batch aggregate as text, JSON, Markdown or HTML (``greenloop report --batch DIR``)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.batch.results import INVALID, SUMMARY
from greenloop.errors import FatalError


def load_summary(out: Path) -> dict[str, Any]:
    return load_output(out, SUMMARY, "batch")


def load_output(out: Path, name: str, command: str) -> dict[str, Any]:
    """``out/name`` as written by ``greenloop <command> --out out``."""
    try:
        data: dict[str, Any] = json.loads((out / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FatalError(
            f"{out} has no {name}: run greenloop {command} --out {out} first"
        ) from None
    except (OSError, ValueError) as exc:
        raise FatalError(f"cannot read {out / name}: {exc}") from exc
    return data


def render_batch(
    summary: Mapping[str, Any], fmt: str, out: Path | None = None, page_dir: Path | None = None
) -> str:
    """``page_dir``: where an HTML page is written (its links are relative to it)."""
    if fmt == "json":
        return json.dumps(dict(summary), indent=2, default=str) + "\n"
    if fmt == "md":
        return render_markdown(summary)
    if fmt == "html":
        return render_html(summary, out, page_dir)
    return render_text(summary, out)


def _headline(s: Mapping[str, Any]) -> str:
    """``8/9 solved (89 %), 1 invalid: already green at baseline, 10 finished``."""
    rate = 100 * float(s.get("solve_rate", 0))
    head = f"{s['solved']}/{s.get('valid', s['total'])} solved ({rate:.0f} %)"
    if s.get("invalid"):
        why = s.get("invalid_reasons") or {"already green at baseline": s["invalid"]}
        if len(why) == 1:
            head += f", {s['invalid']} invalid: {next(iter(why))}"
        else:
            head += (
                f", {s['invalid']} invalid (" + ", ".join(f"{n} {w}" for w, n in why.items()) + ")"
            )
    declared = s.get("declared") or {}
    if declared.get("tasks"):
        head += f", declared acceptance met in {declared['accepted']}/{declared['tasks']}"
    return f"{head}, {s['finished']} finished"


def _reason(task: Mapping[str, Any]) -> str:
    """The task's reason, and for an environment failure what failed."""
    reason = str(task.get("reason", ""))
    return f"{reason}: {task['what_failed']}" if task.get("what_failed") else reason


def _medians(s: Mapping[str, Any]) -> str:
    m = s.get("median", {})

    def f(key: str) -> str:
        return "-" if m.get(key) is None else f"{m[key]:.1f}"

    return (
        f"median wall {f('wall_s')} s, agent {f('agent_s')} s, verifier {f('verifier_s')} s, "
        f"{f('iterations')} iterations"
    )


def _spent(s: Mapping[str, Any]) -> list[str]:
    """Cost and the time agents waited on rate limits, when there was any (every format)."""
    lines = []
    if s.get("cost_usd"):
        lines.append(f"cost ${s['cost_usd']:.4f}")
    if s.get("budget"):
        b = s["budget"]
        caps = [f"${b['max_cost_usd']:g}"] if b.get("max_cost_usd") is not None else []
        caps += [f"{b['max_tokens']:,} tokens"] if b.get("max_tokens") is not None else []
        cap = " and ".join(caps)
        lines.append(
            f"batch budget {cap} reached (spent ${b['spent_usd']:.4f}, {b['spent_tokens']:,} "
            f"tokens): {b['not_started']} task(s) not started; run again with a higher cap to go on"
        )
    if s.get("agent_retry_wait_s"):
        lines.append(f"agents waited {s['agent_retry_wait_s']:.1f} s to retry after 429/5xx")
    return lines


def render_text(s: Mapping[str, Any], out: Path | None = None) -> str:
    lines = [f"greenloop batch: {_headline(s)}", f"  {_medians(s)}"]
    lines += [f"  {line}" for line in _spent(s)]
    lines.append("  by result:")
    lines += [f"    {r['count']:>4}  {r['result']}: {r['reason']}" for r in s.get("by_reason", [])]
    lines.append("  tasks:")
    lines += [
        f"    {t['id']:<20} {t.get('result', ''):<16} {t.get('iterations', 0)} it  "
        f"{float(t.get('wall_s') or 0):6.1f} s  {_reason(t)}"
        for t in s.get("tasks", [])
    ]
    lines += _next_steps(s, out)
    return "\n".join(lines) + "\n"


def _next_steps(s: Mapping[str, Any], out: Path | None) -> list[str]:
    """Where to read why a task stopped: its own run report, in its workspace."""
    unsolved = [
        t
        for t in s.get("tasks", [])
        # interrupted: runs again on resume; invalid: green before any agent ran, nothing to read
        if t.get("result") not in ("success", "interrupted", INVALID)
        and t.get("workspace")  # Path("") is the current folder
        and Path(str(t["workspace"])).is_dir()
    ]
    if not unsolved:
        return []
    lines = [
        "  next: why a task stopped (its digest, its kept attempt): "
        f"greenloop -C {shlex.quote(str(unsolved[0]['workspace']))} report"
    ]
    if out is not None:
        lines.append(
            f"        every task as one page: greenloop report --batch {shlex.quote(str(out))} "
            "--format html -o batch.html"
        )
    return lines


def render_markdown(s: Mapping[str, Any]) -> str:
    lines = [f"## greenloop batch: {_headline(s)}", "", _medians(s), ""]
    lines += [*_spent(s), ""] if _spent(s) else []
    lines += ["| result | reason | tasks |", "|---|---|---:|"]
    lines += [f"| {r['result']} | {r['reason']} | {r['count']} |" for r in s.get("by_reason", [])]
    lines += ["", "| task | result | iterations | wall s | reason |", "|---|---|---:|---:|---|"]
    lines += [
        f"| {t['id']} | {t.get('result')} | {t.get('iterations', 0)} | "
        f"{float(t.get('wall_s') or 0):.1f} | {_reason(t)} |"
        for t in s.get("tasks", [])
    ]
    return "\n".join(lines) + "\n"


def render_html(s: Mapping[str, Any], out: Path | None, page_dir: Path | None = None) -> str:
    """One page, styled as a run's page; task links are relative to ``page_dir`` (where it is
    written; the current directory for stdout), so they resolve wherever ``-o`` puts it."""
    from greenloop.report.html import RESULT_TONES, template_env

    def tone(result: object) -> str:
        return "invalid" if result == INVALID else RESULT_TONES.get(str(result), "bad")

    tasks = [
        {
            "id": str(t["id"]),
            "href": _task_link(t, out, page_dir),
            "result": str(t.get("result")),
            "tone": tone(t.get("result")),
            "iterations": t.get("iterations", 0),
            "wall_s": float(t.get("wall_s") or 0),
            "reason": _reason(t),
        }
        for t in s.get("tasks", [])
    ]
    by_reason = [{**r, "tone": tone(r["result"])} for r in s.get("by_reason", [])]
    valid = s.get("valid", s.get("total", 0))  # an invalid task is neither solved nor a failure
    everything = bool(valid) and s.get("solved", 0) == valid
    return (
        template_env()
        .get_template("batch.html.j2")
        .render(
            headline=_headline(s),
            medians=_medians(s),
            spent=_spent(s),
            tone="ok" if everything else "bad",
            by_reason=by_reason,
            slowest=s.get("slowest", []),
            costliest=s.get("costliest", []),
            tasks=tasks,
        )
    )


def _task_link(task: Mapping[str, Any], out: Path | None, page_dir: Path | None) -> str:
    """Each task's own HTML report, rendered next to its run record (beside the batch page when
    the batch dir is read-only); rendered again only when its report changed; '' when none."""
    if out is None:
        return ""
    record = out / "records" / str(task["id"])
    report = record / "report.json"
    if not report.is_file():
        return ""
    places = [record / "report.html"]
    if page_dir is not None:
        places.append(page_dir / "batch-tasks" / f"{task['id']}.html")
    page = next((p for p in places if _rendered(p, report)), None)
    if page is None:
        page = next((p for p in places if _render_task(report, p)), None)
    if page is None:
        return ""  # nowhere writable: the row stays, without its link
    return Path(os.path.relpath(page, (page_dir or Path.cwd()).resolve())).as_posix()


def _rendered(page: Path, report: Path) -> bool:
    """The page exists and is no older than the report it shows."""
    try:
        return page.is_file() and page.stat().st_mtime_ns >= report.stat().st_mtime_ns
    except OSError:
        return False


def _render_task(report: Path, page: Path) -> bool:
    from greenloop.report.html import render_html as render_run_html

    try:
        html = render_run_html(json.loads(report.read_text(encoding="utf-8")))
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html, "utf-8")
    except OSError:
        return False
    return True
