"""``bench.json`` as one self-contained page (``templates/bench.html.j2``): the table, the pairs
and an SVG chart of solve rate against iterations, one line per agent x arm."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from greenloop.bench.report import COLUMNS, columns, comparisons, curves, headline, label, pair_line
from greenloop.html_report import (
    CHART_H,
    CHART_W,
    PAD_B,
    PAD_L,
    PAD_R,
    PAD_T,
    Chart,
    Tick,
    template_env,
    x_labels,
)

SERIES_CLASSES = 6  # s0 .. s5 in the template's style; more series reuse the colours


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    label: str
    polyline: str
    tone: str
    final_rate: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveChart:
    axes: Chart
    """The frame, ticks and labels (the run report's chart type, without a line of its own)."""
    series: tuple[Series, ...]


def render_html(data: Mapping[str, Any]) -> str:
    arms, agents = comparisons(data)
    return (
        template_env()
        .get_template("bench.html.j2")
        .render(
            headline=headline(data),
            head=COLUMNS,
            rows=[[label(r), *columns(r)] for r in data["agents"]],
            arms=[pair_line(p) for p in arms],
            agents=[pair_line(p) for p in agents],
            chart=build_solve_chart(data),
            mutants=data["mutants"],
        )
    )


def build_solve_chart(data: Mapping[str, Any]) -> SolveChart:
    """x: iterations 0 .. the longest run; y: the share of the tasks solved within x iterations."""
    horizon, found = curves(data)
    right, bottom = CHART_W - PAD_R, CHART_H - PAD_B

    def x_of(k: int) -> float:
        return round(PAD_L + (right - PAD_L) * k / horizon, 1)

    def y_of(rate: float) -> float:
        return round(bottom - (bottom - PAD_T) * rate, 1)

    series = tuple(
        Series(
            label=curve.label,
            polyline=" ".join(f"{x_of(k)},{y_of(r)}" for k, r in enumerate(curve.rates)),
            tone=f"s{n % SERIES_CLASSES}",
            final_rate=curve.rates[-1],
        )
        for n, curve in enumerate(found)
    )
    axes = Chart(
        width=CHART_W,
        height=CHART_H,
        polyline="",
        points=(),
        x_ticks=tuple(Tick(pos=x_of(k), label=str(k)) for k in x_labels(horizon)),
        y_ticks=tuple(Tick(pos=y_of(p / 100), label=str(p)) for p in range(0, 101, 25)),
        plot_left=PAD_L,
        plot_right=right,
        plot_top=PAD_T,
        plot_bottom=bottom,
    )
    return SolveChart(axes=axes, series=series)
