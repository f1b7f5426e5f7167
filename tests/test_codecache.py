"""The code ``@dataclass`` compiles, kept between greenloop's processes (issue 16, codecache.py).

Real interpreters: each case runs Python processes of its own, with the user's cache in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_process import greenloop

# No ``from __future__ import annotations`` in the script: the generated ``__init__``'s
# annotations are then the field types themselves, as dataclasses makes them.
SCRIPT = '''
import dataclasses, json, sys
from greenloop.cli import codecache
if sys.argv[1] == "cache":
    codecache.install("probe")

@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """A point."""
    x: int
    tags: tuple[str, ...] = ()
    seen: frozenset[int] = dataclasses.field(default_factory=frozenset)

@dataclasses.dataclass
class Plain:
    name: str
    size: int = 0

p = Point(x=1)
out = {
    "repr": repr(p), "eq": p == Point(x=1), "ne": p != Point(x=2),
    "hash": hash(p) == hash(Point(x=1)), "init": repr(Point.__init__.__annotations__),
    "match": Point.__match_args__, "seen": sorted(p.seen), "plain": repr(Plain("a")),
    "plain_doc": Plain.__doc__, "slots": Point.__slots__,
}
try:
    p.x = 2
except dataclasses.FrozenInstanceError as exc:
    out["frozen"] = str(exc)
try:
    Point(1)
except TypeError as exc:
    out["kw_only"] = str(exc)
out["compiled"] = codecache.compiled_here()
codecache.save()
print(json.dumps(out))
'''


def run_script(tmp_path: Path, mode: str) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def stores(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "greenloop" / "code").glob("dataclasses-*.marshal"))


def test_dataclasses_built_from_the_cache_are_the_ones_dataclasses_builds(tmp_path: Path) -> None:
    plain = run_script(tmp_path, "plain")
    first = run_script(tmp_path, "cache")
    second = run_script(tmp_path, "cache")
    assert plain.pop("compiled") == 0
    # one text per method: six for the frozen class, three for Plain
    assert first.pop("compiled") == 9
    assert second.pop("compiled") == 0  # every text came from the store the first process wrote
    assert first == plain
    assert second == plain
    assert plain["init"] == repr(
        {"x": int, "tags": tuple[str, ...], "seen": frozenset[int], "return": None}
    )
    assert "cannot assign to field 'x'" in str(plain["frozen"])


def test_a_damaged_store_is_compiled_again_and_written_anew(tmp_path: Path) -> None:
    run_script(tmp_path, "cache")
    (store,) = stores(tmp_path)
    store.write_bytes(b"\xe3not marshal data")
    again = run_script(tmp_path, "cache")
    assert again["compiled"] == 9
    assert run_script(tmp_path, "cache")["compiled"] == 0


def test_importing_greenloop_leaves_the_dataclasses_module_alone(tmp_path: Path) -> None:
    probe = (
        "import dataclasses\n"
        "import greenloop.loop.checking, greenloop.integrations.claude_hook\n"
        "from greenloop.cli.entry import main\n"
        "main(['--version'])\n"
        "print('exec' in vars(dataclasses))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "False"
    assert stores(tmp_path) == []


def test_the_command_line_writes_the_store_once_and_then_reads_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    check = ("check", "--", sys.executable, "-c", "print('1 passed')")
    greenloop(repo, *check, env=env)
    (store,) = stores(tmp_path)
    assert store.name.endswith("-check.marshal")  # one per subcommand: the hook loads only its own
    written = store.stat().st_mtime_ns
    greenloop(repo, *check, env=env)
    assert store.stat().st_mtime_ns == written  # nothing new to compile: not written again
