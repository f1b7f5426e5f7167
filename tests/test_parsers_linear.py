"""Parsing is linear: no registered parser hangs on long runs of spaces (issue 10).

A regex whose cost grows with the square of the line (a lazy group before ``[ \\t]*$``) turned one
60 000-space pytest id into a minute of parsing. This is a hang guard, not a benchmark (the
per-MB figure is in bench/README.md): each parse gets a generous 2 s of CPU time (not wall time: on a
loaded machine the wall clock also counts other jobs' turns), and the whole run is a child process
killed if it hangs, so a regression fails instead of freezing CI.
"""

from __future__ import annotations

import json
import subprocess
import sys

from greenloop.parsers import PARSERS

PER_PARSE_GUARD_S = 2.0
CHILD = """
import json, sys, time
from greenloop.parsers import PARSERS, ParserInput, parser_for

S = " "
RULE = "=" * 30
INPUTS = {
    "1 MB line of spaces": S * 1_000_000 + "x",
    "pytest id of 60 000 spaces": (
        f"{RULE} short test summary info {RULE}\\n"
        f"FAILED tests/test_a.py::test_x[a{S * 60_000}b] - assert 1 == 2{S * 60_000}!\\n"
        f"{RULE} 1 failed in 0.01s {RULE}\\n"
    ),
    "pyright line of 100 000 spaces": f"  a{S * 100_000}b:1:1 - error: m{S * 100_000}z\\n",
    "indented line of 100 000 spaces": S * 100_000 + "x\\n",
    "black line of 100 000 spaces": f"would reformat x{S * 100_000}y\\n",
    "file:line runs of spaces": f"a:{S * 100_000}:1:{S * 100_000}x\\n    at {S * 100_000}(x)\\n",
    "go subtest 100 000 levels deep": f"--- FAIL: T{'/a' * 100_000} (0.00s)\\nFAIL\\tp\\t0.1s\\n",
}
times = {}
for tool in PARSERS:
    parse = parser_for(tool)
    parse(ParserInput())  # import outside the timing
    for name, text in INPUTS.items():
        inp = ParserInput(argv=(tool,), exit_code=1, stdout=text, stderr=text[-500:], root="/r")
        start = time.process_time()
        parse(inp)
        times[f"{tool}: {name}"] = time.process_time() - start
print(json.dumps(times))
"""


def test_every_parser_parses_long_runs_of_spaces_without_hanging() -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=False
    )
    assert child.returncode == 0, child.stderr[-2000:]
    times: dict[str, float] = json.loads(child.stdout)
    assert {key.split(":")[0] for key in times} == set(PARSERS)
    slow = {key: round(t, 2) for key, t in times.items() if t > PER_PARSE_GUARD_S}
    assert not slow, slow
