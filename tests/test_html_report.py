"""The HTML report of a real run: self-contained, and rendered by real headless Chromium."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.loop.policy import Result
from greenloop.report.html import build_chart, classify_diff_line
from limits import hang

PY = sys.executable
CHROMIUM = Path("/usr/bin/chromium")
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n"
TEST_CALC = """\
from calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2
"""
FIX_ADD = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}
FIX_SUB = {
    "replace": "calc.py",
    "old": "def sub(a, b):\n    return a + b",
    "new": "def sub(a, b):\n    return a - b",
}
STAGES = (StageSpec(name="test", run=f"{PY} -m pytest -q -p no:cacheprovider"),)
# A reference the browser would fetch: src=/href= with a scheme, CSS url(), @import, any http(s) URL.
EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*[a-z][a-z0-9+.-]*:|url\s*\(|@import|https?://""", re.I
)


def _run(root: Path, steps: Sequence[Sequence[Mapping[str, object]]]) -> LoopResult:
    return run_loop(root, scripted(steps), config=Config(stages=STAGES, timeout=60.0))


def _html_via_cli(root: Path, out: Path) -> str:
    cmd = [PY, "-m", "greenloop", "-C", str(root), "report", "last", "--format", "html"]
    proc = subprocess.run(
        [*cmd, "-o", str(out)], check=False, capture_output=True, text=True, timeout=hang(60)
    )
    assert proc.returncode == 0, proc.stderr
    return out.read_text(encoding="utf-8")


@pytest.fixture
def calc_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TEST_CALC, ".gitignore": "__pycache__/\n"})


def _chromium(*args: str, user_data: Path) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={user_data}",
    ]
    return subprocess.run(
        [str(CHROMIUM), *flags, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=hang(120),
    )


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("GREENLOOP_SKIP_CHROMIUM") == "1":
        pytest.skip("GREENLOOP_SKIP_CHROMIUM=1: headless Chromium render not run")
    pytest.fail(
        f"{CHROMIUM} not found: run scripts/install_chromium.sh "
        "(or set GREENLOOP_SKIP_CHROMIUM=1 to skip this test, stating so)"
    )


def test_html_report_of_a_real_run_is_self_contained_and_renders_in_chromium(
    calc_repo: Path, tmp_path: Path
) -> None:
    result = _run(calc_repo, [[FIX_ADD, {"summary": "fix add"}], [FIX_SUB]])
    assert result.result is Result.SUCCESS
    out = tmp_path / "out.html"
    html = _html_via_cli(calc_repo, out)

    assert EXTERNAL.findall(html) == []
    assert "<script" not in html.lower()
    assert "SUCCESS" in html
    assert "test_calc.py::test_sub" in html  # from the baseline's digest in the run record
    assert "<svg" in html
    assert "<polyline" in html
    assert '<span class="add">+    return a + b</span>' in html
    assert '<span class="del">-    return a - b</span>' in html
    digests = re.findall(r"<details( open)?>\s*<summary>Digest</summary>", html)
    assert digests == [" open"] * 3  # baseline and both iterations alike

    _require_chromium()
    dom = _chromium("--dump-dom", out.as_uri(), user_data=tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "greenloop: SUCCESS" in dom.stdout
    assert "test_calc.py::test_sub" in dom.stdout
    assert "<polyline" in dom.stdout
    for width in (412, 1280):
        png = tmp_path / f"report-{width}.png"
        shot = _chromium(
            f"--screenshot={png}",
            f"--window-size={width},1200",
            out.as_uri(),
            user_data=tmp_path / f"profile-{width}",
        )
        assert shot.returncode == 0, shot.stderr[-2000:]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 10_000  # a blank page is a few hundred bytes


def test_html_report_of_a_stalled_run_lists_the_failure_still_open(
    calc_repo: Path, tmp_path: Path
) -> None:
    useless = {"replace": "calc.py", "old": "def add", "new": "# thinking\ndef add"}
    result = _run(calc_repo, [[useless]])
    assert result.result is Result.STALLED
    html = _html_via_cli(calc_repo, tmp_path / "stalled.html")

    assert 'class="banner bad"' in html
    assert "STALLED" in html
    assert "Still failing (2)" in html
    assert "<code>test_calc.py::test_add</code>" in html
    assert EXTERNAL.findall(html) == []


def test_chart_puts_the_baseline_left_and_green_on_the_x_axis() -> None:
    rows = [
        {"iteration": 0, "verdict": "failed", "failures": 4, "errors": 0},
        {"iteration": 1, "verdict": "failed", "failures": 1, "errors": 1},
        {"iteration": 2, "verdict": "green", "failures": 0, "errors": 0},
    ]
    chart = build_chart(rows)
    assert chart is not None
    first, middle, last = chart.points
    assert (first.x, first.y) == (chart.plot_left, chart.plot_top)
    assert middle.failing == 2
    assert last.tone == "green"
    assert (last.x, last.y) == (chart.plot_right, chart.plot_bottom)
    assert [t.label for t in chart.y_ticks] == ["0", "1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("most", "labels"),
    [
        (3, ["0", "1", "2", "3"]),
        (1, ["0", "1"]),
        (12, ["0", "5", "10", "15"]),
        (240, ["0", "50", "100", "150", "200", "250"]),
    ],
)
def test_chart_y_ticks_are_every_count_or_even_nice_steps(most: int, labels: list[str]) -> None:
    rows = [
        {"iteration": 0, "verdict": "failed", "failures": most, "errors": 0},
        {"iteration": 1, "verdict": "green", "failures": 0, "errors": 0},
    ]
    chart = build_chart(rows)
    assert chart is not None
    assert [t.label for t in chart.y_ticks] == labels
    gaps = [a.pos - b.pos for a, b in zip(chart.y_ticks, chart.y_ticks[1:], strict=False)]
    assert max(gaps) - min(gaps) < 0.2  # evenly spaced (positions are rounded to 0.1)


def test_chart_is_absent_when_no_iteration_has_a_count() -> None:
    assert build_chart([{"iteration": 1, "verdict": "agent_failure"}]) is None


def test_diff_lines_are_classified_by_their_prefix() -> None:
    kinds = [
        classify_diff_line(line).kind
        for line in ("--- a/x", "+++ b/x", "@@ -1 +1 @@", "+new", "-old", " same")
    ]
    assert kinds == ["meta", "meta", "hunk", "add", "del", "ctx"]
    assert classify_diff_line(" ").kind == "blank"  # a blank context line is a gap, not a row
    assert classify_diff_line("").kind == "blank"


def test_report_text_is_escaped_not_interpreted(tmp_path: Path) -> None:
    from greenloop.report.html import render_html

    data = {
        "run_id": "r1",
        "result": "exhausted",
        "exit_code": 1,
        "reason": "<img src=x onerror=alert(1)>",
        "iterations": 0,
        "max_iters": 5,
        "branch": "main",
        "initial_sha": "a" * 40,
        "final_sha": "a" * 40,
        "attempt_ref": "",
        "duration_s": 1.0,
        "agent": "scripted",
        "verifier": ["pytest"],
        "history": [],
        "remaining_failures": [{"id": "t::<b>", "message": "</pre><script>"}],
        "suspicious": [],
        "warnings": [],
        "recommendation": "",
        "last_digest": "",
        "record_dir": str(tmp_path / "missing"),
    }
    html = render_html(data)
    assert "<img" not in html
    assert "<script" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
