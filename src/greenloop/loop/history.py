"""Run history: a row per iteration, the typed LoopResult, and what to do next for each result."""

from __future__ import annotations

from dataclasses import dataclass, field

from greenloop.agents.base import Usage
from greenloop.digest import Digest
from greenloop.loop import trust
from greenloop.loop.policy import Result
from greenloop.report.wording import verifier_state
from greenloop.verify.acceptance import Acceptance
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.verdict import Verdict, runs_tests


@dataclass(frozen=True, slots=True, kw_only=True)
class Iteration:
    """One row of the run's history; iteration 0 is the baseline."""

    iteration: int
    verdict: str
    failures: int = 0
    errors: int = 0
    killed: int = 0
    delta: int | None = None
    signature: str = ""
    digest_tokens: int = 0
    agent_exit: int | None = None
    agent_s: float = 0.0
    verifier_s: float = 0.0
    commit: str = ""
    files_changed: tuple[str, ...] = ()
    agent_commits: tuple[str, ...] = ()
    rolled_back: bool = False
    reruns: int = 0
    usage: Usage = field(default_factory=Usage)
    summary: str = ""
    subset: bool = False
    """The verdict came from the failing tests only (issue 7); success is never decided on one."""
    ran: str = ""
    """What the verification ran and why (issue 29): ``2 tests failing first: green; affected: 41
    affected tests of 2,214 (map from green run abc1234): failed``."""
    output_tail: str = ""
    """An agent failure: the last lines the agent printed (all of it in ``iter-N/agent.txt``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    run_id: str
    result: Result
    reason: str
    iterations: int
    max_iters: int
    branch: str
    initial_sha: str
    final_sha: str
    attempt_ref: str
    duration_s: float
    history: tuple[Iteration, ...]
    remaining_failures: tuple[tuple[str, str], ...] = ()
    suspicious: tuple[trust.Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    recommendation: str = ""
    last_digest: str = ""
    record_dir: str = ""
    agent: str = ""
    verifier: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    """Tests that failed and then passed when re-run on their own: never the agent's target."""
    acceptance: Acceptance | None = None
    """The declared tests (issue 28) as the last full run saw them; None: nothing declared."""

    @property
    def exit_code(self) -> int:
        return self.result.exit_code


RECOMMENDATIONS = {
    Result.SUCCESS: "Review the iteration commits (git log) before you push.",
    Result.EXHAUSTED: "The agent ran out of iterations: read the last digest, then raise --max-iters or give a sharper --task.",
    Result.STALLED: "The agent repeated the same failure: give it a hint in --task, or fix this one by hand.",
    Result.CIRCULAR: "The agent went back and forth between the same failures: the fix needs a decision a human should make.",
    Result.REGRESSION: "The last edit made things worse and was rolled back: inspect the attempt ref.",
    Result.NON_CONVERGENCE: "The failure count stopped falling: look at the remaining failures yourself.",
    Result.ENV_FAILURE: "Fix the environment (see the digest), then run again. The agent was not asked to touch code for it.",
    Result.TIMEOUT: "The verifier timed out twice: if its limit is too short for the suite, raise it (--timeout, or timeout in the config); otherwise look for a hang in the code.",
    Result.UNRESOLVED: "The verifier was killed (signal/OOM) twice: run it by hand to see why.",
    Result.SUSPICIOUS_PASS: "Green, but the suite was weakened: review each finding before trusting it.",
    Result.AGENT_FAILURE: "The agent command itself failed: check its output in the run record.",
    Result.BUDGET_EXHAUSTED: "The next agent call would pass the cost or token cap: read the last digest, then raise --max-cost / --max-tokens or fix the rest by hand.",
    Result.FLAKY_ONLY: "Only tests known to be flaky fail (greenloop flaky lists them): make them deterministic, or quarantine them; the agent was not sent them.",
    Result.INTERRUPTED: "Interrupted: nothing was lost; run again when ready.",
}


UNTRUSTED_EXIT = (
    "The verifier exited 0 but its output can't be trusted (the reason above): check what the"
    " agent changed in the verifier's command or configuration (package.json, pytest.ini …)."
)
UNTRUSTED_AT_START = (
    "The verifier exits 0 but its output can't be trusted (the reason above), before any edit:"
    " fix its command or configuration; the agent was not called."
)
UNTRUSTED_HANG = (
    "The tests passed but their process did not exit (the reason above): close what they open"
    " (a teardown that stops the server or timer; mocha --exit or jest --detectOpenHandles show"
    " it), then run again."
)
ALREADY_GREEN = "Nothing to fix: the verifier was already green and the agent was not called."


def recommend(
    result: Result,
    attempt: str,
    *,
    iterations: int = 1,
    output: str = "",
    edited: bool = True,
    weakened: bool = True,
    hung: bool = False,
) -> str:
    """What to do next; ``output``: where the last agent call's full output is kept;
    ``edited``: that call changed a file; ``weakened``: a suspicious pass has findings in the diff
    (else the verifier's exit 0 itself was not trusted); ``hung``: its process never exited."""
    if result is Result.SUCCESS and iterations == 0:
        return ALREADY_GREEN
    text = RECOMMENDATIONS[result]
    if output and result is Result.AGENT_FAILURE:
        text = f"The agent command itself failed: its full output is in {output}"
    elif result is Result.SUSPICIOUS_PASS and hung:
        text = UNTRUSTED_HANG
    elif result is Result.SUSPICIOUS_PASS and not weakened:
        text = UNTRUSTED_AT_START if iterations == 0 else UNTRUSTED_EXIT
    elif output and result is Result.STALLED and not edited:
        text = (
            "The agent exited without changing a file: check that it edits the working tree"
            f" (a preset needs its edit permissions), and read what it said in {output}"
        )
    if attempt:
        text += f" The attempt is kept: git log {attempt}"
    return text


def baseline_row(check: CheckResult, digest: Digest) -> Iteration:
    failing = check.failing
    counts = failing.parsed.counts if failing else None
    return Iteration(
        iteration=0,
        verdict=row_verdict(check),
        failures=failures_only(check),
        errors=counts.errors if counts and check.cascade.workspace is None else 0,
        killed=len(failing.parsed.killed) if failing else 0,
        signature=digest.signature,
        digest_tokens=digest.tokens,
        verifier_s=round(check.duration_s, 3),
    )


def row_verdict(check: CheckResult) -> str:
    """The verdict a history row records: ``crashed`` for a test run stopped before any test."""
    return "crashed" if check.crashed else check.verdict.value


def failures_only(check: CheckResult) -> int:
    failing = check.failing
    if failing is None:
        return 0
    counts = failing.parsed.counts
    if check.cascade.workspace is not None:  # every failing package's, errors included
        return failing_count(check)
    return counts.failed if counts.summary_seen else failing_count(check) - counts.errors


def failing_count(check: CheckResult) -> int:
    run = check.failing
    if run is None:
        return 0
    if check.cascade.workspace is not None:  # a monorepo's: every failing package counts
        return sum(failing_count_of(r) for r in check.runs if r.verdict is not Verdict.GREEN)
    return failing_count_of(run)


def failing_count_of(run: StageRun) -> int:
    """One stage's failures as the policy counts them."""
    counts = run.parsed.counts
    return counts.failing if counts.summary_seen else len(run.parsed.errors) or 1


def collected_of(check: CheckResult) -> int | None:
    """The tests the first test stage ran; a lint or type stage's summary counts no tests."""
    for r in check.runs:
        c = r.parsed.counts
        if c.collected is not None:
            return c.collected
        if c.summary_seen and runs_tests(r.parsed):
            return c.ran + c.skipped
    return None


def failing_text(check: CheckResult) -> str:
    if check.verdict in (Verdict.GREEN, Verdict.TIMEOUT, Verdict.KILLED, Verdict.ENV_FAILURE):
        return verifier_state(check.verdict.value, 0)
    if check.crashed:
        return "crashed before any test ran (failed)"
    return f"{failing_count(check)} failing ({check.verdict.value})"
