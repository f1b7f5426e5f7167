"""The soak engine (issue 12): real greenloop processes stopped at random moments, hostile
verifiers, fuzzed parser input, hostile tool calls, malformed configs and seeded secrets, with the
invariants checked after every trial. ``tests/soak`` runs a small profile, ``bench/soak.py --long``
the long one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from process_state import children, command_lines, state
from secret_shapes import PROJECT_PATTERN, SHAPES, leaks

PY = sys.executable
SIGNALS = ("INT", "INT2", "TERM", "HUP", "KILL", "KILLALL")
PHASES = ("baseline", "agent", "verify")
RUN_EXITS = {0, 1, 2, 3, 4, 5, 130}
SECRET_LINES = "\n".join(line for line, _ in SHAPES)
VERIFIER = """\
import os, pathlib, sys, time
m = pathlib.Path(os.environ["SOAK_MARKERS"])
n = len(list(m.glob("verify-*"))) + 1
(m / f"verify-{n}").write_text(str(os.getpid()))
print(pathlib.Path(os.environ["SOAK_SECRETS"]).read_text())
time.sleep(float(os.environ.get("SOAK_VERIFY_S", "0.6")))
print("FAILED test_x.py::test_x - assert 1 == 2")
sys.exit(1)
"""
AGENT = """\
m="$SOAK_MARKERS"; echo $$ > "$m/agent-$GREENLOOP_ITERATION"
i=0
while [ $i -lt 4 ]; do
  i=$((i+1)); c="iter$GREENLOOP_ITERATION-write$i"
  f="agent_${GREENLOOP_ITERATION}_$i.txt"; echo "$c" > "$f"; echo "$f $c" >> "$m/writes"
  sleep 0.15
done
cat "$SOAK_SECRETS"
echo "password: agent-Pw-123456"
"""


@dataclass
class Tally:
    """Trials run and invariant violations found, per kind."""

    trials: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def count(self, kind: str, n: int = 1) -> None:
        self.trials[kind] = self.trials.get(kind, 0) + n

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.violations.append(what)


# ---------------------------------------------------------------- signal trials


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(base: Path) -> tuple[Path, dict[str, str]]:
    root, markers = base / "repo", base / "markers"
    root.mkdir()
    markers.mkdir()
    (base / "secrets.txt").write_text(SECRET_LINES + "\n")
    (base / "verify.py").write_text(VERIFIER)
    (root / "impl.txt").write_text("broken\n")
    (root / ".gitignore").write_text("secret.env\n__pycache__/\n")
    pattern = PROJECT_PATTERN.replace("\\", "\\\\")
    (root / "pyproject.toml").write_text(f'[tool.greenloop]\nredact = ["{pattern}"]\n')
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.email", "soak@example.com"),
        ("config", "user.name", "Soak"),
        ("add", "-A"),
        ("commit", "-qm", "initial"),
    ):
        _git(root, *args)
    (root / "secret.env").write_text("USER_OWN=1\n")  # ignored: the user's own file
    env = {
        **os.environ,
        "SOAK_MARKERS": str(markers),
        "SOAK_SECRETS": str(base / "secrets.txt"),
        "NO_COLOR": "1",
    }
    return root, env


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _phase_marker(markers: Path, phase: str) -> Path:
    return markers / {"baseline": "verify-1", "agent": "agent-1", "verify": "verify-2"}[phase]


def _pids(markers: Path) -> list[int]:
    pids = []
    for marker in markers.glob("*-*"):
        with contextlib.suppress(ValueError, OSError):
            pids.append(int(marker.read_text().strip()))
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    found = state(pid)  # None: gone between the two looks
    return found is None or found[:1] != "Z"


def signal_trial(base: Path, phase: str, how: str, rng: random.Random, tally: Tally) -> None:
    """One run stopped by ``how`` at a random moment of ``phase``; then the invariants."""
    root, env = make_repo(base)
    markers = Path(env["SOAK_MARKERS"])
    initial = _git(root, "rev-parse", "HEAD")
    argv = [PY, "-m", "greenloop", "run", "--agent", AGENT, "-y", "--max-iters", "2"]
    proc = subprocess.Popen(
        [*argv, "--subset", "off", "--", PY, str(base / "verify.py")],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    name = f"{phase}/{how}"
    reached = _wait(lambda: _phase_marker(markers, phase).exists(), 120)
    time.sleep(rng.uniform(0, 0.5))
    _send(proc, how)
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        tally.check(False, f"{name}: greenloop did not stop within 180 s")
    outputs = {"stdout": out, "stderr": err}
    if how.startswith("KILL"):
        tally.check(proc.returncode == -9, f"{name}: exit {proc.returncode} after kill -9")
        outputs["recover"] = _recover(root, env, name, tally)
    else:
        tally.check(proc.returncode in RUN_EXITS, f"{name}: exit {proc.returncode}")
    tally.check(reached, f"{name}: phase never reached")
    check_invariants(root, markers, initial, outputs, name, tally)


def _send(proc: subprocess.Popen[str], how: str) -> None:
    if how == "KILLALL":  # greenloop and its children's groups, as a crash of the whole session
        for pid in children(proc.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        proc.kill()
        return
    sig = {"INT": signal.SIGINT, "INT2": signal.SIGINT, "TERM": signal.SIGTERM}.get(how)
    proc.send_signal(sig or {"HUP": signal.SIGHUP, "KILL": signal.SIGKILL}[how])
    if how == "INT2":
        time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)


def _recover(root: Path, env: dict[str, str], name: str, tally: Tally) -> str:
    if not (root / ".git" / "greenloop" / "lock").exists():
        return ""  # killed before the lock: nothing to recover
    done = subprocess.run(
        [PY, "-m", "greenloop", "recover"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    tally.check(done.returncode == 0, f"{name}: recover exit {done.returncode}: {done.stderr}")
    return done.stdout + done.stderr


def check_invariants(
    root: Path, markers: Path, initial: str, outputs: dict[str, str], name: str, tally: Tally
) -> None:
    tally.check(_wait(lambda: not any(map(alive, _pids(markers))), 10), f"{name}: child alive")
    tally.check(not (root / ".git" / "greenloop" / "lock").exists(), f"{name}: lock left")
    head = _git(root, "rev-parse", "HEAD")
    tally.check(head == initial, f"{name}: branch at {head[:10]}, not the initial commit")
    tally.check(_git(root, "status", "--porcelain") == "", f"{name}: tree not clean")
    secret = root / "secret.env"
    tally.check(
        secret.is_file() and secret.read_text() == "USER_OWN=1\n", f"{name}: ignored file lost"
    )
    _check_writes_reachable(root, markers, name, tally)
    for label, text in {**outputs, **_record_files(root)}.items():
        found = leaks(text)
        tally.check(not found, f"{name}: {len(found)} seeded secret(s) in {label}")


def _check_writes_reachable(root: Path, markers: Path, name: str, tally: Tally) -> None:
    writes = markers / "writes"
    lines = writes.read_text().splitlines() if writes.exists() else []
    refs = _git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()
    for line in lines:
        path, content = line.split(" ", 1)
        found = any(_show(root, ref, path) == content for ref in refs)
        tally.check(found, f"{name}: agent write {path} not under refs/greenloop/")


def _show(root: Path, ref: str, path: str) -> str | None:
    done = subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=root, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def _record_files(root: Path) -> dict[str, str]:
    base = root / ".git" / "greenloop"
    return {
        str(p.relative_to(base)): p.read_text(errors="replace")
        for p in base.rglob("*")
        if p.is_file()
    }


def signal_trials(
    n: int, rng: random.Random, tally: Tally, log: Callable[[str], None] | None = None
) -> None:
    plan = [(PHASES[i % 3], SIGNALS[(i // 3) % len(SIGNALS)]) for i in range(n)]
    rng.shuffle(plan)
    for i, (phase, how) in enumerate(plan, 1):
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
            signal_trial(Path(tmp), phase, how, rng, tally)
        tally.count(f"signal:{how}")
        if log is not None:
            log(f"signal trial {i}/{n} {phase}/{how}: {len(tally.violations)} violations so far")


# ---------------------------------------------------------------- hostile verifiers

HOSTILE_VERIFIERS = {
    "yes": "yes",
    "huge-line": f"{PY} -c \"import sys; sys.stdout.write('x' * 50_000_000)\"",
    "random-bytes": "head -c 3000000 /dev/urandom",
    "ignores-sigterm": "trap '' TERM; sleep 60.1",
    "background-child": "sleep 60.2 & echo started; exit 1",
}


def hostile_verifiers(tally: Tally, names: tuple[str, ...] | None = None) -> None:
    for name in names or tuple(HOSTILE_VERIFIERS):
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
            root, env = make_repo(Path(tmp))
            start = time.monotonic()
            done = subprocess.run(
                [PY, "-m", "greenloop", "check", "--timeout", "3", "--", HOSTILE_VERIFIERS[name]],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            took = time.monotonic() - start
            tally.check(
                done.returncode in {0, 1, 3, 4, 5}, f"verifier {name}: exit {done.returncode}"
            )
            tally.check(took < 60, f"verifier {name}: took {took:.0f} s with --timeout 3")
            tally.check(
                _wait(lambda: not _stray_sleepers(), 30), f"verifier {name}: a child survived"
            )
        tally.count("hostile_verifier")


def _stray_sleepers() -> bool:
    """A ``sleep 60.1`` / ``sleep 60.2`` from a hostile verifier still alive anywhere."""
    for pid, args in command_lines().items():
        if args[:1] == [b"sleep"] and args[1:2] in ([b"60.1"], [b"60.2"]):
            return alive(pid)
    return False


# ---------------------------------------------------------------- parser fuzz


def fuzz_parsers(n: int, rng: random.Random, tally: Tally, limit_s: float = 2.0) -> float:
    """Mutated real captured outputs through ``parse_output``; returns the slowest input (CPU s)."""
    from greenloop.parsers import PARSERS, parse_output
    from greenloop.parsers.model import ParserInput

    outputs = Path(__file__).resolve().parents[1] / "resources" / "outputs"
    corpus = [p.read_text(errors="replace") for p in sorted(outputs.rglob("*.txt"))]
    tools = sorted(PARSERS)
    slowest = 0.0
    for i in range(n):
        text = _mutate(rng.choice(corpus), rng)
        tool = rng.choice(tools)
        inp = ParserInput(
            argv=(tool,), exit_code=rng.choice((0, 1, 2, 137)), merged=text, stdout=text
        )
        took = _timed(lambda inp=inp: parse_output(inp), limit_s)
        slowest = max(slowest, took)
        tally.check(took < limit_s, f"fuzz #{i} ({tool}, {len(text)} chars): {took:.2f} s")
        if took >= limit_s:
            print(tally.violations[-1], flush=True)
    tally.count("fuzz", n)
    return slowest


def _mutate(text: str, rng: random.Random) -> str:
    ops = rng.randint(1, 6)
    for _ in range(ops):
        kind = rng.randrange(6)
        at = rng.randrange(len(text) + 1)
        if kind == 0:
            text = text[:at] + " " * rng.choice((10, 1000, 20_000)) + text[at:]
        elif kind == 1:
            text = text[:at] + "".join(chr(rng.randrange(1, 0x3000)) for _ in range(50)) + text[at:]
        elif kind == 2:
            text = text[: rng.randrange(len(text) + 1)]
        elif kind == 3:
            cut = rng.randrange(len(text) + 1)
            text = text[cut:] + text[:cut]
        elif kind == 4:
            text = text[:at] + rng.choice(("(", "[", "::", "\\", "\x00", "\r")) * 500 + text[at:]
        else:
            text = text * rng.randint(1, 3)
    return text[:400_000]


def _timed(fn: Callable[[], object], limit_s: float) -> float:
    """CPU seconds ``fn`` took; a hang is cut at ``limit_s`` x 3 of CPU (SIGPROF), reported as that.

    CPU time, not wall time: at load 15 on 2 cores the wall clock counts other jobs' turns too, and
    a linear parse read as a hang.
    """

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, limit_s * 3)
    start = time.process_time()
    try:
        fn()
    except TimeoutError:
        pass
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    return time.process_time() - start


# ---------------------------------------------------------------- hostile tool calls

HOSTILE_PATHS = (
    "../outside.txt",
    "/etc/passwd",
    "src/../../outside.txt",
    ".git/config",
    ".GIT/config",
    ".Git/hooks/pre-commit",
    "src/\x00x.py",
    "\ud800.py",
    "loop",
    "loop/x",
    "out_link",
    "out_link/../x",
    "a" * 5000,
    "src/" + "../" * 50,
    " ",
    "src/./../.git/HEAD",
    "dirlink/x.py",
    ".git",
    "~/x",
    "src/a.txt\x00",
)
HOSTILE_REGEXES = (
    "^(a+)+$",
    "(a|aa)*b",
    "(\\w+\\s?)+$",
    "(.*a){20}",
    "[",
    "\\",
    "(?P<x",
    "x{99999}",
)


def hostile_tool_calls(tally: Tally) -> int:
    from greenloop.agents.tools import call_tool

    calls = 0
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        base = Path(tmp)
        root, outside = base / "repo", base / "outside.txt"
        (root / "src").mkdir(parents=True)
        (root / ".git").mkdir()
        (root / ".git" / "config").write_text("[core]\n")
        (root / "src" / "a.txt").write_text("a" * 40 + "!\n")
        outside.write_text("OUTSIDE-CONTENT-42\n")
        (root / "loop").symlink_to("loop")
        (root / "out_link").symlink_to(outside)
        (root / "dirlink").symlink_to(base)
        before = _snapshot(base, root)
        for name, args in _hostile_calls():
            start = time.monotonic()
            try:
                result = call_tool(root, name, json.dumps(args))
            except Exception as exc:  # a crash here is exactly what must not happen
                tally.check(False, f"tool {name}({args!r:.60}) raised {exc!r}")
                continue
            took = time.monotonic() - start
            tally.check(took < 15, f"tool {name}({args!r:.60}) took {took:.1f} s")
            tally.check(
                "OUTSIDE-CONTENT-42" not in result.text, f"tool {name}({args!r:.60}) read outside"
            )
            calls += 1
        tally.check(_snapshot(base, root) == before, "a tool call changed .git or outside files")
    tally.count("tool_call", calls)
    return calls


def _hostile_calls() -> Iterator[tuple[str, dict[str, object]]]:
    for path in HOSTILE_PATHS:
        yield "read_file", {"path": path}
        yield "write_file", {"path": path, "content": "pwned\n"}
        yield "replace_in_file", {"path": path, "old": "a", "new": "b"}
        yield "list_files", {"path": path}
        yield "search", {"pattern": "CONTENT-4", "path": path}
    for regex in HOSTILE_REGEXES:
        yield "search", {"pattern": regex}
    yield "write_file", {"path": "src/s.txt", "content": "lone \ud800 surrogate"}
    yield "search", {"pattern": "CONTENT-4"}


def _snapshot(base: Path, root: Path) -> dict[str, bytes]:
    files = [base / "outside.txt", *sorted((root / ".git").rglob("*"))]
    return {str(p): p.read_bytes() for p in files if p.is_file()}


# ---------------------------------------------------------------- malformed configs

_BAD_VALUES = ('"x"', "-1", "0", "nan", "inf", "-inf", "true", "[1, 2]", "{ a = 1 }", "1e400")
_KEYS = ("timeout", "budget", "max_iters", "max_time", "agent_timeout", "patience", "on_fail")
_WHOLE_FILES = (
    ("pyproject.toml", "[tool]\ngreenloop = 5\n"),
    ("pyproject.toml", '[tool]\ngreenloop = "x"\n'),
    ("pyproject.toml", "tool = 5\n"),
    ("pyproject.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n"),
    ("pyproject.toml", "[tool.greenloop\n"),
    ("pyproject.toml", "\udcff = 1\n"),
    ("greenloop.toml", "stage = 5\n"),
    ("greenloop.toml", "[[stage]]\nname = 5\nrun = 'true'\n"),
    ("greenloop.toml", "[[stage]]\nname = 't'\nrun = 'true'\ntimeout = nan\n"),
    ("greenloop.toml", "[[stage]]\nname = 't'\nrun = 'true'\ntimeout = true\n"),
    ("greenloop.toml", "[[stage]]\nname = 't'\nrun = 'true'\nfix = 'yes'\n"),
    ("greenloop.toml", "[[stage]]\nname = 't'\nrun = 'true'\nextra = 1\n"),
    ("greenloop.toml", 'redact = ["(unclosed"]\n'),
    ("greenloop.toml", 'redact = [""]\n'),
    ("greenloop.toml", "redact = 5\n"),
    ("greenloop.toml", "tmeout = 5\n"),
)


def malformed_configs() -> Iterator[tuple[str, str]]:
    yield from _WHOLE_FILES
    for key in _KEYS:
        for value in _BAD_VALUES:
            yield "greenloop.toml", f"{key} = {value}\n"


def config_trials(tally: Tally, limit: int | None = None) -> int:
    from greenloop.cli.entry import main

    cases = list(malformed_configs())[:limit]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        root, _ = make_repo(Path(tmp))
        for name, text in cases:
            for old in ("greenloop.toml", "pyproject.toml"):
                (root / old).unlink(missing_ok=True)
            (root / name).write_text(text, errors="surrogateescape")
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(["-C", str(root), "check", "--", "true"])
            ok = code == 2 and (
                "configuration" in err.getvalue() or "cannot read" in err.getvalue()
            )
            tally.check(ok, f"config {text[:40]!r}: exit {code}: {err.getvalue()[:120]!r}")
    tally.count("config", len(cases))
    return len(cases)
