"""Run one command safely: own session, stdin closed, both streams captured and capped, hangs killed.

This is the only module that imports subprocess.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from greenloop import signals
from greenloop.redact import redact

TYPE_CHECKING = False  # not typing's: the Stop hook imports this module on every agent turn
if TYPE_CHECKING:
    from greenloop.processes.orphans import Escaped

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 512 * 1024
KILL_GRACE_S = 2.0
# After the main process exits, how long to wait for pipes held open by leftover children.
DRAIN_S = 1.0
READ_SIZE = 1 << 20

# What every command greenloop starts gets: no pager, and no colour from cargo itself. Nothing a
# program under test could read as behaviour: NO_COLOR, FORCE_COLOR, TQDM_DISABLE … reach it as the
# caller set them (a colour library's tests assert colours are on by default: kleur ran red under a
# forced NO_COLOR=1), and the colour a tool prints is stripped as its output is read.
QUIET_ENV = {"CARGO_TERM_COLOR": "never", "PAGER": "cat", "GIT_PAGER": "cat"}
# Exit statuses a shell reports for a child killed by these signals (128 + N).
FATAL_SIGNALS = frozenset({4, 6, 7, 8, 9, 11, 15})

# Readers of what a command prints as it arrives (the live status line, issue 13). Module state
# rather than a parameter: commands run several layers below the CLI that owns the display.
_WATCHERS: list[Callable[[bytes], None]] = []

_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST (hyperlinks, titles)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves)
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessResult:
    """What happened when one command ran."""

    argv: tuple[str, ...]
    """The argv actually executed (a shell string runs as ``("sh", "-c", cmd)``)."""
    exit_code: int
    """Exit status; 128+N when killed by signal N, 127 when the executable is missing."""
    signal: int | None = None
    """The signal that killed the command (directly, or its child under a shell), if any."""
    timed_out: bool = False
    limit_s: float | None = None
    """The time limit it was killed at, when ``timed_out`` (``duration_s`` adds the kill grace)."""
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    merged: str = ""
    """stdout and stderr interleaved in the order they were read."""
    dropped_bytes: int = 0
    """Bytes dropped from the middle of the streams by the byte cap."""
    error: str | None = None
    """A launch problem (missing executable, permission denied), described for humans."""
    started_at: float = field(default=0.0)
    """Wall-clock time (epoch seconds) when the command started."""
    escaped: tuple[Escaped, ...] = ()
    """Processes that left the command's process group and were stopped after it (orphans.py)."""

    @property
    def killed(self) -> bool:
        return self.signal is not None and not self.timed_out


def strip_ansi(text: str) -> str:
    """Remove colour and terminal control sequences; keep what a progress line settled on."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    if "\r" not in text:
        return text
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


@contextlib.contextmanager
def watch_output(watch: Callable[[bytes], None]) -> Iterator[None]:
    """Call ``watch`` with every chunk any command prints while the block runs."""
    _WATCHERS.append(watch)
    try:
        yield
    finally:
        _WATCHERS.remove(watch)


def build_env(
    environ: Mapping[str, str] = os.environ, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a verifier or agent: the caller's, with no pager."""
    env = dict(environ)
    env.update(QUIET_ENV)
    if extra:
        env.update(extra)
    return env


class _Capped:
    """Keeps the head and the tail of a byte stream and counts what fell in between."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if b"    \n" in chunk:  # a formatter's padding to its column (xo, tsd: ~500 bytes a line)
            chunk = _PADDING.sub(b"", chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
            if not chunk:
                return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.dropped += len(self.tail[0])
            self.tail_size -= len(self.tail.popleft())
        if self.tail_size > self.tail_limit and len(self.tail) == 1:
            cut = self.tail_size - self.tail_limit
            self.tail[0] = self.tail[0][cut:]
            self.tail_size -= cut
            self.dropped += cut

    def text(self, *, redacted: bool = False) -> str:
        middle = f"\n[... {self.dropped} bytes omitted ...]\n".encode() if self.dropped else b""
        data = bytes(self.head) + middle + b"".join(self.tail)
        text = strip_ansi(data.decode("utf-8", errors="replace"))
        # issue 12: redacted at capture, while a key block's lines still stand together
        return redact(text) if redacted else text


def _signal_of(returncode: int, via_shell: bool) -> int | None:
    if returncode < 0:
        return -returncode
    if via_shell and returncode - 128 in FATAL_SIGNALS:
        return returncode - 128
    return None


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the whole group, a short grace, then SIGKILL to the group."""
    _kill_group(proc, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)
    _kill_group(proc, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)


def _enlarge_pipe(fd: int) -> None:
    # Bigger pipe buffers mean fewer wake-ups when a tool prints a lot (Linux only).
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ


def _pump(
    proc: subprocess.Popen[bytes],
    deadline: float,
    now: Callable[[], float],
    watchers: Sequence[Callable[[bytes], None]],
) -> tuple[_Capped, _Capped, _Capped, bool]:
    """Read both pipes until EOF, the deadline, or a short drain after the process exits."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err, merged = (_Capped(HEAD_BYTES, TAIL_BYTES) for _ in range(3))
    sel = selectors.DefaultSelector()
    for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
        _enlarge_pipe(pipe.fileno())
        sel.register(pipe, selectors.EVENT_READ, buf)
    timed_out, exited_at, quiet, reads = False, None, True, 0
    try:
        while sel.get_map():
            t = now()
            if t >= deadline:
                timed_out = True
                break
            # Look at the process only when the pipes are quiet (or now and then): a busy
            # writer is alive, and skipping the waitpid per chunk doubles throughput.
            if quiet or reads % 64 == 0:
                if exited_at is None and proc.poll() is not None:
                    exited_at = t
                if exited_at is not None and t - exited_at > DRAIN_S:
                    break  # a leftover child holds the pipe open; the command itself is done
            wait = min(deadline - t, 0.25 if exited_at is None else DRAIN_S)
            events = sel.select(timeout=wait)
            quiet = not events
            for key, _ in events:
                reads += 1
                chunk = os.read(key.fd, READ_SIZE)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.add(chunk)
                merged.add(chunk)
                for watch in watchers:
                    watch(chunk)
    finally:
        sel.close()
    return out, err, merged, timed_out


def run_command(
    command: Sequence[str] | str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float = 600.0,
    env: Mapping[str, str] | None = None,
    stdin_path: str | os.PathLike[str] | None = None,
    now: Callable[[], float] = time.monotonic,
    redacted: bool = False,
    stop_escaped: bool = True,
    shown: bool = True,
) -> ProcessResult:
    """Run ``command`` (an argv list, or a user's shell string run via ``sh -c``) and capture it.

    stdin is closed, or reads ``stdin_path`` when given (an agent's prompt). ``redacted``: the
    output is a verifier's or an agent's (shown and recorded), not git's (parsed as data).
    ``stop_escaped``: when it ends, what it started that left its process group is stopped too
    (orphans.py); git's own calls pass False, so a daemon git starts on purpose stays.
    ``shown``: its output reaches the live display (``watch_output``); git's own calls, which
    are greenloop's bookkeeping and not the work being watched, pass False.
    """
    via_shell = isinstance(command, str)
    argv = ("sh", "-c", command) if isinstance(command, str) else tuple(command)
    tag, env = _arm_escapes(env) if stop_escaped else ("", env)
    started_at, start = time.time(), now()
    # issue 12: no moment where the child exists and the code that kills it is not armed
    with signals.held(redeliver=False) as pending:
        proc = _launch(argv, cwd, env, stdin_path)
        if isinstance(proc, OSError):
            signals.deliver(pending)
            return _launch_failure(argv, proc, started_at)
        groups.add(proc.pid)
    try:
        signals.deliver(pending)  # a Ctrl-C held during the launch lands here, inside the try
        out, err, merged, timed_out = _pump(
            proc, start + timeout_s, now, _WATCHERS if shown else ()
        )
        if timed_out:
            _terminate(proc)
        elif proc.poll() is None or _group_alive(proc):
            _finish_leftovers(proc, start + timeout_s, now)
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP while waiting: the whole group goes with us
        with signals.held(redeliver=False):  # a second Ctrl-C must not cut the kill short
            _terminate(proc)
            groups.discard(proc.pid)
            _stop_escaped(tag, proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        groups.discard(proc.pid)
    returncode = proc.wait()
    escaped = _stop_escaped(tag, proc)
    sig = _signal_of(returncode, via_shell)
    if timed_out and sig is None:
        sig = signal.SIGTERM.value
    return ProcessResult(
        argv=argv,
        exit_code=128 + sig if sig is not None and (returncode < 0 or timed_out) else returncode,
        signal=sig,
        timed_out=timed_out,
        limit_s=timeout_s if timed_out else None,
        duration_s=now() - start,
        stdout=out.text(redacted=redacted),
        stderr=err.text(redacted=redacted),
        merged=merged.text(redacted=redacted),
        dropped_bytes=out.dropped + err.dropped,
        started_at=started_at,
        escaped=escaped,
    )


def _arm_escapes(env: Mapping[str, str] | None) -> tuple[str, Mapping[str, str]]:
    """A fresh tag, and the environment carrying it, for a command whose escapes are stopped."""
    from greenloop.processes import (
        orphans,  # not on git's path: the Stop hook's cached answer runs git only
    )

    orphans.become_subreaper()
    tag = orphans.new_tag()
    return tag, orphans.tagged(env if env is not None else build_env(), tag)


def _stop_escaped(tag: str, proc: subprocess.Popen[bytes]) -> tuple[Escaped, ...]:
    """Stop what the command left outside its group; commands still running are not looked into."""
    if not tag:
        return ()
    from greenloop.processes import orphans

    busy = (*groups.pids, proc.pid)  # the command itself is Popen's to reap, never ours
    return orphans.stop_escaped(tag, proc.pid, busy=busy, grace_s=KILL_GRACE_S)


def _launch(
    argv: tuple[str, ...],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    stdin_path: str | os.PathLike[str] | None,
) -> subprocess.Popen[bytes] | OSError:
    try:
        stdin = open(stdin_path, "rb") if stdin_path is not None else subprocess.DEVNULL  # noqa: SIM115
    except OSError as exc:
        return exc
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else build_env(),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        return exc
    finally:
        if not isinstance(stdin, int):
            stdin.close()


class LiveGroups:
    """Process groups (one per child: its own session) alive right now, for the run lock.

    A watcher (the run lock) is told every change, so a greenloop killed with -9 leaves behind
    the list of groups the next ``run`` or ``recover`` must stop before touching the tree.
    """

    def __init__(self) -> None:
        self.pids: dict[int, str] = {}
        self.watchers: list[Callable[[dict[int, str]], None]] = []

    def add(self, pid: int) -> None:
        self.pids[pid] = process_start(pid) or ""
        self._tell()

    def discard(self, pid: int) -> None:
        if self.pids.pop(pid, None) is not None:
            self._tell()

    def _tell(self) -> None:
        for watcher in self.watchers:
            watcher(dict(self.pids))


groups = LiveGroups()


def process_start(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks); None off Linux or when gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def stop_groups(recorded: Mapping[int, str], grace_s: float = KILL_GRACE_S) -> tuple[int, ...]:
    """Stop the recorded groups still alive (a killed run's survivors); returns those stopped.

    A group whose leader is alive with another start time is someone else's (a reused pid).
    """
    alive = []
    for pgid, started in recorded.items():
        now_started = process_start(pgid)
        if now_started is not None and started and now_started != started:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            alive.append(pgid)
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline and any(_pgid_alive(g) for g in alive):
        time.sleep(0.05)
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return tuple(alive)


def stop_running() -> tuple[int, ...]:
    """Stop every command still running (other threads' stages, on an interrupt seen by this one).

    Their ``run_command`` calls then end as killed, and stop what escaped their groups."""
    with signals.held(redeliver=False):  # a second Ctrl-C must not cut the kill short
        return stop_groups(dict(groups.pids))


def _pgid_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _finish_leftovers(
    proc: subprocess.Popen[bytes], deadline: float, now: Callable[[], float]
) -> None:
    """The main process may still run with its pipes closed, or children may linger: bound it."""
    try:
        proc.wait(timeout=max(0.0, deadline - now()))
    except subprocess.TimeoutExpired:
        _terminate(proc)
        return
    _kill_group(proc, signal.SIGKILL)  # leftover background children of a finished verifier


def _launch_failure(argv: tuple[str, ...], exc: OSError, started_at: float) -> ProcessResult:
    missing = isinstance(exc, FileNotFoundError)
    what = "command not found" if missing else "permission denied"
    message = f"{argv[0]}: {what}"
    return ProcessResult(
        argv=argv,
        exit_code=127 if missing else 126,
        stderr=message + "\n",
        merged=message + "\n",
        error=message,
        started_at=started_at,
    )


def executable_of(command: Sequence[str] | str) -> str:
    """The program a command starts: argv[0], or a shell string's first word after ``VAR=x``."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            name, eq, value = word.partition("=")
            if not (eq and name.isidentifier()):
                return word
            if "$(" in value or "`" in value:
                return ""  # a command substitution's words are not the program: sh will judge
        return ""
    return command[0] if command else ""


def resolve_executable(root: Path, word: str, environ: Mapping[str, str] = os.environ) -> str:
    """Where ``word`` resolves from ``root``, following symlinks; or why it does not."""
    if not word:
        return "no command"
    import shutil  # only for ``-v``: its import costs ~2 ms on every Stop hook otherwise

    found = str(root / word) if "/" in word else shutil.which(word, path=environ.get("PATH"))
    if found is None or not os.access(found, os.X_OK):
        return "not found on PATH" if "/" not in word else "not found"
    real = os.path.realpath(found)
    return found if real == found else f"{found} ({real})"


# 16+ spaces or tabs closing a line: padding, never meaning (1-2 trailing spaces stay as they are)
_PADDING = re.compile(rb"[ \t]{16,}(?=\r?\n)")
_PLAIN_WORD = re.compile(r"^[\w.+/][\w.+/-]*$")


def shell_can_run(word: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``sh`` would find ``word``: a builtin, a keyword or an executable on PATH.

    A word that is not a plain name (``(cd``, ``$TOOL``) can't be judged here: assumed fine."""
    if not _PLAIN_WORD.match(word):
        return True
    probe = subprocess.run(
        ["sh", "-c", 'command -v "$1"', "sh", word],
        env=dict(environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return probe.returncode == 0
