"""Fact retention and size of greenloop's digest vs the anchors' truncation strategies (issue 3).

Corpus: every failing case (exit code != 0) in tests/resources/outputs/<tool>/<case>.json, real tool
output captured by scripts/capture_outputs/, with ground-truth facts declared next to each case.
Facts checked (those in ``facts_unverified`` are excluded): the first failing id, the error type,
the message substring, and the frame ``path:LINE`` (its file basename and line on one line is enough:
``c.py:6`` or ``File ".../c.py", line 6``).

greenloop's digest is built as ``greenloop check`` builds it: ProcessResult -> parse_output ->
classify -> StageRun/CheckResult -> build_digest(budget=2000). The baselines get the same captured
text (ANSI stripped, stdout then stderr) and the same budget (2000 tokens = 6000 chars, tokens =
ceil(chars / 3)): raw output cut to budget; first 5,000 + last 5,000 chars; 30,000 chars cut in the
middle; first 128 + last 128 lines; each then cut to the budget.

Also: parse + digest of a 50 MB pytest log (a real failure section repeated).

Then the conformance corpus (tests/resources/real/) per runner, and the real-Python table with
pytest-receptor: bench/digest_real.py.

Run: /tmp/glvenv/bin/python bench/digest.py [--misses bench/digest/misses.md]
     bench/digest.py --project NAME [--project NAME ...]: the conformance table of those projects only
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import digest_real  # the conformance corpus per runner (issues 10, 11)
import digest_scoring as scoring
from _harness import HEADER, REPO, machine, row, today, verdict
from digest_scoring import BASELINES, Case, Score, facts_of, found, greenloop_digest, tokens

from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import classify

CORPUS = REPO / "tests" / "resources" / "outputs"
GOAL_RETENTION, GOAL_MEDIAN_TOKENS, GOAL_50MB_S = 0.97, 400, 1.0


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["exit_code"] != 0:
            cases.append(Case(path.parent.name, path.stem, data))
    return cases


def evaluate(cases: list[Case]) -> tuple[dict[str, dict[str, Score]], list[str]]:
    strategies = ["greenloop", *BASELINES]
    per_tool: dict[str, dict[str, Score]] = {}
    misses = []
    for case in cases:
        facts = facts_of(case)
        texts = {"greenloop": greenloop_digest(case)}
        texts |= {name: fn(case.merged) for name, fn in BASELINES.items()}
        for strategy in strategies:
            text = texts[strategy]
            hits = [f for f, v in facts.items() if found(f, v, text)]
            for key in (case.tool, "ALL"):
                per_tool.setdefault(key, {s: Score() for s in strategies})[strategy].add(
                    len(hits), len(facts), tokens(text)
                )
            if strategy == "greenloop":
                misses += [
                    f"| {case.tool} | {case.name} | {f} | `{v.replace(chr(10), chr(92) + 'n')}` |"
                    for f, v in facts.items()
                    if f not in hits
                ]
    return per_tool, misses


# ---- 50 MB log ----


def big_pytest_log(target: int = 50_000_000) -> tuple[Case, str]:
    """A real pytest run whose failure sections are repeated (renamed) up to ``target`` bytes."""
    case = next(c for c in load_cases() if (c.tool, c.name) == ("pytest", "cascade_40"))
    text = case.merged
    start = text.index("\n___")
    end = text.index("\n=", start + 1)  # the short test summary / final line
    head, sections, tail = text[: start + 1], text[start + 1 : end + 1], text[end + 1 :]
    parts, size, i = [head], len(head) + len(tail), 0
    while size < target:
        chunk = sections.replace("test_convert_usd[", f"test_convert_usd_r{i}[")
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append(tail)
    return case, "".join(parts)


def time_big_log(runs: int = 3) -> tuple[float, float, int, int]:
    """(parse + digest seconds, classify seconds, log size, digest tokens), medians.

    classify is timed apart: the brief's figure is parse_output + build_digest.
    """
    case, log = big_pytest_log()
    root = case.data["cwd_placeholder"]
    argv = tuple(case.data["argv"])
    stage = Stage(name="test", command=argv, why="benchmark")
    samples, cls_samples, toks = [], [], 0
    for _ in range(runs):
        result = ProcessResult(argv=argv, exit_code=1, stdout=log, merged=log, duration_s=1.0)
        start = time.perf_counter()
        parsed = parse_output(
            ParserInput(argv=argv, exit_code=1, stdout=log, merged=log, root=root)
        )
        parse_s = time.perf_counter() - start
        cls_start = time.perf_counter()
        cls = classify(result, parsed, command=stage.display)
        cls_samples.append(time.perf_counter() - cls_start)
        start = time.perf_counter()
        run = StageRun(stage=stage, result=result, parsed=parsed, classification=cls)
        check = CheckResult(
            cascade=Cascade(stages=(stage,), source="benchmark"),
            runs=(run,),
            verdict=cls.verdict,
            duration_s=1.0,
        )
        digest = build_digest(check, root=root, budget=scoring.BUDGET)
        samples.append(parse_s + time.perf_counter() - start)
        toks = digest.tokens
    return statistics.median(samples), statistics.median(cls_samples), len(log), toks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", type=Path, default=REPO / "bench" / "digest" / "misses.md")
    parser.add_argument(
        "--budget", type=int, default=scoring.BUDGET, help="token budget for every strategy"
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        help="only the conformance cases of this project (repeatable): the other tables are skipped",
    )
    args = parser.parse_args()
    scoring.set_budget(args.budget)
    if args.project:  # new projects alone, e.g. measured before they are used to change the code
        digest_real.report(frozenset(args.project))
        return
    cases = load_cases()
    per_tool, misses = evaluate(cases)
    strategies = list(per_tool["ALL"])
    tools = sorted(k for k in per_tool if k != "ALL")
    print(
        f"{len(cases)} failing cases across {len(tools)} tools; budget {scoring.BUDGET} tokens ({scoring.CHARS} chars)\n"
    )
    print("| tool | cases | " + " | ".join(strategies) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in strategies) + " |")
    for key in [*tools, "ALL"]:
        n = len(per_tool[key]["greenloop"].token_list or [])
        name = f"**{key}**" if key == "ALL" else key
        print(
            f"| {name} | {n} | " + " | ".join(per_tool[key][s].cells() for s in strategies) + " |"
        )

    args.misses.parent.mkdir(parents=True, exist_ok=True)
    args.misses.write_text(
        "# Facts greenloop's digest misses (bench/digest.py)\n\n"
        f"Generated {today()} by `/tmp/glvenv/bin/python bench/digest.py`; "
        f"{len(misses)} missed fact(s) over {len(cases)} failing cases.\n\n"
        "| tool | case | fact | expected |\n| --- | --- | --- | --- |\n" + "\n".join(misses) + "\n",
        encoding="utf-8",
    )
    print(f"\n{len(misses)} missed facts written to {args.misses}")

    big_s, cls_s, big_len, big_tokens = time_big_log()
    print(
        f"50 MB log: parse_output + build_digest of {big_len / 1e6:.1f} MB in {big_s:.2f} s "
        f"(median of 3), digest {big_tokens} tokens; classify on the same 50 MB: {cls_s:.2f} s"
    )

    gl = per_tool["ALL"]["greenloop"]
    gl_tokens = gl.token_list or [0]
    median_tok, max_tok = statistics.median(gl_tokens), max(gl_tokens)
    best_baseline = max(per_tool["ALL"][b].retention for b in BASELINES)
    better = gl.retention > best_baseline or (
        gl.retention == best_baseline
        and median_tok
        < min(statistics.median(per_tool["ALL"][b].token_list or [0]) for b in BASELINES)
    )
    ok = (
        gl.retention >= GOAL_RETENTION
        and median_tok <= GOAL_MEDIAN_TOKENS
        and max_tok <= scoring.BUDGET
        and better
        and big_s <= GOAL_50MB_S
    )
    digest_real.report()

    print()
    print(HEADER)
    print(
        row(
            "digest",
            f"{len(cases)} cases / {len(tools)} tools: retention **{gl.retention:.1%}**, median "
            f"**{median_tok:.0f}** tok, max {max_tok} (best baseline {best_baseline:.1%}); "
            f"50 MB parse+digest **{big_s:.2f} s**",
            ">= 97 %, median <= 400 tok, max <= 2000, beats baselines, 50 MB <= 1 s",
            verdict(ok),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()
