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
COMMAND_HELP = (
    "-- CMD ...: the verifier command, instead of the detected or configured stages "
    "(e.g. -- pytest -x; one quoted argument with shell syntax runs through sh -c)."
)


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
    # issue 16: the Stop hook runs on every agent turn, as a short-lived process of its own
    hook_process = argv is None and _stop_hook_args(args_list) is not None
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
        code = _main(args_list)
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


def _main(args_list: list[str], *, raw: bytes | int | None = None) -> int:
    args = _stop_hook_args(args_list)  # no parser built for the line run on every agent turn
    if args is not None and raw is not None:
        args.raw = raw  # post-tool: the payload the gate read
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


def _stop_hook_args(argv: list[str]) -> argparse.Namespace | None:
    """``hook stop [--host NAME] [--no-cache]`` (or ``hook claude-stop [--no-cache]``) exactly, as
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
    if rest not in ([], ["--no-cache"]):
        return None
    from types import SimpleNamespace  # argparse's Namespace without importing argparse

    handler = _lazy("greenloop.integrations.claude_hook", "main_hook")
    fields = {"repo": ".", "verbose": 0, "command": [], "event": argv[1], "host": host}
    # not typing.cast: importing typing costs more than the rest of this path
    args: argparse.Namespace = SimpleNamespace(**fields, handler=handler, cache=not rest)  # type: ignore[assignment]
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
    from contextlib import suppress

    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_READER_GONE


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
    for add in (
        _add_check,
        _add_detect,
        _add_run,
        _add_batch,
        _add_pr,
        _add_bench,
        _add_report,
        _add_runs,
        _add_recover,
        _add_hook,
        _add_install,
        _add_uninstall,
        _add_mcp,
        _add_demo,
    ):
        add(sub)
    for command in sub.choices.values():  # `greenloop run -C repo` too, as git does not (issue 26)
        _add_global_options(command)
    return parser


def _add_global_options(command: argparse.ArgumentParser) -> None:
    """-C and -v after the subcommand mean what they mean before it (hidden: help shows them once).

    SUPPRESS as the default: absent here, the value given before the command stays."""
    import argparse

    hidden, keep = argparse.SUPPRESS, argparse.SUPPRESS
    command.add_argument("-C", dest="repo", default=keep, help=hidden)
    command.add_argument("-v", "--verbose", action="count", default=keep, help=hidden)


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check",
        help="run the verifier cascade once and print the digest",
        description="Run the detected or configured verifier once. Exit codes: 0 green, "
        "1 failed, 2 usage/config, 3 environment failure, 4 timeout or killed, 5 untrusted green.",
        usage="greenloop check [options] [-- CMD ...]",
        epilog=COMMAND_HELP,
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text (default), json, or github (::error annotations, then the digest)",
    )
    p.add_argument("--timeout", type=float, help="seconds per stage (default 600)")
    p.add_argument(
        "--all-stages",
        action="store_true",
        default=None,
        help="don't stop at the first failing stage",
    )
    p.add_argument("--budget", type=int, help="digest budget in tokens (default 2000)")
    p.add_argument(
        "--cache",
        action="store_true",
        default=False,
        help="reuse a green run of this exact tree from the last cache_ttl seconds",
    )
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)
    p.set_defaults(handler=_lazy("greenloop.loop.checking", "main_check"))


def _add_detect(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("detect", help="show the verifier stages and why they were chosen")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text or json")
    p.set_defaults(handler=_lazy("greenloop.loop.checking", "main_detect"))


_NO_CACHE = "always run the verifier, even on a tree whose green run is still fresh"


def _add_hook(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hook",
        help="run as an agent's Stop hook (reads the event JSON on stdin)",
        description="stop: the Stop hook of Claude Code, Codex CLI, Gemini CLI, Copilot CLI and "
        "Cursor (the host is read from the event; claude-stop is the same hook). Green allows the "
        "stop; a failure blocks it with the digest; environment failures and untrusted greens are "
        "told to the user only. Bounded per session by max_iters, max_time and a repeated failure. "
        "post-tool: after the agent's shell tool (Claude Code PostToolUse, Gemini CLI AfterTool): "
        "a verifier's output is replaced by its digest, the full output saved under the git dir.",
    )
    p.add_argument("event", choices=("stop", "claude-stop", "post-tool"), help="the hook to run")
    p.add_argument(
        "--host",
        help="claude, codex, gemini, copilot or cursor (default: read from the event); a name "
        "it does not know allows the stop and says so",
    )
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)
    p.set_defaults(handler=_hook_handler)


def _hook_handler(args: argparse.Namespace) -> int:
    if args.event == "post-tool":  # reached only for spellings the fast path does not take
        return _lazy("greenloop.integrations.tool_output", "main_post_tool")(args)
    return _lazy("greenloop.integrations.claude_hook", "main_hook")(args)


_HOST_NAMES = "claude, codex, gemini, copilot or cursor"


def _add_install(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "install",
        help="add greenloop's hooks to an agent host's configuration",
        description="Write greenloop's Stop hook (and, where the host can rewrite shell output, "
        "its tool-output hook) into the host's project configuration, or the user's with "
        "--global: merged with what is there, a backup kept, idempotent.",
    )
    p.add_argument("target", nargs="?", metavar="HOST", help=_HOST_NAMES)
    p.add_argument("--global", dest="global_", action="store_true", help="the user's configuration")
    p.add_argument(
        "--no-tool-output",
        dest="tool_output",
        action="store_false",
        help="only the Stop hook, not the tool-output digest (Claude Code, Gemini CLI)",
    )
    p.add_argument("--list", action="store_true", help="show what is installed where")
    p.set_defaults(handler=_lazy("greenloop.integrations.install", "main_install"))


def _add_uninstall(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "uninstall",
        help="remove greenloop's hooks from an agent host's configuration",
        description="Remove greenloop's entries; a file unchanged since install gets its bytes "
        "back from the backup.",
    )
    p.add_argument("target", metavar="HOST", help=_HOST_NAMES)
    p.add_argument("--global", dest="global_", action="store_true", help="the user's configuration")
    p.set_defaults(handler=_lazy("greenloop.integrations.install", "main_uninstall"))


def _add_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve verify/detect/last_report as MCP tools over stdio")
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)
    p.set_defaults(handler=_lazy("greenloop.integrations.mcp_server", "main_mcp"))


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="watch the loop fix a bundled buggy project (scripted model, offline, no key)",
        description="Copies a small project with two bugs into a temporary git repository and "
        "runs the real loop with the built-in agent against a scripted model server on "
        "127.0.0.1. Needs the [demo] extra (pytest and openai). Exit code: the loop's (0 on success).",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the demo repository and print its path"
    )
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="json: the report on stdout"
    )
    p.set_defaults(handler=_lazy("greenloop.demo.run", "main_demo"))


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="the loop: baseline -> agent -> commit -> verify -> decide, bounded",
        usage="greenloop run --agent AGENT [options] [-- CMD ...]",
        description="Exit codes: 0 success; 1 exhausted/stalled/circular/regression/"
        "non_convergence/agent_failure; 2 usage or precondition; 3 env_failure; "
        "4 timeout/unresolved; 5 suspicious_pass; 130 interrupted.",
        epilog=COMMAND_HELP,
    )
    p.add_argument(
        "--agent",
        help="preset (claude, aider, codex, gemini, cline, openhands), openai:MODEL, or a shell command",
    )
    p.add_argument("--task", help="the task for iteration 1 (default: make the verifier pass)")
    p.add_argument("--max-iters", type=int, help="agent iterations at most (default 5)")
    p.add_argument("--max-time", type=float, help="wall-clock seconds for the whole run")
    p.add_argument("--timeout", type=float, help="seconds per verifier stage")
    p.add_argument("--agent-timeout", type=float, help="seconds per agent call")
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop before an agent call that would pass this spend (from the usage it reports)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="the same cap in model tokens (prompt + completion)",
    )
    p.add_argument(
        "--on-fail",
        choices=("revert", "keep"),
        help="branch back to the start (default) or keep the commits",
    )
    p.add_argument(
        "--on-regression",
        choices=("stop", "continue"),
        help="when failures rise: roll the edit back and stop (default), or roll back and go on",
    )
    p.add_argument(
        "--allow-test-edits",
        action="store_true",
        default=None,
        help="don't call a green result suspicious because test files were modified",
    )
    p.add_argument(
        "--squash",
        action="store_true",
        default=None,
        help="on success, fold the iterations into one commit",
    )
    p.add_argument("--budget", type=int, help="digest budget in tokens")
    p.add_argument(
        "--all-stages",
        action="store_true",
        default=None,
        help="run every stage even after one fails (lint and type stages concurrently)",
    )
    p.add_argument(
        "--subset",
        choices=("auto", "failing", "affected", "off"),
        help="before the full gate: failing tests, then affected ones (default auto)",
    )
    p.add_argument("--base-url", help="OpenAI-compatible endpoint for --agent openai:MODEL")
    p.add_argument(
        "--must-pass",
        action="append",
        metavar="ID",
        help="a test (pytest node id) that must have run and passed for a success; repeatable",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "md"),
        default="text",
        help="the final report on stdout: text (default), json, or md (Markdown)",
    )
    p.add_argument(
        "-y", "--yes", action="store_true", help="don't ask for confirmation on a terminal"
    )
    p.set_defaults(handler=_lazy("greenloop.cli.run", "main_run"))


def _add_batch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from greenloop.batch.cli import add_arguments

    p = sub.add_parser(
        "batch",
        help="many loops at once, each in a fresh clone: a local pool or a Ray cluster; resumable",
        description="Runs every task of TASKS.jsonl (one JSON object per line: id, repo, ref, "
        "task, verifier, setup, agent, max_iters, timeout, fail_to_pass, pass_to_pass) in its own "
        "clone under DIR/work/. "
        "Exit codes: 0 every task succeeded; 1 any did not; 2 usage; 130 interrupted.",
    )
    add_arguments(p)
    p.set_defaults(handler=_lazy("greenloop.batch.cli", "main_batch"))


def _add_pr(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from greenloop.pr.cli import add_arguments

    p = sub.add_parser(
        "pr",
        help="on a pull request's head: the loop, then push the fix, open a fix PR, or comment",
        usage="greenloop pr --agent AGENT [--mode push|pr|suggest] [options] [-- CMD ...]",
        description="Baseline; if red, the loop under its caps; then push the iteration commits "
        "to the PR's branch, open a fix PR, or suggest the diff, and keep one PR comment up to "
        "date. Never force-pushes, never pushes to the base branch or a suspicious pass. Exit "
        "codes: run's (0 success, 1 not fixed, 3 env_failure, 4 timeout, 5 suspicious_pass); "
        "2 usage or a refusal (a fork's head, the base branch, no token).",
        epilog=COMMAND_HELP,
    )
    add_arguments(p)
    p.set_defaults(handler=_lazy("greenloop.pr.cli", "main_pr"))


def _add_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from greenloop.bench.cli import add_arguments

    p = sub.add_parser(
        "bench",
        help="seeded bugs in your own repository, run through batch: which agent fixes them",
        usage="greenloop bench --agent A [--agent B ...] --out DIR [options] [-- CMD ...]\n"
        "       greenloop bench --export harbor DIR [--mutants N] [--seed S] [options] [-- CMD ...]",
    )
    add_arguments(p)
    p.set_defaults(handler=_lazy("greenloop.bench.cli", "main_bench"))


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="show a run's report (text, json, md, html)")
    p.add_argument(
        "run_id", nargs="?", default="last", metavar="RUN_ID|last", help="default: the latest run"
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="text (default), json, md, or html (a self-contained page)",
    )
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--batch", metavar="DIR", help="the aggregate of a greenloop batch --out DIR")
    p.add_argument(
        "--bench", metavar="DIR", help="the scores of a greenloop bench --out DIR (bench.json)"
    )
    p.set_defaults(handler=_lazy("greenloop.cli.run", "main_report"))


def _add_runs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runs", help="list recorded runs, newest first")
    p.set_defaults(handler=_lazy("greenloop.loop.record", "main_runs"))


def _add_recover(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("recover", help="after a killed run: restore the branch, keep the attempt")
    p.set_defaults(handler=_lazy("greenloop.loop.recover", "main_recover"))


def _lazy(module: str, function: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        import importlib

        fn: Handler = getattr(importlib.import_module(module), function)
        return fn(args)

    return handler
