"""``DIR/bench.json`` as text, JSON, Markdown or HTML (``greenloop report --bench DIR``).

Per agent x feedback arm: solved / total with its 95 % Wilson interval, medians, cheat attempts,
results by reason; the digest-vs-raw and agent-vs-agent pairs with McNemar; solve rate against
iterations (a table in text and Markdown, an SVG chart in HTML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from greenloop.bench.html import render_html
from greenloop.bench.run import BENCH
from greenloop.bench.table import COLUMNS, columns, comparisons, curves, headline, label, pair_line

FORMATS = ("text", "json", "md", "html")


def load_bench(out: Path) -> dict[str, Any]:
    from greenloop.batch.report import load_output

    return load_output(out, BENCH, "bench")


def render_bench(data: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(dict(data), indent=2) + "\n"
    if fmt == "md":
        return render_markdown(data)
    if fmt == "html":
        return render_html(data)
    return render_text(data)


def render_text(data: Mapping[str, Any]) -> str:
    lines = [f"greenloop bench: {headline(data)}"]
    for row in data["agents"]:
        cells = dict(zip(COLUMNS[1:], columns(row), strict=True))
        lines.append(f"  {label(row)}")
        lines += [f"    {name}: {value}" for name, value in cells.items()]
    lines += _text_pairs(data)
    horizon, found = curves(data)
    lines.append("  solved within k iterations (%):")
    lines.append("    " + " ".join(f"{k:>4}" for k in range(1, horizon + 1)) + "  agent [arm]")
    for curve in found:
        rates = " ".join(f"{100 * r:>4.0f}" for r in curve.rates[1:])
        lines.append(f"    {rates}  {curve.label}")
    return "\n".join(lines) + "\n"


def _text_pairs(data: Mapping[str, Any]) -> list[str]:
    arms, agents = comparisons(data)
    lines = []
    for title, pairs in (("digest vs raw", arms), ("between agents", agents)):
        if pairs:
            lines.append(f"  {title}:")
            lines += [f"    {pair_line(p)}" for p in pairs]
    return lines


def render_markdown(data: Mapping[str, Any]) -> str:
    lines = [f"## greenloop bench: {headline(data)}", ""]
    lines += _md_table(COLUMNS, [[label(r), *columns(r)] for r in data["agents"]])
    arms, agents = comparisons(data)
    for title, pairs in (("Digest vs raw", arms), ("Between agents", agents)):
        if pairs:
            lines += ["", f"### {title}", ""] + [f"- {pair_line(p)}" for p in pairs]
    horizon, found = curves(data)
    lines += ["", "### Solved within k iterations (%)", ""]
    head = ["agent [arm]", *(str(k) for k in range(1, horizon + 1))]
    lines += _md_table(head, [[c.label, *(f"{100 * r:.0f}" for r in c.rates[1:])] for c in found])
    return "\n".join(lines) + "\n"


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
