"""The conformance corpus (tests/resources/real/, issues 10 and 11): digest vs baselines per runner.

Cases: every ``<runner>/<project>-<n>/case.json`` (scripts/conformance/capture.py): real projects at
pinned commits, a seeded one-line bug committed, run as the maintainers run them; facts from the
runner's structured report. Scored like bench/digest.py: the failing cases (verdict not green), the
first failing id, error type, message and mutated frame (minus ``facts_unverified``), budget 2000.
Also: wrong verdict classes over every case (green ones included), and the real-Python table with
pytest-receptor's ``--receptor=llm`` output captured on the same mutants (``peers`` in case.json,
``capture.py --peers``), scored on the same facts, whole (it is what the agent would read).

Run: /tmp/glvenv/bin/python bench/digest_real.py   (bench/digest.py prints the same tables at its end)
     --project NAME (repeatable): those projects' cases alone (bench/digest.py --project too)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digest as base
from _harness import REPO

from greenloop.processes.process import strip_ansi

REAL = REPO / "tests" / "resources" / "real"
PEER = "pytest-receptor"
PYTHON_RUNNERS = ("pytest", "unittest", "django-test", "tox", "nox")
"""The real-Python rows (issue 26's goal: median <= 250 tokens over their failing cases)."""


def load_real(projects: frozenset[str] = frozenset()) -> list[base.Case]:
    """Every case, or only those of ``projects`` (the manifests' names)."""
    cases = []
    for path in sorted(REAL.glob("*/*/case.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if projects and data.get("project") not in projects:
            continue
        # named runner/case: the same project-n exists under several runners (pytest, mypy, ...)
        runner = path.parent.parent.name
        cases.append(base.Case(runner, f"{runner}/{path.parent.name}", data))
    return cases


def verdict_of(case: base.Case) -> str:
    return base.greenloop_check(case)[0]


def scores(cases: list[base.Case], texts: dict[str, dict[str, str]]) -> dict[str, base.Score]:
    """strategy -> Score over these cases; ``texts[case name][strategy]`` is what each one shows."""
    out: dict[str, base.Score] = {}
    for case in cases:
        facts = base.facts_of(case)
        for strategy, text in texts[case.name].items():
            hits = sum(base.found(f, v, text) for f, v in facts.items())
            out.setdefault(strategy, base.Score()).add(hits, len(facts), base.tokens(text))
    return out


def texts_of(case: base.Case) -> dict[str, str]:
    texts = {"greenloop": base.greenloop_check(case)[1], "raw (whole)": case.merged}
    return texts | {name: fn(case.merged) for name, fn in base.BASELINES.items()}


def over(score: base.Score) -> int:
    return sum(t > base.BUDGET for t in score.token_list or [])


def cell(score: base.Score) -> str:
    t = score.token_list or [0]
    return (
        f"{score.retention:.1%}, median {statistics.median(t):.0f}, max {max(t)}, "
        f"{over(score)} over"
    )


def table(rows: dict[str, dict[str, base.Score]], counts: dict[str, tuple[int, int, int]]) -> None:
    strategies = list(next(iter(rows.values())))
    print("| runner | cases (failing) | wrong verdicts | " + " | ".join(strategies) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in strategies) + " |")
    for key, per in rows.items():
        n, failing, wrong = counts[key]
        cells = " | ".join(cell(per[s]) for s in strategies)
        print(f"| {key} | {n} ({failing}) | {wrong} | {cells} |")


def report(projects: frozenset[str] = frozenset()) -> None:
    cases = load_real(projects)
    if not cases:
        print(f"\nConformance corpus: no case of {', '.join(sorted(projects))}")
        return
    texts = {c.name: texts_of(c) for c in cases if c.data["facts"]["verdict"] != "green"}
    wrong = {c.name for c in cases if verdict_of(c) != c.data["facts"]["verdict"]}
    runners = sorted({c.tool for c in cases})
    rows, counts = {}, {}
    for key in [*runners, "ALL"]:
        mine = [c for c in cases if key in (c.tool, "ALL")]
        failing = [c for c in mine if c.name in texts]
        if failing:
            rows[key] = scores(failing, texts)
        counts[key] = (len(mine), len(failing), sum(c.name in wrong for c in mine))
    only = f" of {len(projects)} projects ({', '.join(sorted(projects))})" if projects else ""
    print(
        f"\nConformance corpus{only}: {len(cases)} cases, {len(texts)} failing, "
        f"{len(runners)} runners"
    )
    print("(retention of first id / error type / message / mutated frame; tokens = chars / 3)\n")
    table(rows, counts)
    if wrong:
        print("\nwrong verdict classes: " + ", ".join(sorted(wrong)))
    python = [c for c in cases if c.tool in PYTHON_RUNNERS and c.name in texts]
    if python:
        score = scores(python, texts)["greenloop"]
        print(
            f"\nReal Python ({', '.join(PYTHON_RUNNERS)}): {len(python)} failing cases, "
            f"{sum(c.name in wrong for c in python)} wrong verdicts, greenloop {cell(score)}"
        )
    peer_table(cases, texts)


def peer_table(cases: list[base.Case], texts: dict[str, dict[str, str]]) -> None:
    """Real Python (pytest cases with the peer's capture): greenloop, pytest-receptor, baselines."""
    mine = [c for c in cases if c.name in texts and PEER in (c.data.get("peers") or {})]
    if not mine:
        return
    both = {}
    for c in mine:
        peer = c.data["peers"][PEER]
        shown = strip_ansi(peer["stdout"]) + strip_ansi(peer["stderr"])
        both[c.name] = {"greenloop": texts[c.name]["greenloop"], PEER: shown} | {
            k: v for k, v in texts[c.name].items() if k != "greenloop"
        }
    per = scores(mine, both)
    projects = sorted({c.data["project"] for c in mine})
    print(
        f"\nReal Python (issue 11): {len(mine)} failing pytest cases from {len(projects)} "
        f"projects ({', '.join(projects)}), bug committed\n"
    )
    print("| strategy | retention | median tokens | max | over 2000 |")
    print("| --- | --- | --- | --- | --- |")
    for name, score in per.items():
        t = score.token_list or [0]
        print(
            f"| {name} | {score.retention:.1%} ({score.hits}/{score.total}) | "
            f"{statistics.median(t):.0f} | {max(t)} | {over(score)} |"
        )


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--project", action="append", default=[], help="only this project")
    report(frozenset(parser.parse_args().project))
