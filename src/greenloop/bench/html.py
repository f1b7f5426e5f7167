"""``bench.json`` as one self-contained page (``templates/bench.html.j2``): the table, the pairs
and an SVG chart of solve rate against iterations, one line per agent x arm."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from greenloop.bench.report import (
    COLUMNS,
    Curve,
    columns,
    comparisons,
    curves,
    headline,
    label,
    pair_line,
)
from greenloop.report.html import (
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
    points: tuple[tuple[float, float], ...] = ()
    """Markers at each iteration, so a line under another still shows where it runs."""
    coincides: str = ""
    """The label of an earlier series with the very same rates: this one is drawn dashed on
    top of it (the earlier one wider), and the legend says so."""
    under: bool = False
    """A later series coincides with this one: drawn wider, so both stay visible."""


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

    same = _coinciding([c.rates for c in found])
    series = tuple(
        Series(
            label=curve.label,
            polyline=" ".join(f"{x_of(k)},{y_of(r)}" for k, r in enumerate(curve.rates)),
            tone=f"s{n % SERIES_CLASSES}",
            final_rate=curve.rates[-1],
            points=tuple((x_of(k), y_of(r)) for k, r in enumerate(curve.rates)),
            coincides=_label_at(found, same[n]),
            under=n in same,
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


def _label_at(found: list[Curve], index: int | None) -> str:
    return found[index].label if index is not None else ""


def _coinciding(rates: list[tuple[float, ...]]) -> list[int | None]:
    """For each series, the index of the first earlier one with the same rates, else None."""
    first: dict[tuple[float, ...], int] = {}
    found: list[int | None] = []
    for n, r in enumerate(rates):
        found.append(first.get(r))
        first.setdefault(r, n)
    return found
