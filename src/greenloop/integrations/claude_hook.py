"""``greenloop hook stop``: every host's Stop hook, with greenloop's own per-session bound.

The host (Claude Code, Codex CLI, Gemini CLI, Copilot CLI, Cursor, VS Code, Goose, Kimi Code, the
OpenHands SDK) is read from the payload and the environment, or named by ``--host``; ``hook claude-stop`` is the same hook. Each host's input and
reply schema live in ``integrations/hosts/<host>.py``; the decision is the same for all: green
allows the stop, a code failure blocks it with the digest (at most ``max_iters`` times in a turn,
within ``max_time`` seconds, never twice on the same failure), anything else allows it and tells
the user why. The hook never crashes open: whatever goes wrong allows the stop and says why, and
the process always exits 0 (exit 2 is a blocking error on Claude Code and Gemini CLI).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from greenloop import signals
from greenloop.errors import FatalError
from greenloop.integrations.hosts import (
    HOSTS,
    HookReply,
    StopEvent,
    detect,
    from_environ,
    log_shape,
)

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:
    import argparse
    from types import ModuleType
    from typing import Any

    from greenloop.config import Config
    from greenloop.digest import Digest
    from greenloop.verify.cache import Reuse
    from greenloop.verify.cascade import CheckResult

__all__ = ["HookReply", "HookState", "StopEvent", "main_hook", "run_hook"]
SAME_STOP_S = 0.002
"""Two stop events of one session at the same instant by the host's clock are one stop (Copilot
CLI stamps its agentStop and its Claude-format Stop alike, to the millisecond)."""
GOAL_UNTRUSTED = (
    "greenloop: not a trusted green: the verifier passed without running the tests that count "
    "(skipped, deleted or none collected). The goal stays open until the suite runs and passes: "
    "restore the tests, then fix the code."
)
PROJECT_DIRS = (
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    "CURSOR_PROJECT_DIR",
    "OPENHANDS_PROJECT_DIR",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookState:
    """What the hook remembers per session, under ``<git dir>/greenloop/hooks/``."""

    blocks: int = 0
    """Stops blocked in a row since the turn started."""
    signature: str = ""
    """The digest signature of the last block."""
    ended: bool = False
    """The last stop was allowed: the turn ended, the next stop follows a new user prompt."""
    since: float = 0.0
    """When this turn's first block was (epoch seconds): the wall-clock bound counts from it."""
    stamp: float = 0.0
    """The host's own time of the last stop answered (epoch seconds; 0: the host sends none)."""
    event: str = ""
    """The event that answered it (Copilot's agentStop, or its Claude-format Stop)."""


_HIT: dict[str, object] = {}
"""What a cache hit's answer rested on, when the next same stop may replay it (``hook_hit``)."""


def main_hook(args: argparse.Namespace) -> int:
    raw = getattr(args, "raw", None)  # read by the command line's cache-hit path already
    text = raw.decode(sys.stdin.encoding or "utf-8") if isinstance(raw, bytes) else sys.stdin.read()
    _HIT.clear()
    event, reply = respond(
        text,
        host=getattr(args, "host", None),
        default_cwd=Path(args.repo),
        use_cache=args.cache,
        goal=getattr(args, "goal", False),
    )
    stdout, stderr = host_module(event.host).render(reply, event)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    if _HIT and getattr(args, "memo", None):
        _leave_memo(args.memo, stdout, stderr)
    return 0  # any other exit code would make the host treat the hook itself as broken, or block


def _leave_memo(memo: str, stdout: str, stderr: str) -> None:
    """The reply as written (redacted) and the session's state as left, for ``hook_hit``."""
    import io

    from greenloop.integrations import hook_hit
    from greenloop.redact import RedactingWriter

    written = []
    for text in (stdout, stderr):
        buffer = io.StringIO()
        out = RedactingWriter(buffer)
        out.write(text)
        out.flush()
        written.append(buffer.getvalue())
    state = Path(str(_HIT["state"]))
    hit = {**_HIT, "state_text": state.read_text(encoding="utf-8") if state.exists() else None}
    hook_hit.remember(memo, (written[0], written[1]), hit)


def run_hook(
    raw: str,
    *,
    host: str | None = None,
    default_cwd: Path = Path("."),
    environ: Mapping[str, str] = os.environ,
    use_cache: bool = True,
) -> HookReply:
    """Never raises: a broken hook must allow the stop and say so, not wedge the agent."""
    return respond(raw, host=host, default_cwd=default_cwd, environ=environ, use_cache=use_cache)[1]


def respond(
    raw: str,
    *,
    host: str | None = None,
    default_cwd: Path = Path("."),
    environ: Mapping[str, str] = os.environ,
    use_cache: bool = True,
    goal: bool = False,
) -> tuple[StopEvent, HookReply]:
    """The event as read (for the host's reply schema) and the answer. Never raises. ``goal``:
    only a trusted green allows the stop (an untrusted one blocks too)."""
    data, problem = read_payload(raw)
    name = host if host in HOSTS else detect(data, environ) if data else from_environ(environ)
    log_shape("stop", name, data, environ)
    cwd = next((Path(environ[k]) for k in PROJECT_DIRS if environ.get(k)), default_cwd)
    unread = StopEvent(host=name, event="", session_id="no-session", cwd=cwd)
    if host is not None and host not in HOSTS:
        known = ", ".join(HOSTS)
        return unread, _allow(f"unknown --host {host!r} (known: {known}); the stop is allowed.")
    if environ.get("GREENLOOP_RUN_ID"):
        # the host is the agent of a `greenloop run`, which verifies when the agent returns:
        # blocking here would nest a second fix loop (and a verifier run per stop) inside it
        return unread, HookReply()
    if problem:
        return unread, _allow(
            f"could not read the Stop hook input ({problem}); the stop is allowed."
        )
    try:
        event = host_module(name).parse(data, cwd)
        if event.defer:
            return event, _allow(f"{event.defer}.")
        return event, handle(event, environ, use_cache=use_cache, goal=goal)
    except FatalError as exc:
        return unread, _allow(f"{exc}\n(the stop is allowed)")
    except Exception as exc:
        import logging  # only here: the hook runs on every agent turn (issue 16)

        logging.getLogger(__name__).debug("hook failed", exc_info=True)
        return unread, _allow(f"internal error in the Stop hook: {exc!r}; the stop is allowed.")


def host_module(name: str) -> ModuleType:
    import importlib  # already loaded by Python's start-up: costs nothing

    return importlib.import_module(f"greenloop.integrations.hosts.{name}")


def read_payload(raw: str) -> tuple[dict[str, Any], str]:
    """The payload as a JSON object, or ({}, what is wrong with it)."""
    try:
        data = json.loads(raw.removeprefix("\ufeff"))  # Cursor's payload may start with a BOM
    except json.JSONDecodeError as exc:
        return {}, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if not isinstance(data, dict):
        return {}, f"expected a JSON object, got {type(data).__name__}"
    return data, ""


def handle(
    event: StopEvent, environ: Mapping[str, str], *, use_cache: bool = True, goal: bool = False
) -> HookReply:
    # Imported here so that even a broken install is reported by run_hook, not crashed on.
    from greenloop.config import load_config
    from greenloop.loop.checking import resolve_cascade, run_or_reuse
    from greenloop.verify.cache import Reuse

    root, state_dir = locate(event.cwd, environ)
    path = state_dir / f"{_safe_name(event.session_id)}.json"
    state = saved = load_state(path)
    if _answered(event, state):
        return HookReply()  # this stop was answered by the host's other entry: no second run
    if state.ended and not event.stop_hook_active:
        state = HookState()  # a new user turn: the previous turn's blocks don't count
    config = load_config(root)
    store = state_dir.parent / "cache" if use_cache and config.cache else None
    # Claude Code ends a hook past its timeout: the stage and what it started end with it
    with signals.stop_as_interrupt():
        outcome = run_or_reuse(
            root, resolve_cascade(root, config), config, store=store, environ=environ
        )
    if isinstance(outcome, Reuse):
        reply, state = _allow(outcome.describe()), HookState(ended=True)
        hit = _hit(root, outcome, config, store, path, event, environ)
    else:
        hit = {}
        outcome = _remember(root, outcome, config)
        if outcome.verdict.passed:  # the digest is built only when someone reads it
            reply, state = HookReply(), HookState(ended=True)
        elif outcome.flaky_only:  # issue 39: nothing for the agent, and no verified pass
            from greenloop.verify.outcomes import flaky_note

            reply, state = (
                _allow(f"{flaky_note(outcome)} The stop is allowed."),
                HookState(ended=True),
            )
        else:
            from greenloop.digest import build_digest, with_note
            from greenloop.verify.outcomes import flaky_note

            digest = build_digest(outcome, root=root, budget=config.budget, diff=_diff(root))
            digest = with_note(digest, flaky_note(outcome))
            reply, state = decide(
                outcome,
                digest,
                state,
                max_iters=config.max_iters,
                max_time=config.max_time,
                goal=goal,
            )
        noted = _with_ci_note(reply, root, outcome, config, path.with_suffix(".ci-told"))
        if noted != reply:
            hit = {}  # told once: the next stop's reply will not have the note
        reply = noted
    if event.stamp:
        state = replace(state, stamp=event.stamp, event=event.event)
    if state != saved:  # a green turn after a green turn changes nothing on disk
        save_state(path, state)
    _HIT.update(hit)
    return reply


def _hit(
    root: Path,
    outcome: Reuse,
    config: Config,
    store: Path | None,
    path: Path,
    event: StopEvent,
    environ: Mapping[str, str],
) -> dict[str, object]:
    """What this cache hit's answer rests on, for the next same stop to replay; {} when it could
    not be replayed as it is (a host's time stamp, the payload log, no private index)."""
    from greenloop.git import dot_git_dir
    from greenloop.integrations.hook_hit import age_text

    git_dir = dot_git_dir(root)
    if store is None or git_dir is None or event.stamp or environ.get("GREENLOOP_HOOK_LOG"):
        return {}
    told = path.with_suffix(".ci-told")
    return {
        "root": str(root),
        "git_dir": str(git_dir),
        "state": str(path),
        "told": str(told) if told.exists() else "",
        "entry": str(store / f"{outcome.entry.key}.json"),
        "ttl": config.cache_ttl,
        "age": age_text(outcome.age_s),
    }


def _remember(root: Path, outcome: CheckResult, config: Config) -> CheckResult:
    """Issue 39: the verification's outcomes recorded on the tree it ran on; known-flaky failures
    named (never the agent's first target)."""
    from greenloop.verify import outcomes

    return outcomes.remember(
        root, outcome, outcomes.tree_key(root), source="hook",
        real_after=config.flaky_real_after, clean_after=config.flaky_clean_after,
    )  # fmt: skip


def _with_ci_note(
    reply: HookReply, root: Path, outcome: CheckResult, config: Config, told: Path
) -> HookReply:
    """Issue 38: once a session, the user hears what the project's CI runs that this gate
    lacks (a marker beside the session's state keeps it to once)."""
    if told.exists() or config.stages_from != "detect":
        return reply
    from greenloop.detect.ci_sources import weaker_gate_note

    note = weaker_gate_note(root, outcome.cascade)
    if not note:
        return reply
    with contextlib.suppress(OSError):
        told.parent.mkdir(parents=True, exist_ok=True)
        told.write_text(note, encoding="utf-8")
    message = "\n".join(m for m in (reply.system_message, f"greenloop: {note}") if m)
    return replace(reply, system_message=message)


def _answered(event: StopEvent, state: HookState) -> bool:
    """The same stop, already answered through the host's other kind of entry: its own time,
    another event name (two stops of one kind are two stops, whatever their stamps)."""
    same_time = bool(event.stamp) and abs(event.stamp - state.stamp) < SAME_STOP_S
    return same_time and bool(state.event) and event.event != state.event


def decide(
    result: CheckResult,
    digest: Digest,
    state: HookState,
    *,
    max_iters: int,
    max_time: float = 3600.0,
    now: float | None = None,
    goal: bool = False,
) -> tuple[HookReply, HookState]:
    """Pure: the verdict and the session's state -> allow, tell the user, or block. ``goal``: an
    untrusted green is blocked like a failure (a goal loop must not end on skipped tests)."""
    from greenloop.report.render import VERDICT_WORDS
    from greenloop.verify.verdict import Verdict

    ended = replace(state, ended=True)
    verdict = result.verdict
    if verdict is Verdict.GREEN:
        return HookReply(), HookState(ended=True)
    untrusted_goal = goal and verdict is Verdict.UNTRUSTED
    if verdict is not Verdict.FAILED and not untrusted_goal:  # env failure, timeout: the user's
        words = VERDICT_WORDS[verdict.value]
        return _allow(
            f"{words}: the stop is allowed, but not as a verified pass.\n{digest.text}"
        ), ended
    if state.blocks >= max_iters:
        return _allow(
            f"the suite still fails after {state.blocks} blocked stops in this turn (max_iters = "
            f"{max_iters}); the stop is allowed so the agent does not loop.\n{digest.text}"
        ), ended
    now = time.time() if now is None else now
    if state.blocks and now - state.since > max_time:
        return _allow(
            f"the suite still fails {now - state.since:.0f} s after this turn's first blocked stop "
            f"(max_time = {max_time:g}); the stop is allowed so the agent does not loop.\n"
            f"{digest.text}"
        ), ended
    if digest.signature and digest.signature == state.signature:
        return _allow(
            "the same failure came back unchanged after the agent's last attempt; the stop is "
            f"allowed: a different approach (or a human) is needed.\n{digest.text}"
        ), ended
    reason = f"{GOAL_UNTRUSTED}\n{digest.text}" if untrusted_goal else digest.text
    return HookReply(block_reason=reason), HookState(
        blocks=state.blocks + 1, signature=digest.signature, since=state.since or now
    )


def _allow(message: str) -> HookReply:
    return HookReply(system_message=f"greenloop: {message}")


def locate(cwd: Path, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """The repository root and the hook's state directory: in the git dir, or in the user's cache
    when this user cannot write the git dir or there is no repository."""
    from greenloop.cachedir import path_key, repo_dir, user_cache

    if not cwd.is_dir():
        raise FatalError(f"the hook's working directory {cwd} does not exist")
    root, common = _repository(cwd.resolve())
    own = repo_dir(common, environ) if common is not None else None
    if own is not None:
        return root, own / "hooks"
    cache = user_cache(environ)
    if cache is None:
        raise FatalError(
            f"nowhere to keep the hook's state: {common or root} cannot be written and neither "
            "XDG_CACHE_HOME nor HOME is set"
        )
    return root, cache / "hooks" / path_key(root)


def _repository(cwd: Path) -> tuple[Path, Path | None]:
    """(root, git common dir); the common dir is None outside a repository."""
    from greenloop import git

    found = git.discover(cwd)  # no git process for the common case (issue 16)
    if found is not None and os.access(found[2], os.R_OK):
        return found[0], found[2]
    out = git.git(  # git decides (safe.directory, GIT_DIR, a layout discover() does not read)
        cwd,
        "rev-parse",
        "--path-format=absolute",
        "--show-toplevel",
        "--git-common-dir",
        check=False,
    )
    lines = out.stdout.splitlines()
    if out.exit_code == 0 and len(lines) == 2:
        return Path(lines[0]), Path(lines[1])
    return cwd, None


def _diff(root: Path) -> str | None:
    from greenloop import git

    try:
        return git.diff_head(root) or None
    except FatalError:
        return None


def _safe_name(session_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", session_id).lstrip(".")
    if name:
        return name[:100]
    import hashlib

    return hashlib.sha256(session_id.encode()).hexdigest()[:16]


def load_state(path: Path) -> HookState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return HookState(
            blocks=int(data["blocks"]),
            signature=str(data["signature"]),
            ended=bool(data["ended"]),
            since=float(data.get("since", 0.0)),
            stamp=float(data.get("stamp", 0.0)),
            event=str(data.get("event", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return HookState()  # none yet, or unreadable: start counting afresh


def save_state(path: Path, state: HookState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(tmp, path)
