"""A plugin's suite prints pytest sessions inside its failures (pytester), summaries and all (issue 26).

pytest-mock's failing introspection tests show each inner run's output as captured stdout: its
``FAILURES`` blocks and a short summary whose ``FAILED test_detailed_introspection.py::test`` lines
are meant. They were read as the run's own: 3 phantom failing tests (one more from a block title).
"""

from __future__ import annotations

import json
from pathlib import Path

from test_conformance import check

REAL = Path(__file__).parent / "resources" / "real"


def test_failures_of_sessions_printed_inside_a_failure_are_not_the_runs_own() -> None:
    data = json.loads((REAL / "pytest" / "pytest-mock-2" / "case.json").read_text("utf-8"))
    out = check(data)
    ids = {f["id"] for f in out["failures"] if f["kind"] == "test"}
    assert ids == set(data["facts"]["failing_ids"]), ids
    assert "test_detailed_introspection.py::test" not in out["digest"]
    assert "6 failed, 85 passed" in out["digest"]
