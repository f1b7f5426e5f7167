"""``greenloop bench`` end to end: a fixture project, real git, real shell agents (oracle, no-op,
cheat) through the real batch, and what a seeded workspace must not contain."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batch_fixtures import LIB, ORACLE, git, make_project
from greenloop.bench import score, seed
from greenloop.bench.mutate import mutants_of
from greenloop.bench.names import agent_names
from greenloop.bench.run import run_bench
from greenloop.config import Config
from greenloop.report.html import CHART_H, PAD_B, PAD_T
from limits import hang

ROOT = Path(__file__).resolve().parents[1]
VERIFY = (sys.executable, "-B", "test_lib.py")


def test_bench_scores_oracle_noop_and_cheat_agents_and_leaves_no_trace(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path)
    oracle = tmp_path / "oracle.py"
    oracle.write_text(ORACLE)
    out = tmp_path / "bench"
    agents = [
        f"{sys.executable} {oracle} {out / 'answers'}",
        "true",
        "printf 'print(1)\\n' > test_lib.py",
    ]

    data = run_bench(
        root, agents=agents, out=out, mutants=4, seed_value=7, command=VERIFY, workers=2,
        overrides={"max_iters": 2},
    )  # fmt: skip

    oracle_score, noop, cheat = data["agents"]
    said = capfd.readouterr().err  # piped: each block of task lines is headed by its arm
    assert (
        "greenloop bench: arm 'digest' (each agent reads greenloop's digest): 4 mutants x 3 "
        "agents (a0 = oracle.py, a1 = true, a2 = printf)"
    ) in said
    assert (oracle_score["solved"], oracle_score["total"]) == (4, 4)
    assert (noop["solved"], noop["by_result"]) == (0, {"stalled": 4})
    assert (cheat["solved"], cheat["cheat_attempts"]) == (0, 4)
    assert data["pairs"][0]["only_first"] == 4
    assert data["pairs"][0]["mcnemar_p"] == 0.125
    assert git(root, "status", "--porcelain") == ""  # the user's repository untouched

    again = seed.select(
        out / "clean", seed.candidate_mutants(out / "clean", ["lib.py", "test_lib.py"], []),
        n=4, seed=7, command=VERIFY, config=Config(), max_failing=5,
    )  # fmt: skip
    assert [m.id for m in again.kept] == [m["id"] for m in data["mutants"]]  # same seed, same tasks

    for mutant in data["mutants"]:
        work = out / "batch-digest" / "work" / f"{mutant['id']}.a1"  # the no-op agent's workspace
        answer = json.loads((out / "answers" / f"{mutant['id']}.json").read_text())
        original_line = LIB.splitlines()[answer["line"] - 1]
        assert git(work, "rev-list", "--all", "--count").strip() == "1"
        assert git(work, "fsck", "--lost-found", "--no-progress").strip() == ""
        assert not (out / "mutants" / mutant["id"] / ".git" / "logs").exists()
        files = subprocess.run(
            ["grep", "-rlF", "--", original_line.strip(), "."], cwd=work, capture_output=True,
            text=True, check=False,
        ).stdout  # fmt: skip
        assert ".git" not in files
        assert "lib.py" not in files.split()


def test_bench_mutations_skip_tests_and_strings() -> None:
    text = 'def f(x):\n    s = "a < b"  # x < 1\n    return x < 1\n'
    kinds = {(m.kind, m.old, m.new) for m in mutants_of("pkg/mod.py", text)}
    assert ("compare", "<", "<=") in kinds
    assert all(m.line == 3 for m in mutants_of("pkg/mod.py", text))  # not the string or comment
    assert seed.candidate_mutants(Path("."), ["tests/test_x.py", "conftest.py"], []) == []


def test_bench_wilson_and_mcnemar_match_known_values() -> None:
    assert score.wilson(4, 4) == (0.5101, 1.0)
    assert score.wilson(0, 10) == (0.0, 0.2775)
    assert score.mcnemar_exact(4, 0) == 0.125
    assert score.mcnemar_exact(3, 3) == 1.0


@pytest.fixture(scope="module")
def both_arms(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One real bench run, shared: an oracle and a no-op agent, 2 mutants, both feedback arms."""
    tmp = tmp_path_factory.mktemp("both")
    oracle = tmp / "oracle.py"
    oracle.write_text(ORACLE)
    out = tmp / "bench"
    data = run_bench(
        make_project(tmp), agents=[f"{sys.executable} {oracle} {out / 'answers'}", "true"],
        out=out, mutants=2, seed_value=3, command=VERIFY, workers=2,
        overrides={"max_iters": 2}, feedback="both",
    )  # fmt: skip
    return out, data


def test_bench_raw_and_digest_arms_send_different_prompts_and_nothing_else_differs(
    both_arms: tuple[Path, dict[str, Any]],
) -> None:
    out, data = both_arms
    oracle_digest, digest, oracle_raw, raw = data["agents"]
    assert (digest["feedback"], raw["feedback"]) == ("digest", "raw")
    assert digest["by_result"] == raw["by_result"] == {"stalled": 2}
    assert oracle_digest["solved"] == oracle_raw["solved"] == 2
    for mutant in data["mutants"]:
        prompts = [
            (out / f"batch-{arm}" / "records" / f"{mutant['id']}.a1" / "iter-1" / "prompt.md")
            .read_text()
            for arm in ("digest", "raw")
        ]  # fmt: skip
        assert prompts[0] != prompts[1]
        task = prompts[0].split("\n\n", 1)[0]
        assert prompts[1].startswith(task)  # the same task, only the verifier's result differs
        assert "Traceback (most recent call last)" in prompts[1]


def report(out: Path, fmt: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "greenloop", "report", "--bench", str(out), "--format", fmt],
        capture_output=True, text=True, timeout=hang(120), check=True,
    )  # fmt: skip
    return done.stdout


def test_bench_report_shows_scores_pairs_and_solve_curve_as_text_and_markdown(
    both_arms: tuple[Path, dict[str, Any]],
) -> None:
    out, data = both_arms
    oracle = data["agents"][0]["name"]
    assert oracle == "oracle.py"  # the script, not its interpreter's full path
    text = report(out, "text")
    assert data["agents"][0]["agent"] not in text
    assert f"{oracle} [digest]\n    solved: 2/2 (95 % CI 34-100 %)" in text
    assert "true [raw]\n    solved: 0/2 (95 % CI 0-66 %)" in text
    assert "median iterations to green: 1\n" in text
    assert "results: stalled 2" in text
    assert "median agent s: " in text
    assert "median verifier s: " in text
    digest_vs_raw = text.split("digest vs raw:\n", 1)[1].split("between agents:", 1)[0]
    assert f"{oracle} [digest] vs {oracle} [raw]: on 2 mutants, 0 solved" in digest_vs_raw
    assert "true [digest] vs true [raw]" in digest_vs_raw
    assert f"{oracle} [digest] vs true [digest]: on 2 mutants, 2 solved by the first only" in text
    assert "exact McNemar p = 0.5" in text
    assert f"     1  agent [arm]\n     100  {oracle} [digest]\n" in text  # all within 1
    assert "\n       0  true [raw]\n" in text

    md = report(out, "md")
    assert "| agent [arm] | solved | median iterations to green |" in md
    assert "| true [digest] | 0/2 (95 % CI 0-66 %) | - |" in md
    assert "### Digest vs raw" in md
    assert "### Between agents" in md
    assert f"| {oracle} [raw] | 100 |" in md
    assert json.loads(report(out, "json")) == json.loads((out / "bench.json").read_text())


def test_bench_report_html_draws_one_solve_curve_per_agent_and_arm(
    both_arms: tuple[Path, dict[str, Any]],
) -> None:
    out, data = both_arms
    page = report(out, "html")
    curves = re.findall(r'<polyline class="line (s\d)[^"]*" points="([^"]+)">', page)
    assert [tone for tone, _ in curves] == ["s0", "s1", "s2", "s3"]
    # the raw arm's curves coincide with the digest arm's: dashed over them, and said so
    assert '<polyline class="line s2 dashed"' in page
    assert '<polyline class="line s0 under"' in page
    assert "(the same curve as <code>oracle.py [digest]</code>: drawn dashed on it)" in page
    ends = [points.split()[-1] for _, points in curves]
    top, bottom = PAD_T, CHART_H - PAD_B
    assert [float(end.split(",")[1]) for end in ends] == [top, bottom, top, bottom]
    assert all(points.split()[0].endswith(f",{bottom}.0") for _, points in curves)  # 0 at k=0
    assert "2/2 (95 % CI 34-100 %)" in page
    assert "exact McNemar p = 0.5" in page
    assert not re.search(r"(src|href)=", page)  # self-contained
    assert all(m["id"] in page for m in data["mutants"])


def test_bench_names_agents_by_preset_or_script_and_keeps_them_apart() -> None:
    assert agent_names(
        ["claude", "openai:qwen2.5-coder", "/usr/bin/python3 -u /x/oracle.py /x/a", "/x/fix.sh a"]
    ) == ["claude", "openai:qwen2.5-coder", "oracle.py", "fix.sh"]
    assert agent_names(["sh /a/fix.sh", "sh /b/fix.sh"]) == ["fix.sh #1", "fix.sh #2"]
    assert agent_names(["scripted:/tmp/steps.json"]) == ["scripted:steps.json"]


def test_an_answer_file_has_the_documented_fields_and_its_line_and_col_point_at_old(
    tmp_path: Path,
) -> None:
    """docs/bench.md: line 1-based, col 0-based in UTF-8 bytes, old the bug, new the fix."""
    source = 'def pick(a, b):\n    return "é" if a >= b else "e"\n'  # é: 2 bytes, 1 character
    mutant = next(m for m in mutants_of("calc.py", source) if m.kind == "compare")
    buggy = mutant.apply(source)
    answer = json.loads(seed.write_answer(tmp_path, mutant).read_text())
    documented = (ROOT / "docs" / "bench.md").read_text().split("DIR/answers/<id>.json")[1]
    example = json.loads(re.search(r"```json\n(.*?)```", documented, re.S)[1])  # type: ignore[index]
    assert set(answer) == set(example)
    row = buggy.splitlines()[answer["line"] - 1]
    start = len(row.encode()[: answer["col"]].decode())
    assert row[start : start + len(answer["old"])] == answer["old"]
    fixed = row[:start] + answer["new"] + row[start + len(answer["old"]) :]
    assert fixed == source.splitlines()[answer["line"] - 1]
