"""Parsing is linear: no registered parser hangs on long runs of spaces (issue 10), and no regex
that reads tool output is quadratic on a long run of one character class (issue 37).

A regex whose cost grows with the square of the line (a lazy group before ``[ \\t]*$``) turned one
60 000-space pytest id into a minute of parsing. This is a hang guard, not a benchmark (the
per-MB figure is in bench/README.md): each parse gets a generous 2 s of CPU time (not wall time: on a
loaded machine the wall clock also counts other jobs' turns), and the whole run is a child process
killed if it hangs, so a regression fails instead of freezing CI.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import greenloop
from greenloop.parsers import PARSERS
from greenloop.redact import redact
from limits import hang

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
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    times: dict[str, float] = json.loads(child.stdout)
    assert {key.split(":")[0] for key in times} == set(PARSERS)
    slow = {key: round(t, 2) for key, t in times.items() if t > PER_PARSE_GUARD_S}
    assert not slow, slow


# Every regex that reads tool output, collected from the source (a new one is checked without
# being listed): ``re.<fn>(pattern, …)`` calls whose pattern is a literal or a module constant,
# and the compiled patterns and uppercase constant strings a module keeps at its top level.
REGEX_MODULES = ("parsers", "verify", "digest", "redact.py", "integrations/tool_*.py")
# Each pattern reads 100 kB of one character class (ending in a character no pattern expects, so
# a match is tried and fails at every position), and 100 kB of spaces, tabs or letters after one
# of the pattern's own words, bare or with a colon ("expected" + spaces, "Tests:" + spaces).
UNITS = (" ", "\t", "a", "7", ".", "a ", ":", "-", "\n", " \n", "/", "_", "=", "'", "(", "[", "<")
UNITS += ("a:", ": ", "\r\n", "7.", "\t ", "@", "*", "#", "|", "E ", "\\", "::", "a/", "a-")
KB100 = 100_000
# Linear on 100 kB is milliseconds; a quadratic regex is seconds to minutes. A pattern over
# SCALING_FLOOR_S must also scale linearly: 4x the text in < 8x the time (quadratic is 16x).
LINEAR_GUARD_S = 1.0
SCALING_FLOOR_S = 0.05
REGEX_CHILD = """
import json, re, sys, time
patterns = json.loads(sys.stdin.read())
units, size = json.loads(sys.argv[1]), int(sys.argv[2])


def cost(rx, uses, text):
    start = time.process_time()
    if uses & {"search", "finditer", "findall", "sub", "subn", "split"}:
        for _ in rx.finditer(text):
            pass
    if "match" in uses:
        rx.match(text)
    if "fullmatch" in uses:
        rx.fullmatch(text)
    return time.process_time() - start


def inputs(pattern, n):
    for unit in units:
        yield repr(unit), unit * (n // len(unit)) + "\\u00a7"
    for word in list(dict.fromkeys(re.findall(r"[A-Za-z]{3,}", pattern)))[:4]:
        for head in (word, word + ":"):
            for unit in (" ", "\\t", "a"):
                yield f"{head!r} + {unit!r}", head + unit * (n // len(unit)) + "\\u00a7"


slow = []
for pattern, flags, uses, where in patterns:
    rx, uses = re.compile(pattern, flags), set(uses)
    for name, text in inputs(pattern, size):
        big = cost(rx, uses, text)
        if big < {floor}:
            continue
        small = cost(rx, uses, text[: len(text) // 4] + "\\u00a7")
        if big > {guard} or big > 8 * max(small, 1e-3):
            slow.append([where, pattern[:80], name, round(small, 3), round(big, 3)])
print(json.dumps(slow))
""".replace("{floor}", str(SCALING_FLOOR_S)).replace("{guard}", str(LINEAR_GUARD_S))


def _module_paths() -> list[Path]:
    src = Path(greenloop.__file__).parent
    paths: list[Path] = []
    for name in REGEX_MODULES:
        found = sorted(src.glob(name)) if "*" in name or name.endswith(".py") else None
        paths += found if found is not None else sorted((src / name).glob("*.py"))
    return paths


def _module_name(path: Path) -> str:
    parts = path.relative_to(Path(greenloop.__file__).parent.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _methods(tree: ast.AST) -> dict[str, set[str]]:
    """name -> the methods called on it (``_WORDS.match(…)``: {"match"})."""
    called: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            called.setdefault(func.value.id, set()).add(func.attr)
    return called


def _compiled_names(tree: ast.AST) -> dict[int, str]:
    """id of a ``re.compile(…)`` call -> the name it is assigned to (``a, b = re.compile(…), …``)."""
    names: dict[int, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = (
            zip(target.elts, value.elts, strict=False)
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
            else [(target, value)]
        )
        names |= {id(v): t.id for t, v in pairs if isinstance(t, ast.Name)}
    return names


RE_METHODS = {"search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}


def _regexes_of(path: Path) -> dict[tuple[str, int], tuple[set[str], str]]:
    module = importlib.import_module(_module_name(path))
    scope, tree = dict(vars(module)), ast.parse(path.read_text(encoding="utf-8"))
    called, compiled = _methods(tree), _compiled_names(tree)
    found: dict[tuple[str, int], tuple[set[str], str]] = {}

    def add(pattern: object, flags: int, uses: set[str], where: str) -> None:
        if isinstance(pattern, re.Pattern):
            pattern, flags = pattern.pattern, pattern.flags
        if isinstance(pattern, str):
            with contextlib.suppress(re.error):
                key = (pattern, re.compile(pattern, flags).flags)
                found.setdefault(key, (set(), where))[0].update(uses)

    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            continue
        if func.value.id != "re" or func.attr not in RE_METHODS | {"compile"} or not node.args:
            continue
        at = {"compile": 1, "sub": 3, "subn": 3}.get(func.attr, 2)
        flag = node.args[at] if len(node.args) > at else None
        try:
            pattern = eval(compile(ast.Expression(node.args[0]), str(path), "eval"), scope)
            flags = eval(compile(ast.Expression(flag), str(path), "eval"), scope) if flag else 0
        except Exception:  # a pattern built from a function's locals: its parts are constants
            continue
        name = compiled.get(id(node), "")
        uses = {func.attr} if func.attr != "compile" else called.get(name, set()) & RE_METHODS
        add(pattern, flags, uses, f"{path.name}:{node.lineno}")
    for name, value in vars(module).items():
        stack, seen = [value], 0
        while stack and seen < 500:
            item, seen = stack.pop(), seen + 1
            if isinstance(item, tuple | list) and not name.endswith("_SPECS"):  # parts of _SHAPES
                stack.extend(item)
            elif isinstance(item, re.Pattern):
                add(item, 0, called.get(name, set()) & RE_METHODS, f"{path.name}:{name}")
            elif isinstance(item, str) and name.lstrip("_").isupper() and item is not value:
                add(item, re.M, {"search"}, f"{path.name}:{name}")
    return found


def test_every_regex_that_reads_tool_output_is_linear_on_100_kb_of_each_character_class() -> None:
    found: dict[tuple[str, int], tuple[set[str], str]] = {}
    for path in _module_paths():
        for key, (uses, where) in _regexes_of(path).items():
            found.setdefault(key, (set(), where))[0].update(uses)
    assert len(found) > 250, len(found)  # the collection itself still works
    patterns = [
        [pattern, flags, sorted(uses or {"search"}), where]
        for (pattern, flags), (uses, where) in found.items()
    ]
    child = subprocess.run(
        [sys.executable, "-c", REGEX_CHILD, json.dumps(UNITS), str(KB100)],
        input=json.dumps(patterns),
        capture_output=True,
        text=True,
        timeout=hang(1800),
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    slow = json.loads(child.stdout)
    assert not slow, slow  # [where, pattern, input, s on 25 kB, s on 100 kB]


def _redact_cpu(text: str) -> float:
    """The least CPU time of three redactions (another job's turn is not counted)."""
    times = []
    for _ in range(3):
        start = time.process_time()
        redact(text, secrets=())
        times.append(time.process_time() - start)
    return min(times)


def test_redaction_is_linear_on_100_kb_of_secret_looking_pairs_on_one_line() -> None:
    # each `token: token:` pair looked back to the line's start for a frame's `:LINE in name`
    for unit in ("token: ", "password=abcd1234 ", "secret ", "api_key: x1y2z3w4 "):
        small = _redact_cpu(unit * (KB100 // 4 // len(unit)))
        big = _redact_cpu(unit * (KB100 // len(unit)))
        assert big < SCALING_FLOOR_S or big < 8 * max(small, 1e-3), (unit, small, big)
