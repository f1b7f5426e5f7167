"""The batch aggregate as text, JSON, Markdown or HTML (``greenloop report --batch DIR``)."""

from __future__ import annotations

import html
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.batch.results import SUMMARY
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


def render_batch(summary: Mapping[str, Any], fmt: str, out: Path | None = None) -> str:
    if fmt == "json":
        return json.dumps(dict(summary), indent=2, default=str) + "\n"
    if fmt == "md":
        return render_markdown(summary)
    if fmt == "html":
        return render_html(summary, out)
    return render_text(summary, out)


def _headline(s: Mapping[str, Any]) -> str:
    rate = 100 * float(s.get("solve_rate", 0))
    return f"{s['solved']}/{s['total']} solved ({rate:.0f} %), {s['finished']} finished"


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
        f"{float(t.get('wall_s') or 0):6.1f} s  {t.get('reason', '')}"
        for t in s.get("tasks", [])
    ]
    lines += _next_steps(s, out)
    return "\n".join(lines) + "\n"


def _next_steps(s: Mapping[str, Any], out: Path | None) -> list[str]:
    """Where to read why a task stopped: its own run report, in its workspace."""
    unsolved = [
        t
        for t in s.get("tasks", [])
        if t.get("result") not in ("success", "interrupted")  # interrupted: runs again on resume
        and Path(str(t.get("workspace") or "")).is_dir()
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
        f"{float(t.get('wall_s') or 0):.1f} | {t.get('reason', '')} |"
        for t in s.get("tasks", [])
    ]
    return "\n".join(lines) + "\n"


def render_html(s: Mapping[str, Any], out: Path | None) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{_task_link(t, out)}</td><td class={e(str(t.get('result')))}>"
        f"{e(str(t.get('result')))}</td><td>{t.get('iterations', 0)}</td>"
        f"<td>{float(t.get('wall_s') or 0):.1f}</td><td>{e(str(t.get('reason', '')))}</td></tr>"
        for t in s.get("tasks", [])
    )
    reasons = "".join(
        f"<tr><td>{e(r['result'])}</td><td>{e(r['reason'])}</td><td>{r['count']}</td></tr>"
        for r in s.get("by_reason", [])
    )
    slowest = "".join(f"<li>{e(str(t['id']))}: {t['wall_s']:.1f} s</li>" for t in s["slowest"])
    costly = "".join(
        f"<li>{e(str(t['id']))}: ${t['cost_usd']:.4f}</li>" for t in s.get("costliest", [])
    )
    return (
        "<!doctype html><meta charset=utf-8><title>greenloop batch</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px}"
        ".success{color:#070}</style>"
        f"<h1>greenloop batch</h1><p>{e(_headline(s))}</p><p>{e(_medians(s))}</p>"
        + "".join(f"<p>{e(line)}</p>" for line in _spent(s))
        + f"<h2>By result</h2><table><tr><th>result<th>reason<th>tasks</tr>{reasons}</table>"
        f"<h2>Slowest</h2><ul>{slowest}</ul>"
        + (f"<h2>Costliest</h2><ul>{costly}</ul>" if costly else "")
        + "<h2>Tasks</h2><table><tr><th>task<th>result<th>iterations<th>wall s<th>reason</tr>"
        f"{rows}</table>\n"
    )


def _task_link(task: Mapping[str, Any], out: Path | None) -> str:
    """Each task's own HTML report, rendered next to its run record."""
    name = html.escape(str(task["id"]))
    if out is None:
        return name
    record = out / "records" / str(task["id"])
    report = record / "report.json"
    if not report.is_file():
        return name
    from greenloop.html_report import render_html as render_run_html

    page = record / "report.html"
    page.write_text(render_run_html(json.loads(report.read_text(encoding="utf-8"))), "utf-8")
    return f'<a href="records/{name}/report.html">{name}</a>'
