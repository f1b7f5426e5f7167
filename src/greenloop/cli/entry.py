"""argparse -> Config -> one library function per subcommand -> an int exit code.

Imports of anything heavy stay inside the handlers: the Stop hook runs us on every agent turn.
"""

from __future__ import annotations

import os
import sys

from greenloop import __version__
from greenloop.cli.help import cached_help, help_request, render_with
from greenloop.errors import FatalError, NotStarted

EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_READER_GONE = 141  # 128 + SIGPIPE: what the shell reports for `git log | head -1`

TYPE_CHECKING = False  # not typing's: importing typing alone costs a tenth of Python's start-up
if TYPE_CHECKING:  # argparse is imported only when a parser is built: not for --version or --help
    import argparse
    from collections.abc import Callable, Sequence

    Handler = Callable[[argparse.Namespace], int]

HANDLERS = {
    "check": ("greenloop.loop.checking", "main_check"),
    "detect": ("greenloop.loop.checking", "main_detect"),
    "run": ("greenloop.cli.run", "main_run"),
    "batch": ("greenloop.batch.cli", "main_batch"),
    "pr": ("greenloop.pr.cli", "main_pr"),
    "bench": ("greenloop.bench.cli", "main_bench"),
    "report": ("greenloop.cli.run", "main_report"),
    "runs": ("greenloop.loop.record", "main_runs"),
    "flaky": ("greenloop.verify.outcomes", "main_flaky"),
    "recover": ("greenloop.loop.recover", "main_recover"),
    "install": ("greenloop.integrations.install", "main_install"),
    "uninstall": ("greenloop.integrations.install", "main_uninstall"),
    "mcp": ("greenloop.integrations.mcp_server", "main_mcp"),
    "demo": ("greenloop.demo.run", "main_demo"),
}
"""The (module, function) each subcommand runs, imported when it runs; ``hook`` dispatches on
its event (``_hook_handler``). The options are cli_commands.py's."""


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main_process(argv)
        sys.stdout.flush()  # here, where a reader that is gone can still be told apart
    except BrokenPipeError:
        return _reader_gone()
    return code


def _main_process(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list == ["--version"]:  # answered before argparse builds help formatters
        print(f"greenloop {__version__}")
        return 0
    if help_request(args_list):  # rendered once, then as fast as --version (issue 16)
        text = cached_help(args_list, lambda: render_with(build_parser().parse_args, args_list))
        if text:
            sys.stdout.write(text)
            return 0
    if argv is None and args_list[:2] == ["hook", "post-tool"]:
        return _post_tool(args_list)
    # the Stop hook runs on every agent turn, as a short-lived process of its own
    hook_process = argv is None and _stop_hook_args(args_list) is not None
    raw: bytes | None = None
    memo: str | None = None
    if hook_process and args_list[:2] != ["hook", "post-tool"]:
        from greenloop.integrations import hook_hit

        raw = sys.stdin.buffer.read()
        memo = hook_hit.memo_path(args_list, raw)  # before anything here touches os.environ
        if memo is not None and hook_hit.answer(memo):  # a repeated stop on a tree known green
            _exit_now(0, save=False)
    if hook_process:
        import gc

        gc.disable()  # nothing it builds outlives the process: collections are pure cost
    if argv is None:  # our own process, not a library call
        from greenloop.cli import codecache

        codecache.install(args_list[0] if args_list else "")  # before any dataclass is built
        from greenloop.processes import orphans

        orphans.own_process()  # may become a child subreaper
    from greenloop.redact import redacting_streams

    with redacting_streams():  # issue 12: every byte written to stdout/stderr is redacted
        code = _main(args_list, raw=raw, memo=memo)
    if hook_process:
        _exit_now(code)
    if argv is None:
        codecache.save()
    return code


def _post_tool(args_list: list[str]) -> int:
    """``hook post-tool`` runs on every shell call of the agent (issue 25): a command that is no
    verifier is answered before the code cache, the orphan sweep or the redacting streams."""
    from greenloop.integrations import tool_gate

    args = _post_tool_args(args_list)
    raw = tool_gate.read_input(sys.stdin.buffer)
    if args is not None and tool_gate.nothing_to_do(raw):
        _exit_now(0, save=False)
    import gc

    gc.disable()  # nothing it builds outlives the process
    from greenloop.cli import codecache
    from greenloop.redact import redacting_streams

    codecache.install(args_list[0])
    with redacting_streams():
        code = _main(args_list, raw=raw)
    _exit_now(code)
    return code


def _exit_now(code: int, *, save: bool = True) -> None:
    """End the process without tearing every module down (a tenth of the hook's own CPU).

    Only once the reply is written and flushed: the hook has no threads, and its files are
    closed and its temporary directories removed before ``_main`` returns."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 -- not contextlib: the post-tool gate exits here, importing nothing
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach the reader
            pass
    if save:
        from greenloop.cli import codecache

        codecache.save()  # after the reply: only a first run, or a new greenloop, writes it
    os._exit(code)


def _main(args_list: list[str], *, raw: bytes | int | None = None, memo: str | None = None) -> int:
    args = _stop_hook_args(args_list)  # no parser built for the line run on every agent turn
    if args is not None and raw is not None:
        args.raw = raw  # the payload read already: post-tool's gate, the stop's cache-hit path
        args.memo = memo
    if args is None:
        parser = build_parser()
        args = parser.parse_args(_split_command(args_list, parser))
        if not getattr(args, "handler", None):
            parser.print_help()
            return EXIT_USAGE
    if args.verbose:
        import logging

        level = logging.DEBUG if args.verbose > 1 else logging.INFO
        logging.basicConfig(level=level, format="greenloop: %(message)s")
    if not os.path.isdir(args.repo):
        print(f"greenloop: -C {args.repo}: no such directory", file=sys.stderr)
        return EXIT_USAGE
    name = _subcommand(args_list)
    if name == "hook" and "post-tool" in args_list:
        name = ""  # it digests an output the host ran: it runs no command itself
    missing = shell_missing(name, os.environ.get("PATH", ""))
    if missing:
        print(f"greenloop: {missing}", file=sys.stderr)
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
        return code
    except FatalError as exc:
        print(f"greenloop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NotStarted as exc:  # declined at the prompt: a choice, not a failure
        print(f"greenloop: {exc}", file=sys.stderr)
        return 0
    except KeyboardInterrupt:
        print("greenloop: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()
    except Exception:
        return _crash()


NEEDS_SHELL = frozenset({"check", "run", "batch", "pr", "bench", "demo", "hook", "mcp"})
"""Commands that run verifiers or agents through ``sh -c`` (issue 41)."""


def shell_missing(command: str, path: str) -> str:
    """One line when ``command`` runs commands through ``sh`` and no ``sh`` is on ``path`` (a
    Windows machine outside WSL and Git Bash); "" otherwise. Plain ``os`` calls: the Stop hook
    pays a few ``access`` calls, no import."""
    if command not in NEEDS_SHELL:
        return ""
    for folder in path.split(os.pathsep):
        if folder and os.access(os.path.join(folder, "sh"), os.X_OK):
            return ""
    return (
        f"greenloop {command} runs verifiers and agents through a POSIX shell, and no `sh` is on "
        "PATH: on Windows run it in WSL, or in Git Bash (its sh on PATH); on Linux and macOS, "
        "put /bin on PATH"
    )


def _subcommand(args_list: list[str]) -> str:
    """The subcommand's name: the first word that is no option or ``-C``'s folder."""
    words = iter(args_list)
    for word in words:
        if word == "-C":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def _stop_hook_args(argv: list[str]) -> argparse.Namespace | None:
    """``hook stop [--host NAME] [--goal] [--no-cache]`` (or ``hook claude-stop [--no-cache]``), as
    the parser would read it (a test holds that); ``hook post-tool`` has its own fast path; any
    other line is left to the parser."""
    if argv[:2] == ["hook", "post-tool"]:
        return _post_tool_args(argv)
    if argv[:2] not in (["hook", "stop"], ["hook", "claude-stop"]):
        return None
    rest, host = argv[2:], None
    if argv[1] == "stop" and rest[:1] == ["--host"] and len(rest) > 1:
        rest, host = rest[2:], rest[1]
    elif argv[1] == "stop" and rest[:1] and rest[0].startswith("--host="):
        rest, host = rest[1:], rest[0].removeprefix("--host=")
    goal = argv[1] == "stop" and rest[:1] == ["--goal"]
    rest = rest[1:] if goal else rest
    if rest not in ([], ["--no-cache"]):
        return None
    from types import SimpleNamespace  # argparse's Namespace without importing argparse

    handler = _lazy("greenloop.integrations.claude_hook", "main_hook")
    fields = {"repo": ".", "verbose": 0, "command": [], "event": argv[1], "host": host}
    # not typing.cast: importing typing costs more than the rest of this path
    args: argparse.Namespace = SimpleNamespace(**fields, handler=handler, cache=not rest, goal=goal)  # type: ignore[assignment]
    return args


def _post_tool_args(argv: list[str]) -> argparse.Namespace | None:
    """``hook post-tool [--host NAME]``: run on every shell call of the agent (issue 25)."""
    rest = argv[2:]
    if len(rest) == 1 and rest[0].startswith("--host="):
        rest = rest[0].split("=", 1)
    if rest and (len(rest) != 2 or rest[0] != "--host"):
        return None
    from types import SimpleNamespace

    handler = _lazy("greenloop.integrations.tool_output", "main_post_tool")
    fields = {"repo": ".", "verbose": 0, "command": [], "event": "post-tool", "cache": True}
    fields["goal"] = False
    args: argparse.Namespace = SimpleNamespace(  # type: ignore[assignment]
        **fields, handler=handler, host=rest[1] if rest else None
    )
    return args


def _split_command(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """Everything after ``--`` is the verifier command, kept verbatim."""
    if "--" not in argv:
        return argv
    i = argv.index("--")
    parser.set_defaults(command=argv[i + 1 :])
    return argv[:i]


def _reader_gone() -> int:
    """The reader closed the pipe (``greenloop runs | head -1``): stop quietly, as git does.

    Exit 141, not 0: a truncated ``check`` must not read as green under ``set -o pipefail``.
    stdout is pointed at /dev/null, so the interpreter's last flush at exit cannot fail again."""
    quiet_stdout()
    return EXIT_READER_GONE


def quiet_stdout() -> None:
    """stdout pointed at /dev/null: its reader is gone, and the last flush at exit must not fail."""
    from contextlib import suppress

    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _crash() -> int:
    import time
    import traceback
    from pathlib import Path

    from greenloop.redact import redact

    directory = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "greenloop"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        log = directory / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        log.write_text(redact(traceback.format_exc()), encoding="utf-8")
        where = str(log)
    except OSError:
        where = "(could not write a crash log)"
    exc = sys.exc_info()[1]
    print(f"greenloop: internal error: {exc!r}; traceback in {where}", file=sys.stderr)
    return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    from greenloop.cli.commands import SUBCOMMANDS, add_global_options
    from greenloop.cli.parser import Parser

    parser = Parser(
        prog="greenloop",
        description="Wrap any code-editing agent in a bounded, honest verify -> fix loop.",
    )
    parser.add_argument("--version", action="version", version=f"greenloop {__version__}")
    parser.add_argument("-C", dest="repo", default=".", help="run as if started in this directory")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more diagnostics")
    parser.set_defaults(command=[], handler=None)
    sub: argparse._SubParsersAction[argparse.ArgumentParser]
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")  # type: ignore[assignment]
    for add in SUBCOMMANDS:
        add(sub)
    for name, command in sub.choices.items():
        handler = _hook_handler if name == "hook" else _lazy(*HANDLERS[name])
        command.set_defaults(handler=handler)
        add_global_options(command)  # `greenloop run -C repo` too, as git does not (issue 26)
    return parser


def _hook_handler(args: argparse.Namespace) -> int:
    if args.event == "post-tool":  # reached only for spellings the fast path does not take
        return _lazy("greenloop.integrations.tool_output", "main_post_tool")(args)
    return _lazy("greenloop.integrations.claude_hook", "main_hook")(args)


def _lazy(module: str, function: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        import importlib

        fn: Handler = getattr(importlib.import_module(module), function)
        return fn(args)

    return handler
