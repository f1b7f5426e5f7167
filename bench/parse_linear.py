"""Parse time per MB of a line of spaces, for every registered parser (issue 10: parsing is linear).

Run: /tmp/glvenv/bin/python bench/parse_linear.py [--runs N]
Each parser reads one line of N MB of spaces ending in ``x``, and the issue's three adversarial lines
(a 60 000-space pytest id, a 100 000-space pyright line, a 100 000-space black line). Linear parsing
means 4 MB costs about 4x 1 MB; a quadratic regex shows as 16x.
"""

from __future__ import annotations

import argparse

from _harness import HEADER, load, machine, row, time_call, today, verdict

from greenloop.parsers import PARSERS, ParserInput, parser_for

S = " "
MEASURABLE_S = 0.02
RULE = "=" * 30
ISSUE_LINES = {
    "pytest id": f"{RULE} short test summary info {RULE}\nFAILED t.py::test_x[a{S * 60_000}b] - m\n",
    "pyright": f"  a{S * 100_000}b:1:1 - error: m{S * 100_000}z\n",
    "black": f"would reformat x{S * 100_000}y\n",
}


def parse_s(tool: str, text: str, runs: int) -> float:
    parse = parser_for(tool)
    inp = ParserInput(argv=(tool,), exit_code=1, stdout=text, stderr=text[-500:], root="/r")
    return time_call(lambda: parse(inp), runs=runs).median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    worst_mb, worst_ratio, worst_issue = 0.0, 0.0, 0.0
    for tool in PARSERS:
        one = parse_s(tool, S * 1_000_000 + "x", runs)
        four = parse_s(tool, S * 4_000_000 + "x", runs)
        issue = max(parse_s(tool, text, runs) for text in ISSUE_LINES.values())
        print(f"{tool:9} 1 MB {one * 1000:7.1f} ms  4 MB {four * 1000:7.1f} ms  x{four / one:4.1f}"
              f"  issue lines max {issue * 1000:6.1f} ms")  # fmt: skip
        worst_mb = max(worst_mb, one)
        if one > MEASURABLE_S:  # a few ms is allocation noise, not a slope
            worst_ratio = max(worst_ratio, four / one)
        worst_issue = max(worst_issue, issue)
    print(machine(), load())
    print(HEADER)
    print(
        row(
            "parse_linear (issue 10)",
            f"every registered parser ({len(PARSERS)}) on one line of spaces, and the issue's lines",
            "`python bench/parse_linear.py`",
            f"slowest parser **{worst_mb * 1000:.0f} ms per MB**; 4 MB / 1 MB ≤ **x{worst_ratio:.1f}**"
            " (parsers over 20 ms/MB);"
            f" 60 000-space pytest id, 100 000-space pyright/black lines: max "
            f"**{worst_issue * 1000:.0f} ms**",
            "linear; issue lines < 100 ms",
            verdict(worst_ratio < 6 and worst_issue < 0.1),
        )
    )
    print(today())


if __name__ == "__main__":
    main()
