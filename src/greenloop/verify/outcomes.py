"""Test outcomes remembered across runs (issue 39): which tests failed on which tree, so a test
that both passed and failed on one tree is known-flaky in every later run, not only in the run
that re-ran it.

One JSON line per verified stage in ``<git common dir>/greenloop/outcomes.jsonl``: the tree it
ran on (HEAD and the hashes of every changed file), the check (the tool or script the stage runs),
whether it ran the stage whole, the tests that failed, and the tests greenloop's own re-run saw
pass alone. Appends and the trimming to the newest ``KEEP`` lines happen under one ``flock``, so
two processes recording at once lose nothing and never interleave a line. Pure reading otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from greenloop.verify.cascade import CheckResult, StageRun

FILE = "outcomes.jsonl"
KEEP = 5000
"""Lines kept (the oldest dropped past it): a few weeks of an agent's runs."""
TRIM_AT = KEEP + KEEP // 4
REAL_AFTER = 3
"""A known-flaky test that fails on this many runs of one tree in a row is a real failure again."""
CLEAN_AFTER = 10
"""... and it leaves the list after this many runs of its check in a row that it did not fail."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One verified stage's tests, as recorded."""

    tree: str
    check: str
    """The stage's command as run (its folder included): outcomes compare within one command."""
    full: bool
    """The stage ran whole with its runner's summary: a test it does not list as failing passed."""
    failed: tuple[str, ...] = ()
    flipped: tuple[str, ...] = ()
    """Tests that failed, then passed when greenloop re-ran them alone on this tree."""
    source: str = ""
    at: float = 0.0


@dataclass(slots=True)
class Flaky:
    """A known-flaky test: passed and failed on one tree."""

    test: str
    flips: int = 0
    last_seen: float = 0.0
    trees: set[str] = field(default_factory=set)

    def as_json(self) -> dict[str, object]:
        return {
            "test": self.test,
            "flips": self.flips,
            "last_seen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.last_seen)),
            "trees": sorted(self.trees),
        }


def path_in(greenloop_dir: Path) -> Path:
    return greenloop_dir / FILE


def record(greenloop_dir: Path, outcomes: Iterable[Outcome]) -> None:
    """Append ``outcomes``; never raises (memory is a help, not a condition of verifying)."""
    lines = [_line(o) for o in outcomes]
    if not lines:
        return
    with contextlib.suppress(OSError), _locked(greenloop_dir):
        target = path_in(greenloop_dir)
        with target.open("a", encoding="utf-8") as file:
            file.write("".join(lines))
        _trim(target)


def forget(greenloop_dir: Path, test: str) -> None:
    """Forget ``test`` (``*``: every test): the outcomes before now no longer count for it."""
    entry = json.dumps({"forget": test, "at": round(time.time(), 3)}) + "\n"
    with _locked(greenloop_dir), path_in(greenloop_dir).open("a", encoding="utf-8") as file:
        file.write(entry)


def read(greenloop_dir: Path) -> list[dict[str, object]]:
    try:
        text = path_in(greenloop_dir).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                out.append(item)
    return out


def known_flaky(
    entries: Sequence[Mapping[str, object]],
    *,
    real_after: int = REAL_AFTER,
    clean_after: int = CLEAN_AFTER,
) -> dict[str, Flaky]:
    """The tests that passed and failed on one tree, less those failing ``real_after`` runs of
    one tree in a row (a real failure again) or clean for ``clean_after`` runs of their check."""
    outcomes = list(_since_forgotten(entries))
    found: dict[str, Flaky] = {}
    for test, check in {(t, o.check) for o in outcomes for t in (*o.failed, *o.flipped)}:
        mine = [o for o in outcomes if o.check == check]
        flaky = _flips(test, mine)
        if flaky is not None and not _settled(test, mine, real_after, clean_after):
            found[test] = flaky
    return found


def _flips(test: str, outcomes: Sequence[Outcome]) -> Flaky | None:
    flaky = Flaky(test=test)
    by_tree: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_tree.setdefault(o.tree, []).append(o)
    for tree, runs in by_tree.items():
        failed = [o for o in runs if test in o.failed]
        passed = [o for o in runs if test in o.flipped or (o.full and test not in o.failed)]
        if failed and passed:
            flaky.flips += min(len(failed), len(passed))
            flaky.trees.add(tree)
            flaky.last_seen = max(flaky.last_seen, *(o.at for o in failed + passed))
    return flaky if flaky.flips else None


def _settled(test: str, outcomes: Sequence[Outcome], real_after: int, clean_after: int) -> bool:
    """Failing every one of the last ``real_after`` runs of one tree, or clean for the last
    ``clean_after`` full runs of its check."""
    latest = outcomes[-1].tree if outcomes else ""
    on_tree = [o for o in outcomes if o.tree == latest and (o.full or test in o.failed)]
    tail = on_tree[-real_after:]
    if len(tail) == real_after and all(test in o.failed for o in tail):
        return True
    full = [o for o in outcomes if o.full]
    recent = full[-clean_after:]
    return len(recent) == clean_after and not any(test in o.failed for o in recent)


def _since_forgotten(entries: Sequence[Mapping[str, object]]) -> Iterator[Outcome]:
    """The outcomes, each test's failures before its last ``forget`` left out."""
    forgotten: dict[str, int] = {}
    for i, e in enumerate(entries):
        if isinstance(e.get("forget"), str):
            forgotten[str(e["forget"])] = i
    everyone = forgotten.get("*", -1)
    for i, e in enumerate(entries):
        if "forget" in e or not isinstance(e.get("tree"), str):
            continue

        def kept(tests: object, i: int = i) -> tuple[str, ...]:
            names = [str(t) for t in tests] if isinstance(tests, list) else []
            return tuple(t for t in names if i > max(everyone, forgotten.get(t, -1)))

        yield Outcome(
            tree=str(e["tree"]),
            check=str(e.get("check", "")),
            full=e.get("full") is True,
            failed=kept(e.get("failed")),
            flipped=kept(e.get("flipped")),
            source=str(e.get("source", "")),
            at=_seconds(e.get("at")),
        )


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _line(o: Outcome) -> str:
    data = {
        "at": round(o.at or time.time(), 3),
        "tree": o.tree,
        "check": o.check,
        "full": o.full,
        "failed": list(o.failed),
        "flipped": list(o.flipped),
        "source": o.source,
    }
    return json.dumps(data, separators=(",", ":")) + "\n"


@contextlib.contextmanager
def _locked(greenloop_dir: Path) -> Iterator[None]:
    greenloop_dir.mkdir(parents=True, exist_ok=True)
    with (greenloop_dir / "outcomes.lock").open("a") as lock:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): appends of one short line each, unlocked
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _trim(target: Path) -> None:
    """Past TRIM_AT lines, keep the newest KEEP (a fresh file put in place: readers see either)."""
    with target.open("rb") as file:
        lines = file.readlines()
    if len(lines) <= TRIM_AT:
        return
    fresh = target.with_name(f".{FILE}.{os.getpid()}")
    fresh.write_bytes(b"".join(lines[-KEEP:]))
    os.replace(fresh, target)


def tree_key(root: Path) -> str | None:
    """What the tests ran on: HEAD and every changed file's content, hashed; None off git."""
    import hashlib

    from greenloop.errors import FatalError
    from greenloop.verify.cache import tree_state

    try:
        state = tree_state(root)
    except FatalError:
        return None
    if state is None:
        return None
    return hashlib.sha256(json.dumps(state).encode()).hexdigest()[:16]


def of_check(
    result: CheckResult, tree: str, *, source: str, full: bool = True, flipped: Sequence[str] = ()
) -> list[Outcome]:
    """One outcome per stage that ran tests (a linter's findings are not test outcomes)."""
    from greenloop.verify.flaky import failing_test_ids
    from greenloop.verify.verdict import Verdict, runs_tests

    out = []
    for run in result.runs:
        if not runs_tests(run.parsed) or run.verdict not in (Verdict.GREEN, Verdict.FAILED):
            continue
        whole = full and run.parsed.counts.summary_seen
        failed = failing_test_ids(run) if run.verdict is Verdict.FAILED else ()
        # a flip failed here too: the re-run that passed it took it out of ``result``
        failed = tuple(dict.fromkeys((*failed, *flipped)))
        # the stage's exact command in its folder: `pytest tests/a.py` never vouches for a test
        # of another file, nor one package's `cargo test` for another's test of the same name
        check = run.stage.display
        out.append(
            Outcome(
                tree=tree, check=check, full=whole, failed=failed, flipped=tuple(flipped),
                source=source, at=time.time(),
            )
        )  # fmt: skip
    return out


def with_known_flaky(result: CheckResult, known: Mapping[str, Flaky]) -> CheckResult:
    """``result`` with its known-flaky failures named and put last in each stage, so the first
    failure the digest shows is another one; ``flaky_only`` when no other failure is left."""
    from dataclasses import replace

    from greenloop.verify.verdict import Verdict

    failing = result.failing
    if failing is None or failing.verdict is not Verdict.FAILED or not known:
        return result
    named = tuple(f.id for f in failing.parsed.errors if f.id in known)
    if not named:
        return result
    runs = tuple(_flaky_last(r, known) for r in result.runs)
    others = [f for r in runs if r.verdict is Verdict.FAILED for f in r.parsed.errors]
    only = all(f.id in known for f in others) and all(
        r.verdict in (Verdict.GREEN, Verdict.FAILED) for r in runs
    )
    return replace(result, runs=runs, known_flaky=named, flaky_only=only)


def _flaky_last(run: StageRun, known: Mapping[str, Flaky]) -> StageRun:
    from dataclasses import replace

    ordered = sorted(run.parsed.failures, key=lambda f: f.id in known)  # stable: the rest first
    if ordered == list(run.parsed.failures):
        return run
    return replace(run, parsed=replace(run.parsed, failures=tuple(ordered)))


def flaky_note(result: CheckResult) -> str:
    """The digest's one line about known-flaky failures ("" when there are none)."""
    if not result.known_flaky:
        return ""
    names = ", ".join(result.known_flaky[:5])
    more = f" and {len(result.known_flaky) - 5} more" if len(result.known_flaky) > 5 else ""
    if result.flaky_only:
        return (
            f"Only known-flaky tests failed: {names}{more} (each passed and failed on one tree "
            "before; `greenloop flaky` lists them): not green, and no failure of the code to fix."
        )
    return (
        f"Known flaky (passed and failed on one tree before), not the first to fix: {names}{more}."
    )


def remember(
    root: Path,
    result: CheckResult,
    tree: str | None,
    *,
    source: str,
    real_after: int = REAL_AFTER,
    clean_after: int = CLEAN_AFTER,
) -> CheckResult:
    """Record ``result``'s outcomes on ``tree``, then name its known-flaky failures."""
    from greenloop import git
    from greenloop.cachedir import repo_dir
    from greenloop.errors import FatalError

    try:
        own = repo_dir(git.common_dir(root))
    except FatalError:
        return result
    if own is None or tree is None:
        return result
    record(own, of_check(result, tree, source=source))
    known = known_flaky(read(own), real_after=real_after, clean_after=clean_after)
    return with_known_flaky(result, known)


def main_flaky(args: argparse.Namespace) -> int:
    """``greenloop flaky [--format json] [--forget TEST | --all]``."""
    import sys

    from greenloop import git
    from greenloop.cachedir import repo_dir
    from greenloop.config import load_config
    from greenloop.errors import FatalError

    root = Path(args.repo).resolve()
    own = repo_dir(git.common_dir(root))
    if own is None:
        raise FatalError("no git dir greenloop can write: nothing is remembered here")
    if args.forget or args.all:
        forget(own, args.forget or "*")
        print(f"greenloop: forgot {args.forget or 'every test'}'s outcomes so far")
        return 0
    config = load_config(git.get_root(root) or root)
    found = known_flaky(
        read(own), real_after=config.flaky_real_after, clean_after=config.flaky_clean_after
    )
    listed = sorted(found.values(), key=lambda f: -f.last_seen)
    if args.format == "json":
        sys.stdout.write(json.dumps([f.as_json() for f in listed], indent=2) + "\n")
        return 0
    if not listed:
        print("no known-flaky test (none has passed and failed on one tree)")
    for f in listed:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(f.last_seen))
        trees = f"{len(f.trees)} tree{'s' if len(f.trees) != 1 else ''}"
        print(f"{f.test}  {f.flips} flip{'s' if f.flips != 1 else ''} on {trees}, last {when}")
    return 0
