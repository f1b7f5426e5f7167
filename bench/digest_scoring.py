"""What bench/digest.py, digest_real.py and digest_live.py share: the budget, the anchors' truncation
strategies, a captured case and its facts, greenloop's digest of it as ``greenloop check`` builds it,
and the retention score."""

from __future__ import annotations

import math
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from case_files import project_root  # a case's repository files, as the conformance test lays them
from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.parsers import ParserInput, installed, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.processes.process_capture import strip_ansi
from greenloop.verify.cascade import CheckResult, StageRun, repo_modules
from greenloop.verify.classify import classify

BUDGET = 2000
CHARS = BUDGET * 3


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
