"""The CI profile of the soak suite (issue 12); ``python bench/soak.py --long`` runs the long one."""

from __future__ import annotations

import random

import pytest
from engine import Tally, config_trials, fuzz_parsers, hostile_tool_calls, signal_trial

from greenloop.redact import redact
from secret_shapes import SHAPES, leaks


def test_soak_signal_trials_keep_every_invariant(tmp_path_factory: pytest.TempPathFactory) -> None:
    rng, tally = random.Random(12), Tally()
    for phase, how in (("agent", "INT2"), ("verify", "HUP"), ("agent", "KILL")):
        signal_trial(tmp_path_factory.mktemp("soak"), phase, how, rng, tally)
    assert tally.violations == []


def test_soak_hostile_tool_calls_malformed_configs_and_fuzzed_parsers_keep_every_invariant() -> (
    None
):
    rng, tally = random.Random(12), Tally()
    assert hostile_tool_calls(tally) >= 100
    assert config_trials(tally) >= 40
    fuzz_parsers(150, rng, tally)
    assert tally.violations == []


def test_soak_seeded_secret_shapes_are_at_least_thirty_and_all_hidden() -> None:
    assert len(SHAPES) >= 30
    assert leaks(redact("\n".join(line for line, _ in SHAPES))) == ["ACME-INTERNAL-7f3a9c2e1d"]
