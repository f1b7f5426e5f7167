"""A verifier's output the agent got from its shell tool -> the text the model reads instead.

The output goes through the stages ``greenloop check`` uses (parsers, classify, digest) as if
greenloop had run the command itself; nothing is run again. The full output is saved, redacted,
under ``<git common dir>/greenloop/tool-output/`` (the newest ``KEEP`` files), and the reply says
where. Output the parsers cannot read passes through as it was (past ``PASS_CAP``: head + tail).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from greenloop.config import load_config
from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.digest.layout import _count_words
from greenloop.integrations.tool_command import Invocation
from greenloop.integrations.tool_hosts import ToolCall
from greenloop.parsers import ParseResult, ParserInput, installed, parse_output
from greenloop.parsers.path_spellings import root_aliases
from greenloop.processes.process import ProcessResult
from greenloop.processes.process_capture import strip_ansi
from greenloop.redact import redact
from greenloop.verify.cascade import CheckResult, StageRun, repo_modules
from greenloop.verify.classify import classify
from greenloop.verify.verdict import Verdict

KEEP = 20
"""Saved outputs kept per repository; older ones are pruned."""
SAVE_CAP = 512 * 1024
"""Characters of one saved output at most (its head and tail): redacting it is most of the
hook's time on a long output, and the hook runs on every shell call."""
PASS_CAP = 20_000
"""Characters of an unparsed output passed through (Claude Code itself keeps 30 000)."""
TOTALS = "totals.json"
PREVIEW_BYTES = 1_800
"""Bytes of a reply Claude Code shows when it persisted the output (about 2 KB), less a margin."""
_NO_DURATION = re.compile(r"(?:[,;] |\()0\.0 s\)")
_NO_EXIT = re.compile(r"\(exit \d+, ")
FEED_HEAD, FEED_TAIL = 24_000, 48_000
"""Characters of a long output the parsers read: its head (the first failure) and its tail (the
summary, pytest's short test summary): the hook runs on every shell call, its budget is 100 ms."""


def replacement(call: ToolCall, found: Invocation, environ: Mapping[str, str]) -> str:
    """The text to put in place of the output; empty: leave the output as it was."""
    root, store = _locate(call.cwd, environ)
    config = load_config(root)
    if not config.tool_output:
        return ""
    output = strip_ansi(call.output)
    if found.exit_code_lost and call.exit_code is not None:  # `| tail`: tail's exit code
        call = replace(call, exit_code=None)
    result = _check(call, found, _feed(output), root)
    if result is None:  # no exit code, and no runner's result in the output to tell one
        why = _unsummed(call, found, output, root)
        return replacement(replace(call, cut=why), found, environ) if why else ""
    run = result.runs[0]
    saved = _save(store, output, call)
    where = _where_saved(saved, call.cwd)
    if call.cut:  # what the host did not pass on proves nothing
        from greenloop.integrations.tool_cut import evidence

        text = evidence(call.cut, call.exit_code, run.parsed, output)
        kept = f"The part received (redacted): {where.split(': ', 1)[1]}" if where else ""
        return "\n".join(line for line in (text, kept) if line)
    partial = _partial_line(found, run.parsed, store, full=not found.partial)
    if result.verdict is Verdict.GREEN:  # one line: the path without how to read it
        return _green_line(found, run, partial, _where_saved(saved, call.cwd, how=False))
    if result.verdict is Verdict.ENV_FAILURE or not _parsed(run):
        return _passed_through(output, run, where)
    digest = build_digest(result, root=root, budget=config.budget, diff=_diff(root))
    text = _only_what_the_host_said(digest.text, call)
    if call.response.get("persistedOutputPath"):  # Claude Code shows such a reply's head only
        return _preview(where, partial, text)
    return "\n".join(line for line in (text, partial, where) if line)


def _preview(where: str, partial: str, text: str) -> str:
    """Where the whole output is, then the digest, cut at a line to PREVIEW_BYTES: where Claude
    Code persisted a long output, the model sees only the first 2 KB of the replacement."""
    kept: list[str] = []
    size = 0
    for line in filter(None, (where, partial, *text.split("\n"))):
        size += len(line.encode()) + 1
        if size > PREVIEW_BYTES:
            kept.append("[digest cut to Claude Code's preview: the rest is in the full output]")
            break
        kept.append(line)
    return "\n".join(kept)


def _only_what_the_host_said(text: str, call: ToolCall) -> str:
    """The headline less the "0.0 s" the digest gives a run of unknown length, and less the exit
    code where the host sent none (Codex: the verdict is the output's): nothing the host did not
    say is shown as if it had."""
    head, sep, rest = text.partition("\n")
    if call.duration_s is None:
        head = _NO_DURATION.sub(")", head, count=1)
    if call.exit_code is None:
        head = _NO_EXIT.sub("(", head, count=1)
    return head + sep + rest


def _feed(output: str) -> tuple[str, int]:
    """The output cut as ``process.run_command`` cuts a long stream: head, a marker, tail."""
    if len(output) <= FEED_HEAD + FEED_TAIL:
        return output, 0
    dropped = len(output) - FEED_HEAD - FEED_TAIL
    marker = f"\n[... {dropped} bytes omitted ...]\n"
    return output[:FEED_HEAD] + marker + output[-FEED_TAIL:], dropped


def _check(
    call: ToolCall, found: Invocation, fed: tuple[str, int], root: Path
) -> CheckResult | None:
    output, dropped = fed
    inp = ParserInput(
        argv=found.words or ("sh", "-c", call.command),
        exit_code=1 if call.exit_code is None else call.exit_code,
        stdout=output,
        merged=output,
        root=str(root),
        root_aliases=root_aliases(str(root), str(call.cwd)),  # the host's folder, maybe logical
    )
    modules = repo_modules(root)
    parsed = installed.own_copies(parse_output(inp), root, modules)  # as check reads a tox env
    exit_code = call.exit_code if call.exit_code is not None else _exit_code_told(parsed, output)
    if exit_code is None and not call.cut:
        return None
    exit_code = 1 if exit_code is None else exit_code  # a cut: only what it shows is told
    process = ProcessResult(
        argv=("sh", "-c", call.command),
        exit_code=exit_code,
        duration_s=call.duration_s or 0.0,
        stdout=output,
        merged=output,
        dropped_bytes=dropped,
    )
    verdict = classify(process, parsed, command=call.command, repo_modules=modules, root=str(root))
    stage = Stage(name=found.kind, command=call.command, why="the agent ran it")
    run = StageRun(stage=stage, result=process, parsed=parsed, classification=verdict)
    cascade = Cascade(stages=(stage,), source="the agent's shell tool")
    return CheckResult(
        cascade=cascade, runs=(run,), verdict=verdict.verdict, duration_s=call.duration_s or 0.0
    )


def _unsummed(call: ToolCall, found: Invocation, output: str, root: Path) -> str:
    """Why an output with no exit code (Codex) stops in the middle of its runner's report (no
    end-of-run summary after the runner's progress): not green, not known red; "" otherwise."""
    from greenloop.verify.classify_output import ended_before_summary

    probe = ProcessResult(
        argv=("sh", "-c", call.command), exit_code=0, stdout=output, merged=output
    )
    inp = ParserInput(argv=found.words, exit_code=0, stdout=output, merged=output, root=str(root))
    if ended_before_summary(probe, parse_output(inp)) is None:
        return ""
    why = (
        "the exit code is another command's"
        if found.exit_code_lost
        else f"{call.host.capitalize()} sends no exit code"
    )
    return f"it ends before the runner's end-of-run summary, and {why}"


_PYTEST_USAGE = re.compile(r"^ERROR: usage: \S*pytest\S* \[options\]", re.M)


def _exit_code_told(parsed: ParseResult, output: str) -> int | None:
    """A host that sends no exit code (Codex CLI): what the runner's own output says. 1 for a
    failure it reports; 0 for its closing summary without one; None for neither, or for a
    runner's report that stops mid-run."""
    from greenloop.verify.classify_output import ended_before_summary

    if _PYTEST_USAGE.search(output):  # pytest refused its options: its usage error, exit 4
        return 4
    failed = parsed.counts.failing or any(f.severity == "error" for f in parsed.failures)
    if parsed.counts.summary_seen:
        return 1 if failed else 0
    probe = ProcessResult(argv=("sh",), exit_code=0, stdout=output, merged=output)
    if ended_before_summary(probe, parsed) is not None:
        return None
    return 1 if failed else None


def _parsed(run: StageRun) -> bool:
    """Whether the parsers read this output: failures found, or a runner's summary."""
    if run.verdict in (Verdict.UNTRUSTED, Verdict.KILLED):
        return True  # the reason it is not green is the news, whatever the parsers read
    return bool(run.parsed.failures) and run.parsed.tool != "generic"


def _green_line(found: Invocation, run: StageRun, partial: str, where: str) -> str:
    counts = run.parsed.counts
    said = _count_words(counts) if counts.ran or counts.skipped else "no problems reported"
    soft = " (with warnings)" if run.classification.soft else ""
    if partial:
        return f"greenloop: {found.runner} passed{soft}: {said}. {partial} {where}".rstrip()
    return f"greenloop: green{soft}: {said} ({found.runner}). {where}".rstrip()


def _passed_through(output: str, run: StageRun, where: str) -> str:
    """Output the digest cannot stand for, as it was; cut to head + tail when it is long."""
    note = ""
    if run.verdict is Verdict.ENV_FAILURE:
        reasons = "; ".join(run.classification.reasons)
        note = f"greenloop: an environment problem, not a failure of the code: {reasons}.\n"
    if len(output) <= PASS_CAP and not note:
        return ""  # untouched: the host keeps the output exactly as it was
    if len(output) > PASS_CAP:
        head, tail = output[: PASS_CAP // 3], output[-(PASS_CAP - PASS_CAP // 3) :]
        cut = len(output) - len(head) - len(tail)
        output = f"{head}\n[... {cut} characters cut by greenloop ...]\n{tail}"
    return redact(f"{note}{output}\n{where}")


def _partial_line(found: Invocation, parsed: ParseResult, store: Path | None, *, full: bool) -> str:
    """Says the run was partial, with the suite's size where it is known; records it when full."""
    counts = parsed.counts
    ran = counts.ran + counts.skipped
    totals = _read_totals(store)
    if full:
        if store is not None and counts.summary_seen and ran and found.kind == "tests":
            _write_totals(store, {**totals, found.runner: ran})
        return ""
    total = (
        counts.collected
        if counts.collected and counts.collected > ran
        else totals.get(found.runner)
    )
    why = "; ".join(found.partial)
    if total and ran and total > ran:
        return f"Partial run ({why}): ran {ran} of {total} tests: not a verdict on the suite."
    return f"Partial run ({why}): not a verdict on the suite."


def _read_totals(store: Path | None) -> dict[str, int]:
    if store is None:
        return {}
    try:
        data = json.loads((store / TOTALS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def _write_totals(store: Path, totals: dict[str, int]) -> None:
    tmp = store / f".{TOTALS}.{os.getpid()}"
    try:
        tmp.write_text(json.dumps(totals), encoding="utf-8")
        os.replace(tmp, store / TOTALS)
    except OSError:
        pass  # a size for a later partial run, no more


def _save(store: Path | None, output: str, call: ToolCall) -> Path | None:
    """The redacted output under the store (head + tail past SAVE_CAP); None if unwritable."""
    if store is None:
        return None
    if len(output) > SAVE_CAP:
        half = SAVE_CAP // 2
        output = (
            f"{output[:half]}\n[... {len(output) - SAVE_CAP} characters cut ...]\n{output[-half:]}"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = store / f"{stamp}-{os.getpid()}.log"
    try:
        store.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(f"$ {call.command}\n{output}"), encoding="utf-8")
    except OSError:
        return None
    _prune(store)
    return path


def _prune(store: Path) -> None:
    try:
        logs = sorted(store.glob("*.log"), key=lambda p: p.name)
        for old in logs[:-KEEP]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def _where_saved(saved: Path | None, cwd: Path, *, how: bool = True) -> str:
    if saved is None:
        return ""
    try:
        shown = os.path.relpath(saved, cwd)
    except ValueError:
        shown = str(saved)
    shown = shown if len(shown) < len(str(saved)) else str(saved)
    hint = " (read it with `grep -n` or `tail -n 80`)" if how else ""
    return f"Full output (redacted): {shown}{hint}."


def _locate(cwd: Path, environ: Mapping[str, str]) -> tuple[Path, Path | None]:
    """The repository root and where outputs are saved (None: nowhere writable)."""
    from greenloop import git
    from greenloop.cachedir import repo_dir

    found = git.discover(cwd) if cwd.is_dir() else None
    if found is None:
        return cwd, None
    own = repo_dir(found[2], environ)
    return found[0], own / "tool-output" if own is not None else None


def _diff(root: Path) -> str | None:
    from greenloop import git
    from greenloop.errors import FatalError

    try:
        return git.diff_head(root) or None
    except FatalError:
        return None
