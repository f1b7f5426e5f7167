"""The soak suite's long profile (issue 12): kill/signal trials across phases, hostile verifiers,
fuzzed parser input, hostile tool calls, malformed configs, seeded secrets; invariants after each.

    python bench/soak.py --long            # >= 200 signal trials, 10 000 fuzz inputs, ...
    python bench/soak.py                   # the CI profile's size
    python bench/soak.py --long --signals 60 --seed 7

Prints the figures and one markdown row; exits 1 when any invariant was violated.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "soak")]

from engine import (  # noqa: E402
    Tally,
    config_trials,
    fuzz_parsers,
    hostile_tool_calls,
    hostile_verifiers,
    signal_trials,
)

from secret_shapes import SHAPES  # noqa: E402


def log(line: str) -> None:
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--long", action="store_true")
    parser.add_argument("--signals", type=int, help="signal trials (long: 216, else 6)")
    parser.add_argument("--fuzz", type=int, help="fuzzed parser inputs (long: 10 000, else 150)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--only", choices=("signals", "rest"), help="run one half (in parallel)")
    args = parser.parse_args()
    signals = args.signals if args.signals is not None else (216 if args.long else 6)
    fuzz = args.fuzz if args.fuzz is not None else (10_000 if args.long else 150)
    rng, tally, started = random.Random(args.seed), Tally(), time.monotonic()
    timings = {}
    steps = (
        ("tool calls", lambda: hostile_tool_calls(tally)),
        ("configs", lambda: config_trials(tally)),
        ("fuzz", lambda: fuzz_parsers(fuzz, rng, tally)),
        ("hostile verifiers", lambda: hostile_verifiers(tally)),
        ("signal trials", lambda: signal_trials(signals, rng, tally, log)),
    )
    if args.only:
        steps = tuple(s for s in steps if (s[0] == "signal trials") == (args.only == "signals"))
    for name, step in steps:
        t0 = time.monotonic()
        result = step()
        timings[name] = time.monotonic() - t0
        print(
            f"{name}: {timings[name]:.0f} s {'' if result is None else f'({result})'}", flush=True
        )
    wall = time.monotonic() - started
    print("trials:", dict(sorted(tally.trials.items())))
    print(f"seeded secret shapes checked in every output and record file: {len(SHAPES)}")
    print(f"violations: {len(tally.violations)}")
    for violation in tally.violations[:50]:
        print("  ", violation)
    kills = sum(v for k, v in tally.trials.items() if k.startswith("signal:"))
    print(
        f"| soak (issue 12) | {kills} kill/signal trials, {tally.trials.get('fuzz', 0)} fuzz inputs, "
        f"{tally.trials.get('tool_call', 0)} tool calls, {tally.trials.get('config', 0)} configs, "
        f"{tally.trials.get('hostile_verifier', 0)} hostile verifiers, {len(SHAPES)} secret shapes "
        f"| `python bench/soak.py{' --long' if args.long else ''}` | **{len(tally.violations)} "
        f"violations** in {wall:.0f} s | 0 | {'PASS' if not tally.violations else 'FAIL'} |"
    )
    return 1 if tally.violations else 0


if __name__ == "__main__":
    sys.exit(main())
