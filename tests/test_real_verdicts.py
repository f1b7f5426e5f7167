"""Verdicts on REAL output: the runners whose verdicts were wrong (issue 10), on captured runs.

Cases come from scripts/capture_outputs.py (small projects, tests/resources/outputs) and
scripts/capture_verdict_cases.py (open-source projects, tests/resources/real); their facts come
from the runner's own structured report, never from greenloop's parsers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenloop.classify import Verdict, classify
from greenloop.parsers import ParseResult, ParserInput, parse_output
from greenloop.process import ProcessResult

RESOURCES = Path(__file__).parent / "resources"
REAL_CASES = ("go/sync-0", "go/sync-1")
OUTPUT_CASES = (
    "go/log_skip_green_verbose",
    "go/log_skip_green_json",
    "go/log_skip_red",
    "go/log_skip_red_verbose",
    "go/log_skip_red_json",
)


def _load(name: str) -> dict[str, Any]:
    real = RESOURCES / "real" / name / "case.json"
    path = real if real.exists() else RESOURCES / "outputs" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _judge(data: dict[str, Any]) -> tuple[ParseResult, Verdict]:
    argv = tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"])
    inp = ParserInput(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
        root=data["cwd_placeholder"],
    )
    run = ProcessResult(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=inp.stdout,
        stderr=inp.stderr,
        merged=inp.merged,
    )
    parsed = parse_output(inp)
    return parsed, classify(run, parsed, command=" ".join(argv)).verdict


def _expected_verdict(facts: dict[str, Any]) -> str:
    if "verdict" in facts:
        return str(facts["verdict"])
    return "failed" if facts["count_failed"] else "green"


def _located(parsed: ParseResult, frame: str) -> bool:
    """The fact's file:line, as the runner printed it (go prints test files without their folder)."""
    locations = {f"{f.file}:{f.line}" for f in parsed.failures}
    locations |= {f"{fr.file}:{fr.line}" for f in parsed.failures for fr in f.frames}
    return any(frame == loc or frame.endswith("/" + loc) for loc in locations)


@pytest.mark.parametrize("name", REAL_CASES + OUTPUT_CASES)
def test_real_output_gets_the_verdict_ids_and_counts_of_the_runners_own_report(name: str) -> None:
    data = _load(name)
    facts = data["facts"]
    parsed, verdict = _judge(data)
    assert verdict == _expected_verdict(facts), (parsed.failures[:3], parsed.counts)
    ids = [f.id.rsplit(".", 1)[-1] for f in parsed.errors]
    assert sorted(ids) == sorted(facts["failing_ids"]), ids
    if facts.get("counts"):
        got = parsed.counts
        assert {"passed": got.passed, "failed": got.failing, "skipped": got.skipped} == (
            facts["counts"]
        )
    if facts["message"]:
        first = parsed.errors[0]
        assert facts["message"] in " ".join((first.message, *first.detail)), first
    if facts["frame"]:
        assert _located(parsed, facts["frame"]), parsed.failures[:2]
