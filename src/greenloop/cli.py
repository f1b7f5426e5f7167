"""argparse -> Config -> one library function per subcommand -> an int exit code.

Imports of anything heavy stay inside the handlers: the Stop hook runs us on every agent turn.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from greenloop import __version__
from greenloop.errors import FatalError

EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(_split_command(args_list, parser))
    logging.basicConfig(
        level=logging.DEBUG
        if args.verbose > 1
        else logging.INFO
        if args.verbose
        else logging.WARNING,
        format="greenloop: %(message)s",
    )
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
        return code
    except FatalError as exc:
        print(f"greenloop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("greenloop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:
        return _crash()


def _split_command(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """Everything after ``--`` is the verifier command, kept verbatim."""
    if "--" not in argv:
        return argv
    i = argv.index("--")
    parser.set_defaults(command=argv[i + 1 :])
    return argv[:i]


def _crash() -> int:
    directory = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "greenloop"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        log = directory / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        log.write_text(traceback.format_exc(), encoding="utf-8")
        where = str(log)
    except OSError:
        where = "(could not write a crash log)"
    exc = sys.exc_info()[1]
    print(f"greenloop: internal error: {exc!r}; traceback in {where}", file=sys.stderr)
    return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="greenloop",
        description="Wrap any code-editing agent in a bounded, honest verify -> fix loop.",
    )
    parser.add_argument("--version", action="version", version=f"greenloop {__version__}")
    parser.add_argument("-C", dest="repo", default=".", help="run as if started in this directory")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more diagnostics")
    parser.set_defaults(command=[], handler=None)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (_add_check, _add_detect, _add_hook, _add_install, _add_uninstall, _add_mcp):
        add(sub)
    return parser


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="run the verifier cascade once and print the digest",
        description="Run the detected or configured verifier once. Exit codes: 0 green, "
        "1 failed, 2 usage/config, 3 environment failure, 4 timeout or killed, 5 untrusted green.",
        usage="greenloop check [options] [-- CMD ...]",
    )
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.add_argument("--timeout", type=float, help="seconds per stage (default 600)")
    p.add_argument(
        "--all-stages",
        action="store_true",
        default=None,
        help="don't stop at the first failing stage",
    )
    p.add_argument("--budget", type=int, help="digest budget in tokens (default 2000)")
    p.set_defaults(handler=_lazy("greenloop.check", "main_check"))


def _add_detect(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("detect", help="show the verifier stages and why they were chosen")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=_lazy("greenloop.check", "main_detect"))


def _add_hook(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hook",
        help="run as an agent's Stop hook (reads the event JSON on stdin)",
        description="claude-stop: the Claude Code / Codex Stop hook. Green allows the stop; a "
        "failure blocks it with the digest; environment failures and untrusted greens are told "
        "to the user only. Bounded per session by max_iters and by a repeated failure.",
    )
    p.add_argument("event", choices=("claude-stop",))
    p.set_defaults(handler=_lazy("greenloop.integrations.claude_hook", "main_hook"))


def _add_install(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("install", help="add greenloop's Stop hook to Claude Code's settings")
    p.add_argument("target", choices=("claude",))
    p.add_argument("--global", dest="global_", action="store_true", help="~/.claude/settings.json")
    p.set_defaults(handler=_lazy("greenloop.integrations.install", "main_install"))


def _add_uninstall(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("uninstall", help="remove greenloop's Stop hook from Claude Code's settings")
    p.add_argument("target", choices=("claude",))
    p.add_argument("--global", dest="global_", action="store_true", help="~/.claude/settings.json")
    p.set_defaults(handler=_lazy("greenloop.integrations.install", "main_uninstall"))


def _add_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve verify/detect/last_report as MCP tools over stdio")
    p.set_defaults(handler=_lazy("greenloop.integrations.mcp_server", "main_mcp"))


def _lazy(module: str, function: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        import importlib

        fn: Handler = getattr(importlib.import_module(module), function)
        return fn(args)

    return handler
