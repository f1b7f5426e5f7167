"""Config: defaults < ``[tool.greenloop]`` / ``greenloop.toml`` < command-line flags."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from greenloop import toml_cache
from greenloop.errors import FatalError
from greenloop.redact import add_patterns, pattern_problem

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class StageSpec:
    """A stage the user configured."""

    name: str
    run: str
    """A shell command string, run with ``sh -c``."""
    fix: bool = False
    """A fixer (``ruff format``): run twice, only the second exit code counts."""
    timeout: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """greenloop's settings: pyproject.toml / greenloop.toml over the defaults."""

    stages: tuple[StageSpec, ...] = ()
    """Configured verifier stages, fastest first; empty means detect them."""
    timeout: float = 600.0
    """Seconds one verifier stage may run before its process group is killed."""
    budget: int = 2000
    """Token budget of the digest (tokens estimated as ceil(chars / 3))."""
    max_iters: int = 5
    """Agent iterations at most."""
    max_time: float = 3600.0
    """Wall-clock seconds for a whole run."""
    max_cost: float | None = None
    """US dollars the agent calls may spend in a run, from the usage the agent reports; checked
    before each call, with the last call's cost as the estimate of the next (None: no cap)."""
    max_tokens: int | None = None
    """Model tokens (prompt + completion) the agent calls may use in a run, checked the same way."""
    agent: str | None = None
    """Agent preset name or shell command."""
    agent_timeout: float = 1800.0
    """Seconds one agent call may run."""
    task: str | None = None
    """The task given to the agent in iteration 1 (a default task when unset)."""
    on_fail: str = "revert"
    """``revert``: branch back to the initial commit, attempt kept under refs/greenloop; ``keep``."""
    on_regression: str = "stop"
    """``stop`` or ``continue`` (roll back the regressing edit and go on)."""
    allow_test_edits: bool = False
    """Allow the agent to modify test files without flagging the green as suspicious."""
    patience: int = 2
    """Iterations without a falling failure count before non-convergence."""
    subset: str = "auto"
    """``auto``: re-run only the failing tests first; ``off``: always the full cascade."""
    flaky_real_after: int = 3
    """A known-flaky test failing on this many runs of one tree in a row is a real failure."""
    flaky_clean_after: int = 10
    """A known-flaky test leaves the list after this many runs of its check it did not fail."""
    ci_first: str = ""
    """Set by ``greenloop pr`` (never by a key): the failing CI check (a job's name or a workflow
    file) whose stages run first."""
    stages_from: str = "detect"
    """Where stages come from (issue 38): ``detect`` (manifests, agent docs), ``ci`` (the
    commands the project's CI runs on a pull request) or ``both`` (detected, plus the CI checks
    detection lacks)."""
    squash: bool = False
    """On success, fold the iteration commits into one."""
    all_stages: bool = False
    """Run every stage instead of stopping at the first failing one."""
    base_url: str | None = None
    """OpenAI-compatible endpoint of the built-in agent."""
    max_tool_turns: int = 25
    """Built-in agent: tool calls at most per iteration."""
    feedback: str = "digest"
    """What the agent reads between iterations: ``digest``, or ``raw`` (the verifier's output cut to
    its first and last 5 000 characters, as other harnesses send it: the bench's baseline arm)."""
    redact: tuple[str, ...] = ()
    """Extra regular expressions whose matches are hidden in everything greenloop writes."""
    cache: bool = True
    """Stop hook and MCP ``verify``: reuse a green run while the tree is unchanged (issue 16)."""
    cache_ttl: float = 600.0
    """Seconds a green run may be reused for."""
    tool_output: bool = True
    """``hook post-tool``: replace the output of a verifier the agent ran through its shell tool
    with the digest (the full output saved under the git dir). ``false``: leave it as it was;
    ``GREENLOOP_TOOL_OUTPUT=0`` turns it off for one call."""
    must_pass: tuple[str, ...] = ()
    """Declared acceptance (issue 28): test ids, in the runner's own form (pytest node ids), that
    must have run and passed for a success (``--must-pass``; a batch task's ``fail_to_pass``)."""
    pass_to_pass: tuple[str, ...] = ()
    """Test ids that must have run and still pass for a success (a batch task's ``pass_to_pass``)."""
    source: str = ""
    """The file these settings were read from (``pyproject.toml [tool.greenloop]``), or ``""``."""
    timeout_origin: str = ""
    """Who set ``timeout``: ``--timeout``, ``timeout in <file>``; ``""``: greenloop's default."""


CHOICES: dict[str, tuple[str, ...]] = {
    "on_fail": ("revert", "keep"),
    "on_regression": ("stop", "continue"),
    "subset": ("auto", "failing", "affected", "off"),
    "stages_from": ("detect", "ci", "both"),
    "feedback": ("digest", "raw"),
}
TEST_LISTS = ("must_pass", "pass_to_pass")
_STAGE_KEYS = {f.name: f.type for f in fields(StageSpec)}
_NOT_SETTINGS = (
    "stages",
    "source",
    "timeout_origin",
    "ci_first",
)  # set by greenloop, never by a key


def load_config(root: Path, overrides: Mapping[str, Any] | None = None) -> Config:
    """Read the file configuration under ``root`` and apply flag overrides (None = not given)."""
    raw, origin = read_file_config(root)
    config, errors = build_config(raw, origin)
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    flag_errors: list[str] = []
    if flags:
        config, flag_errors = _apply(config, flags, "flag")
        if "timeout" in flags:
            config = replace(config, timeout_origin="--timeout")
    if errors or flag_errors:
        what = "invalid configuration" if errors else "invalid option"
        raise FatalError(f"{what}:\n" + "\n".join(f"  {e}" for e in errors + flag_errors))
    add_patterns(config.redact)
    return config


def read_file_config(root: Path) -> tuple[dict[str, Any], str]:
    """``greenloop.toml`` wins over ``[tool.greenloop]`` in ``pyproject.toml``."""
    own = root / "greenloop.toml"
    if own.is_file():
        data = _read_toml(own)
        if "tool" not in data:
            return data, "greenloop.toml"
        return _tool_table(data, "greenloop.toml", default=data)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        return _tool_table(_read_toml(pyproject), "pyproject.toml", default={})
    return {}, ""


def _tool_table(
    data: dict[str, Any], name: str, *, default: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """``[tool.greenloop]`` of a parsed file; a wrong type there is a configuration error."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise FatalError(f"invalid configuration:\n  {name}: tool: expected a table, got {tool!r}")
    table = tool.get("greenloop", default)
    origin = name if name == "greenloop.toml" else f"{name} [tool.greenloop]"
    if not isinstance(table, dict):
        raise FatalError(
            f"invalid configuration:\n  {name}: tool.greenloop: expected a table, got {table!r}"
        )
    return dict(table), origin


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return toml_cache.load(path)  # tomllib only when the file changed (issue 16)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: TOMLDecodeError
        raise FatalError(f"cannot read {path.name}: {exc}") from exc
    except RecursionError:  # 5 000-deep arrays: tomllib recurses per level
        raise FatalError(f"cannot read {path.name}: values nested too deeply") from None


def build_config(raw: Mapping[str, Any], origin: str) -> tuple[Config, list[str]]:
    raw = dict(raw)
    errors: list[str] = []
    stages: tuple[StageSpec, ...] = ()
    if "stage" in raw:
        stages, errors = _parse_stages(raw.pop("stage"), origin)
    config, more = _apply(Config(stages=stages, source=origin), raw, origin)
    if "timeout" in raw:
        config = replace(config, timeout_origin=f"timeout in {origin}")
    return config, errors + more


def _apply(config: Config, values: Mapping[str, Any], origin: str) -> tuple[Config, list[str]]:
    known = {f.name: f for f in fields(Config) if f.name not in _NOT_SETTINGS}
    errors: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in known:
            errors.append(f"{_where(origin, key)}: unknown key{_did_you_mean(name, known)}")
            continue
        problem = _check_value(name, value, str(known[name].type))
        if problem:
            errors.append(f"{_where(origin, key)}: {problem}")
            continue
        if name == "redact" or name in TEST_LISTS:
            changes[name] = tuple(value)
        else:
            changes[name] = float(value) if "float" in str(known[name].type) else value
    return replace(config, **changes), errors


def _check_value(name: str, value: Any, type_name: str) -> str | None:
    if name == "redact":
        return _patterns_problem(value)
    if name in TEST_LISTS:
        return _test_ids_problem(value)
    if "bool" in type_name:
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if "int" in type_name and "float" not in type_name:
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return None if ok else f"expected a positive whole number, got {value!r}"
    if "float" in type_name:
        ok = _positive_number(value)
        return None if ok else f"expected a positive number of seconds, got {_shown(value)}"
    if not isinstance(value, str) or not value.strip():
        return f"expected a non-empty string, got {value!r}"
    if name in CHOICES and value not in CHOICES[name]:
        return f"expected one of {', '.join(CHOICES[name])}, got {value!r}"
    return None


def _patterns_problem(value: Any) -> str | None:
    if not isinstance(value, list):
        return f"expected a list of regular expressions, got {value!r}"
    problems = [p for p in map(pattern_problem, value) if p]
    return "; ".join(problems) or None


def _test_ids_problem(value: Any) -> str | None:
    ok = isinstance(value, list | tuple) and all(
        isinstance(v, str) and v.strip() and "\n" not in v for v in value
    )
    return None if ok else f"expected a list of test ids (non-empty strings), got {value!r}"


def _parse_stages(raw: Any, origin: str) -> tuple[tuple[StageSpec, ...], list[str]]:
    if not isinstance(raw, list):
        return (), [f"{_where(origin, 'stage')}: expected [[stage]] tables"]
    stages, errors = [], []
    for i, table in enumerate(raw):
        where = _where(origin, f"stage[{i}]")
        if not isinstance(table, dict):
            errors.append(f"{where}: expected a table with name and run")
            continue
        problems = _stage_problems(table, where)
        if problems:
            errors += problems
            continue
        stages.append(StageSpec(**{k: table[k] for k in table}))
    return tuple(stages), errors


# what other tools call a stage's command: `command = "pytest"` means `run` (issue 26)
_STAGE_ALIASES = {"command": "run", "cmd": "run", "script": "run", "exec": "run", "shell": "run"}


def _stage_problems(table: dict[str, Any], where: str) -> list[str]:
    problems, meant = [], set()
    for key in table:
        if key in _STAGE_KEYS:
            continue
        alias = _STAGE_ALIASES.get(key)
        hint = f" (did you mean {alias!r}?)" if alias else _did_you_mean(key, _STAGE_KEYS)
        meant |= {alias} if alias else set(_close(key, _STAGE_KEYS))
        problems.append(f"{where}.{key}: unknown key{hint}")
    for key in ("name", "run"):
        value = table.get(key)
        if key not in table and key in meant:
            continue  # one error for `command = …`: the unknown key names the one meant
        if key not in table:
            problems.append(f"{where}.{key}: missing (every stage needs a {key})")
        elif not isinstance(value, str) or not value.strip():
            problems.append(f"{where}.{key}: expected a non-empty string, got {value!r}")
    if "fix" in table and not isinstance(table["fix"], bool):
        problems.append(f"{where}.fix: expected true or false, got {table['fix']!r}")
    timeout = table.get("timeout")
    if timeout is not None and not _positive_number(timeout):
        problems.append(f"{where}.timeout: expected a positive number, got {_shown(timeout)}")
    return problems


def _shown(value: Any) -> str:
    """A value as the user wrote it: ``-1`` for the flag ``--timeout -1`` (argparse made it -1.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _positive_number(value: Any) -> bool:
    """A finite number above 0; a bool is not a number (``timeout = true`` is not 1 s)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value > 0


def _where(origin: str, key: str) -> str:
    if origin == "flag":  # `--max-iters 0` is the user's flag, not a config key (issue 26)
        return f"--{key.replace('_', '-')}"
    return f"{origin}: {key}" if origin else key


def _did_you_mean(name: str, known: Mapping[str, Any]) -> str:
    close = _close(name, known)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _close(name: str, known: Mapping[str, Any]) -> list[str]:
    import difflib  # only on an error: the Stop hook loads the config on every turn

    return difflib.get_close_matches(name, list(known), n=1)
