"""What an agent command spent: the file it may write (``$GREENLOOP_USAGE_FILE``), or what a
known CLI prints (Claude Code's and Gemini CLI's JSON result, Codex's ``tokens used`` line).

The loop's budget (``--max-cost``, ``--max-tokens``) is only as good as these figures: an agent
that reports nothing is unbounded by cost, and the pre-flight plan says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.agents.base import Usage

# Codex CLI's closing lines without --json: "tokens used" and the figure (1,234 or 12.3K).
_CODEX_TOKENS = re.compile(r"^tokens used:?\s*\n?\s*([\d,.]+)([KkMm]?)\s*$", re.MULTILINE)
REPORTS_USAGE = frozenset({"claude", "gemini", "codex"})
"""Presets whose own output carries their usage."""


def usage_from_file(path: Path) -> Usage | None:
    """``{"cost_usd": 0.02, "prompt_tokens": 1200, "completion_tokens": 300}`` (or input/output
    tokens), written by the agent command; None when it wrote nothing readable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _usage_of(data) if isinstance(data, dict) else None


def usage_from_output(preset: str, output: str) -> Usage | None:
    """What a known CLI reported in its own output; None when it reported nothing."""
    if preset == "codex":
        return _codex(output)
    if preset in ("claude", "gemini"):
        data = _last_json_object(output)
        if data is None:
            return None
        return _claude(data) if preset == "claude" else _gemini(data)
    return None


def _usage_of(data: Mapping[str, Any]) -> Usage | None:
    prompt = _int(data.get("prompt_tokens", data.get("input_tokens")))
    completion = _int(data.get("completion_tokens", data.get("output_tokens")))
    cost = _float(data.get("cost_usd"))
    if prompt is None and completion is None and cost is None:
        return None
    return Usage(
        prompt_tokens=prompt or 0, completion_tokens=completion or 0, requests=1, cost_usd=cost
    )


def _claude(data: Mapping[str, Any]) -> Usage | None:
    """``claude -p --output-format json``: total_cost_usd, usage.{input,cache_*,output}_tokens."""
    raw = data.get("usage")
    usage: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    prompt = sum(
        _int(usage.get(k)) or 0
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    completion = _int(usage.get("output_tokens")) or 0
    cost = _float(data.get("total_cost_usd"))
    if cost is None and not (prompt or completion):
        return None
    turns = _int(data.get("num_turns")) or 1
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=turns, cost_usd=cost)


def _gemini(data: Mapping[str, Any]) -> Usage | None:
    """``gemini --output-format json``: stats.models.<model>.tokens.{prompt,candidates}."""
    stats = data.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict):
        return None
    prompt = completion = requests = 0
    for model in models.values():
        tokens = model.get("tokens", {}) if isinstance(model, dict) else {}
        api = model.get("api", {}) if isinstance(model, dict) else {}
        prompt += _int(tokens.get("prompt")) or 0
        completion += (_int(tokens.get("candidates")) or 0) + (_int(tokens.get("thoughts")) or 0)
        requests += _int(api.get("totalRequests")) or 0
    if not (prompt or completion):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=requests or 1)


def _codex(output: str) -> Usage | None:
    """Codex prints one total (``tokens used`` then ``12,345``), not prompt and completion."""
    found = _CODEX_TOKENS.findall(output)
    if not found:
        return None
    figure, scale = found[-1]
    try:
        total = float(figure.replace(",", ""))
    except ValueError:
        return None
    total *= {"k": 1_000, "m": 1_000_000}.get(scale.lower(), 1)
    return Usage(prompt_tokens=int(total), requests=1)


def _last_json_object(output: str) -> dict[str, Any] | None:
    """The result object: a one-line JSON (claude), or one pretty-printed from a line that opens
    with ``{`` after some warning lines (gemini)."""
    for line in reversed(output.strip().splitlines()):
        if line.startswith("{") and line.rstrip().endswith("}"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            return data if isinstance(data, dict) else None
    for start in (m.start() for m in re.finditer(r"^\{", output, re.MULTILINE)):
        try:
            data = json.loads(output[start:])
        except ValueError:
            continue
        return data if isinstance(data, dict) else None
    return None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


def total_tokens(usage: Usage) -> int:
    return usage.prompt_tokens + usage.completion_tokens
