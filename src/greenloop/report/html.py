"""A run's report.json as one self-contained HTML page: no JavaScript, no external references.

The page is rendered by jinja2 (autoescaped) from ``templates/report.html.j2``; everything the
template draws (the SVG chart's coordinates, the diff's line classes) is computed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# Result -> banner colour class; anything not listed is a plain failure (red).
RESULT_TONES = {
    "success": "ok",
    "suspicious_pass": "warn",
    "env_failure": "env",
    "timeout": "env",
    "unresolved": "env",
    "interrupted": "env",
}
DIFF_LINE_CAP = 1500
CHART_W, CHART_H = 480, 200
PAD_L, PAD_R, PAD_T, PAD_B = 40, 14, 14, 40

Reader = Callable[[Path], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartPoint:
    x: float
    y: float
    iteration: int
    failing: int
    tone: str
    """green, failed, rolled_back or other: the point's colour class."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    pos: float
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    width: int
    height: int
    polyline: str
    points: tuple[ChartPoint, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffLine:
    kind: str
    """add, del, hunk, meta or ctx."""
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Card:
    row: dict[str, Any]
    failing: int
    digest: str
    diff: tuple[DiffLine, ...]
    diff_omitted: int


def render_html(data: dict[str, Any], *, read: Reader | None = None) -> str:
    """The whole page; ``read`` loads ``iter-N/digest.md`` and ``diff.patch`` from the record."""
    env = template_env()
    record = Path(data["record_dir"]) if data.get("record_dir") else None
    cards = [_card(row, record, read or _read_text) for row in data["history"]]
    return env.get_template("report.html.j2").render(
        d=data,
        tone=RESULT_TONES.get(data["result"], "bad"),
        chart=build_chart(data["history"]),
        cards=cards,
    )


def template_env() -> jinja2.Environment:
    """The package's templates, autoescaped; jinja2 is imported only when a page is rendered."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("greenloop.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _card(row: dict[str, Any], record: Path | None, read: Reader) -> Card:
    folder = record / f"iter-{row['iteration']}" if record else None
    digest = read(folder / "digest.md") if folder else ""
    patch = read(folder / "diff.patch") if folder else ""
    lines = patch.splitlines()
    return Card(
        row=row,
        failing=failing_count(row),
        digest=digest.strip(),
        diff=tuple(classify_diff_line(line) for line in lines[:DIFF_LINE_CAP]),
        diff_omitted=max(0, len(lines) - DIFF_LINE_CAP),
    )


def failing_count(row: dict[str, Any]) -> int:
    return 0 if row["verdict"] == "green" else int(row["failures"]) + int(row["errors"])


def classify_diff_line(line: str) -> DiffLine:
    if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file")):
        kind = "meta"
    elif line.startswith("@@"):
        kind = "hunk"
    elif line.startswith("+"):
        kind = "add"
    elif line.startswith("-"):
        kind = "del"
    else:
        kind = "ctx" if line.strip() else "blank"  # a blank context line: a gap, not a row
    return DiffLine(kind=kind, text=line)


def build_chart(history: list[dict[str, Any]]) -> Chart | None:
    """Failing count per iteration as SVG coordinates; agent failures have no count to plot."""
    rows = [r for r in history if r["verdict"] != "agent_failure"]
    if not rows:
        return None
    step = y_step(max(1, *(failing_count(r) for r in rows)))
    top = -(-max(1, *(failing_count(r) for r in rows)) // step) * step  # up to a whole step
    last = max(int(r["iteration"]) for r in rows)
    right, bottom = CHART_W - PAD_R, CHART_H - PAD_B

    def x_of(n: int) -> float:
        span = right - PAD_L
        return round(PAD_L + (span * n / last if last else span / 2), 1)

    def y_of(v: int) -> float:
        return round(bottom - (bottom - PAD_T) * v / top, 1)

    points = tuple(
        ChartPoint(
            x=x_of(int(r["iteration"])),
            y=y_of(failing_count(r)),
            iteration=int(r["iteration"]),
            failing=failing_count(r),
            tone=_point_tone(r),
        )
        for r in rows
    )
    return Chart(
        width=CHART_W,
        height=CHART_H,
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
        points=points,
        x_ticks=tuple(Tick(pos=x_of(n), label=str(n)) for n in x_labels(last)),
        y_ticks=tuple(Tick(pos=y_of(v), label=str(v)) for v in range(0, top + 1, step)),
        plot_left=PAD_L,
        plot_right=right,
        plot_top=PAD_T,
        plot_bottom=bottom,
    )


def _point_tone(row: dict[str, Any]) -> str:
    if row.get("rolled_back"):
        return "rolled_back"
    return row["verdict"] if row["verdict"] in ("green", "failed") else "other"


def x_labels(last: int) -> list[int]:
    step = max(1, -(-last // 10))  # at most ~10 labels on a long run
    return sorted({*range(0, last + 1, step), last})


def y_step(most: int) -> int:
    """Every count up to 5; above, a nice step (1, 2 or 5 times a power of 10) giving at most 5 intervals."""
    scale = 1
    while True:
        for step in (scale, 2 * scale, 5 * scale):
            if -(-most // step) <= 5:
                return step
        scale *= 10
