"""Fact retention and size of greenloop's digest vs the anchors' truncation strategies (issue 3).

Corpus: every failing case (exit code != 0) in tests/resources/outputs/<tool>/<case>.json, real tool
output captured by scripts/capture_outputs.py, with ground-truth facts declared next to each case.
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
import math
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _harness import HEADER, REPO, machine, row, today, verdict

from case_files import project_root  # a case's repository files, as the conformance test lays them
from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.parsers import ParserInput, installed, parse_output
from greenloop.processes.process import ProcessResult, strip_ansi
from greenloop.verify.cascade import CheckResult, StageRun, repo_modules
from greenloop.verify.classify import classify

CORPUS = REPO / "tests" / "resources" / "outputs"
BUDGET = 2000
CHARS = BUDGET * 3
GOAL_RETENTION, GOAL_MEDIAN_TOKENS, GOAL_50MB_S = 0.97, 400, 1.0


def set_budget(budget: int) -> None:
    """Same budget for greenloop and every baseline (a tighter one shows what truncation loses)."""
    global BUDGET, CHARS
    BUDGET, CHARS = budget, budget * 3


def tokens(text: str) -> int:
    return math.ceil(len(text) / 3)


# ---- the anchors' strategies ----


def raw_head(text: str) -> str:
    return text[:CHARS]


def head_tail_5k(text: str) -> str:
    cut = text if len(text) <= 10_000 else text[:5000] + "\n[...]\n" + text[-5000:]
    return cut[:CHARS]


def middle_30k(text: str) -> str:
    cut = text if len(text) <= 30_000 else text[:15_000] + "\n[...]\n" + text[-15_000:]
    return cut[:CHARS]


def lines_128(text: str) -> str:
    lines = text.splitlines()
    if len(lines) > 256:
        lines = [*lines[:128], "[...]", *lines[-128:]]
    return "\n".join(lines)[:CHARS]


BASELINES: dict[str, Callable[[str], str]] = {
    "raw (head)": raw_head,
    "5k+5k": head_tail_5k,
    "30k middle": middle_30k,
    "128+128 lines": lines_128,
}


# ---- cases and facts ----


@dataclass(frozen=True, slots=True)
class Case:
    tool: str
    name: str
    data: dict  # type: ignore[type-arg]

    @property
    def merged(self) -> str:
        return strip_ansi(self.data["stdout"]) + strip_ansi(self.data["stderr"])


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["exit_code"] != 0:
            cases.append(Case(path.parent.name, path.stem, data))
    return cases


def facts_of(case: Case) -> dict[str, str]:
    """name -> expected value, for the facts the output is known to contain."""
    facts, unverified = case.data["facts"], set(case.data.get("facts_unverified", []))
    out = {}
    ids = facts.get("failing_ids") or []
    if ids and f"failing_ids:{ids[0]}" not in unverified:
        out["id"] = ids[0]
    for key, name in (("error_type", "error_type"), ("message", "message"), ("frame", "frame")):
        value = facts.get(key)
        if value and f"{key}:{value}" not in unverified:
            out[name] = value
    return out


def found(fact: str, value: str, text: str) -> bool:
    if fact == "frame":
        return frame_found(value, text)
    variants = {value, value.replace('\\"', '"')}  # a JSON-escaped fact (pyright --outputjson)
    return any(v in text for v in variants)


def frame_found(value: str, text: str) -> bool:
    """``c.py:6``, ``File ".../c.py", line 6``, or a ``c.py:`` group heading then ``line 6 ...``."""
    path, _, line = value.rpartition(":")
    base = path.rsplit("/", 1)[-1]
    same_line = re.compile(rf"{re.escape(base)}\b.*?\b{line}\b")
    in_group = re.compile(rf"^\s+line {line}\b")
    group = False
    for ln in text.splitlines():
        if base in ln and same_line.search(ln):
            return True
        if ln.rstrip().endswith(f"{base}:"):
            group = True
        elif group and in_group.match(ln):
            return True
        elif group and not ln.startswith("    "):
            group = False
    return False


# ---- greenloop, the way `greenloop check` does it ----


def process_result(case: Case) -> ProcessResult:
    d = case.data
    argv = ("sh", "-c", d["argv"]) if isinstance(d["argv"], str) else tuple(d["argv"])
    code = d["exit_code"]
    sig = -code if code < 0 else None
    stdout, stderr = strip_ansi(d["stdout"]), strip_ansi(d["stderr"])
    return ProcessResult(
        argv=argv,
        exit_code=128 + sig if sig else code,
        signal=sig,
        timed_out=bool(d.get("timed_out")),
        duration_s=1.0,
        stdout=stdout,
        stderr=stderr,
        merged=stdout + stderr,
    )


def greenloop_digest(case: Case) -> str:
    return greenloop_check(case)[1]


def greenloop_check(case: Case) -> tuple[str, str]:
    """(verdict, digest text) as ``greenloop check`` gives them."""
    result = process_result(case)
    argv = case.data["argv"]
    stage = Stage(
        name="verify",
        command=argv if isinstance(argv, str) else tuple(argv),
        why="benchmark",
    )
    root = case.data["cwd_placeholder"]
    parsed = parse_output(
        ParserInput(
            argv=result.argv,
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            merged=result.merged,
            root=root,
        )
    )
    modules = repo_modules(Path(root)) if Path(root).is_dir() else frozenset()
    if "repo_modules" in case.data:  # the conformance corpus records what the checkout had
        modules = frozenset(case.data["repo_modules"])
    with project_root(case.data) as files:  # the files the verdict reads, as the test has them
        parsed = installed.own_copies(parsed, files or Path(root), modules)
        classification = classify(
            result, parsed, command=stage.display, repo_modules=modules,
            root=str(files) if files else "",
        )  # fmt: skip
    run = StageRun(stage=stage, result=result, parsed=parsed, classification=classification)
    check = CheckResult(
        cascade=Cascade(stages=(stage,), source="benchmark"),
        runs=(run,),
        verdict=classification.verdict,
        duration_s=result.duration_s,
    )
    return classification.verdict.value, build_digest(check, root=root, budget=BUDGET).text


# ---- scoring ----


@dataclass
class Score:
    hits: int = 0
    total: int = 0
    token_list: list[int] | None = None

    def add(self, hit: int, total: int, toks: int) -> None:
        self.hits += hit
        self.total += total
        if self.token_list is None:
            self.token_list = []
        self.token_list.append(toks)

    @property
    def retention(self) -> float:
        return self.hits / self.total if self.total else 1.0

    def cells(self) -> str:
        t = self.token_list or [0]
        return f"{self.retention:.1%} ({self.hits}/{self.total}), median {statistics.median(t):.0f} tok, max {max(t)}"


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
        digest = build_digest(check, root=root, budget=BUDGET)
        samples.append(parse_s + time.perf_counter() - start)
        toks = digest.tokens
    return statistics.median(samples), statistics.median(cls_samples), len(log), toks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", type=Path, default=REPO / "bench" / "digest" / "misses.md")
    parser.add_argument(
        "--budget", type=int, default=BUDGET, help="token budget for every strategy"
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        help="only the conformance cases of this project (repeatable): the other tables are skipped",
    )
    args = parser.parse_args()
    set_budget(args.budget)
    if args.project:  # new projects alone, e.g. measured before they are used to change the code
        import digest_real

        digest_real.report(frozenset(args.project))
        return
    cases = load_cases()
    per_tool, misses = evaluate(cases)
    strategies = list(per_tool["ALL"])
    tools = sorted(k for k in per_tool if k != "ALL")
    print(
        f"{len(cases)} failing cases across {len(tools)} tools; budget {BUDGET} tokens ({CHARS} chars)\n"
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
        and max_tok <= BUDGET
        and better
        and big_s <= GOAL_50MB_S
    )
    import digest_real  # the conformance corpus per runner (issues 10, 11)

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
