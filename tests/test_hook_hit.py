"""The Stop hook's cache hit answered before the rest of greenloop loads (integrations/hook_hit.py):
the real ``greenloop hook stop`` leaves a memo on a hit, and a repeated stop replays its reply only
while the tree, the session's state, the marker and the cached run are what the memo rests on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.integrations import hook_hit
from limits import hang

GREENLOOP = str(Path(sys.executable).with_name("greenloop"))
PYPROJECT = f'[[tool.greenloop.stage]]\nname = "tests"\nrun = "{sys.executable} -m pytest -q -p no:cacheprovider"\n'
FILES = {
    "test_ok.py": "def test_ok():\n    pass\n",
    "pyproject.toml": PYPROJECT,
    ".gitignore": "__pycache__/\n",
}
EVENT = json.dumps({"session_id": "s1", "stop_hook_active": False, "cwd": "."}).encode()


def stop(root: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [GREENLOOP, "hook", "stop"], cwd=root, env=env, input=EVENT, capture_output=True,
        timeout=hang(120), check=True,
    )  # fmt: skip
    return done.stdout.decode()


@pytest.fixture
def hit(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict[str, str], str]:
    """A repo whose green run is cached, two stops later: (root, the hook's env, its memo)."""
    root = make_repo(FILES)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("GREENLOOP_HOOK_LOG", None)
    first, second = stop(root, env), stop(root, env)
    assert first == ""  # green: the stop allowed in silence
    assert "green, reused" in second
    monkeypatch.chdir(root)
    memo = hook_hit.memo_path(["hook", "stop"], EVENT, env)
    assert memo is not None
    assert Path(memo).is_file()
    return root, env, memo


def test_a_repeated_stop_on_the_same_tree_replays_the_full_paths_reply(
    hit: tuple[Path, dict[str, str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, env, memo = hit
    assert hook_hit.answer(memo)
    replayed = capsys.readouterr().out
    again = stop(root, env)  # the same stop through the command line
    assert replayed.startswith('{"systemMessage": "greenloop: green, reused: the verified run of ')
    assert replayed.split(" (")[0] == again.split(" (")[0]  # the same words, but for the age
    assert replayed.split(" ago)")[1] == again.split(" ago)")[1]
    assert "\x00" not in replayed


def test_a_new_file_a_changed_state_or_a_stale_entry_sends_the_stop_the_full_way(
    hit: tuple[Path, dict[str, str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, memo = hit
    data = json.loads(Path(memo).read_text())
    (root / "notes.txt").write_text("new\n")
    assert not hook_hit.answer(memo)
    (root / "notes.txt").unlink()
    assert hook_hit.answer(memo)
    state = Path(data["state"])
    kept = state.read_text()
    state.write_text(kept.replace('"blocks": 0', '"blocks": 1'))
    assert not hook_hit.answer(memo)
    state.write_text(kept)
    entry = Path(data["entry"])
    cached = json.loads(entry.read_text())
    entry.write_text(json.dumps({**cached, "flaky": True}))
    assert not hook_hit.answer(memo)
    entry.write_text(json.dumps({**cached, "at": cached["at"] - data["ttl"] - 5}))
    assert not hook_hit.answer(memo)
    entry.write_text(json.dumps(cached))
    assert hook_hit.answer(memo)
    capsys.readouterr()


def test_a_stop_with_another_payload_or_environment_has_no_memo(
    hit: tuple[Path, dict[str, str], str],
) -> None:
    _, env, memo = hit
    other = EVENT.replace(b"s1", b"s2")
    assert hook_hit.memo_path(["hook", "stop"], other, env) != memo
    assert hook_hit.memo_path(["hook", "stop"], EVENT, {**env, "PYTEST_ADDOPTS": "-x"}) != memo
    assert hook_hit.memo_path(["hook", "stop", "--no-cache"], EVENT, env) != memo


def test_the_next_turns_stop_differing_only_in_what_changes_every_turn_has_the_same_memo(
    hit: tuple[Path, dict[str, str], str],
) -> None:
    _, env, memo = hit
    data = json.loads(EVENT)  # Claude Code 2.1.332 sends both on every stop; no reply reads them
    turn = {**data, "last_assistant_message": "Done: the tests pass.", "prompt_id": "p-2"}
    assert hook_hit.memo_path(["hook", "stop"], json.dumps(turn).encode(), env) == memo
    moved = {**data, "stop_hook_active": True}  # what the reply does read stays in the key
    assert hook_hit.memo_path(["hook", "stop"], json.dumps(moved).encode(), env) != memo
