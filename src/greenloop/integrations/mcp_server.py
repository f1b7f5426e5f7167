"""``greenloop mcp``: the verifier as MCP tools over stdio (official ``mcp`` SDK, extra ``[mcp]``).

Tools: ``verify`` (the cascade or a given command -> verdict, counts, digest), ``detect`` (the
stages and why), ``last_report`` (the latest ``greenloop run`` record).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError

INSTALL_HINT = "greenloop mcp needs the MCP SDK: pip install 'greenloop[mcp]'"
INSTRUCTIONS = (
    "greenloop runs this repository's verifier (format, lint, type check, tests) and returns a "
    "bounded digest of what failed. Call `verify` after editing code; a verdict of env_failure "
    "means the environment is broken, not the code: report it to the user instead of editing."
)


def main_mcp(args: argparse.Namespace) -> int:
    try:
        server_class = _server_class()
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    build_server(server_class, Path(args.repo).resolve(), use_cache=args.cache).run()
    return 0


def _server_class() -> Any:
    import importlib

    try:  # mcp >= 2 renamed FastMCP to MCPServer
        return importlib.import_module("mcp.server.mcpserver").MCPServer
    except ImportError:
        return importlib.import_module("mcp.server.fastmcp").FastMCP


def build_server(server_class: Any, root: Path, *, use_cache: bool = True) -> Any:
    import anyio

    async def verify(command: str | None = None, all_stages: bool = False) -> dict[str, Any]:
        """Run the verifier once (the configured/detected cascade, or `command` as a shell
        command) and return verdict, exit_code, counts, failures and the digest to act on.
        A green run of this exact tree from the last minutes is reused (`reused` says when)."""
        work = partial(verify_json, root, command, all_stages, use_cache=use_cache)
        return _redacted(await anyio.to_thread.run_sync(work))

    async def detect() -> dict[str, Any]:
        """The verifier stages greenloop would run here, fastest first, and why each was chosen."""
        return _redacted(await anyio.to_thread.run_sync(partial(detect_json, root)))

    async def last_report(run_id: str = "last") -> dict[str, Any]:
        """The record of the latest (or the given) `greenloop run` in this repository."""
        return _redacted(await anyio.to_thread.run_sync(partial(last_report_json, root, run_id)))

    server = server_class("greenloop", instructions=INSTRUCTIONS)
    for tool in (verify, detect, last_report):
        server.add_tool(tool)
    return server


def _redacted(data: dict[str, Any]) -> dict[str, Any]:
    """Replies go out through the MCP library's own stdout writer: redacted here, like all output."""
    from greenloop.redact import redact_data

    reply: dict[str, Any] = redact_data(data)
    return reply


def verify_json(
    root: Path, command: str | None = None, all_stages: bool = False, *, use_cache: bool = True
) -> dict[str, Any]:
    from dataclasses import replace

    from greenloop import git
    from greenloop.config import load_config
    from greenloop.digest import build_digest
    from greenloop.loop.checking import cache_store, resolve_cascade, run_or_reuse
    from greenloop.report import render as report
    from greenloop.verify.cache import Reuse

    config = load_config(root)
    if all_stages:
        config = replace(config, all_stages=True)
    cascade = resolve_cascade(root, config, (command,) if command else ())
    store = cache_store(root, config, wanted=use_cache)
    result = run_or_reuse(root, cascade, config, store=store)
    if isinstance(result, Reuse):
        data: dict[str, Any] = json.loads(report.render_reuse(result, "json"))
        return data
    diff = git.diff_head(root) if git.get_root(root) else ""
    digest = build_digest(result, root=root, budget=config.budget, diff=diff or None)
    return report.check_json(result, digest)


def detect_json(root: Path) -> dict[str, Any]:
    from greenloop.config import load_config
    from greenloop.loop.checking import resolve_cascade
    from greenloop.report import render as report

    cascade = resolve_cascade(root, load_config(root))
    data: dict[str, Any] = json.loads(report.render_cascade(cascade, "json"))
    return data


def last_report_json(root: Path, run_id: str = "last") -> dict[str, Any]:
    from greenloop.loop import record

    try:
        return record.load_report(record.common_dir_of(root), run_id)
    except FatalError as exc:
        return {"error": f"no runs yet: {exc}"}
