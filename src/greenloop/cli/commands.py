"""Each subcommand's parser: its help, its options and their order (the --help text).

Which function runs each command is entry.py's (``HANDLERS``); this module only declares.
Imported only when a parser is built, never on the Stop hook's or --version's path."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see entry.py
if TYPE_CHECKING:
    import argparse

    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

COMMAND_HELP = (
    "-- CMD ...: the verifier command, instead of the detected or configured stages "
    "(e.g. -- pytest -x; one quoted argument with shell syntax runs through sh -c)."
)
_NO_CACHE = "always run the verifier, even on a tree whose green run is still fresh"
_HOST_NAMES = (
    "claude, codex, gemini, copilot (Copilot CLI and VS Code), cursor, openhands, goose, kimi or "
    "opencode"
)


def add_global_options(command: argparse.ArgumentParser) -> None:
    """-C and -v after the subcommand mean what they mean before it (hidden: help shows them once).

    SUPPRESS as the default: absent here, the value given before the command stays."""
    import argparse

    hidden, keep = argparse.SUPPRESS, argparse.SUPPRESS
    command.add_argument("-C", dest="repo", default=keep, help=hidden)
    command.add_argument("-v", "--verbose", action="count", default=keep, help=hidden)


STAGES_FROM_HELP = (
    "where stages come from: detect (default: manifests, agent docs), ci (the commands the "
    "project's CI runs on a pull request), both (detected plus the CI checks detection lacks)"
)


def add_check(sub: SubParsers) -> None:
    p = sub.add_parser(
        "check",
        help="run the verifier cascade once and print the digest",
        description="Run the detected or configured verifier once. Exit codes: 0 green, "
        "1 failed, 2 usage/config, 3 environment failure, 4 timeout or killed, 5 untrusted green, "
        "6 only known-flaky tests failed.",
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
    p.add_argument("--stages-from", choices=("detect", "ci", "both"), help=STAGES_FROM_HELP)
    p.add_argument(
        "--cache",
        action="store_true",
        default=False,
        help="reuse a green run of this exact tree from the last cache_ttl seconds",
    )
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)


def add_detect(sub: SubParsers) -> None:
    p = sub.add_parser("detect", help="show the verifier stages and why they were chosen")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text or json")
    p.add_argument("--stages-from", choices=("detect", "ci", "both"), help=STAGES_FROM_HELP)


def add_hook(sub: SubParsers) -> None:
    p = sub.add_parser(
        "hook",
        help="run as an agent's Stop hook (reads the event JSON on stdin)",
        description="stop: the Stop hook of Claude Code, Codex CLI, Gemini CLI, Copilot CLI, "
        "Cursor, VS Code, Goose, Kimi Code and the OpenHands SDK (the host is read from the event; "
        "Kimi Code's needs --host kimi; claude-stop is the same hook). Green allows the "
        "stop; a failure blocks it with the digest; environment failures and untrusted greens are "
        "told to the user only. Bounded per session by max_iters, max_time and a repeated failure. "
        "post-tool: after the agent's shell tool (Claude Code PostToolUse, Codex CLI PostToolUse, "
        "Gemini CLI AfterTool, Copilot CLI postToolUse, OpenCode's plugin): "
        "a verifier's output is replaced by its digest, the full output saved under the git dir.",
    )
    p.add_argument("event", choices=("stop", "claude-stop", "post-tool"), help="the hook to run")
    p.add_argument(
        "--host",
        help="claude, codex, gemini, copilot, cursor, vscode, goose, kimi or openhands (default: "
        "read from the event); a name it does not know allows the stop and says so",
    )
    p.add_argument(
        "--goal",
        action="store_true",
        help="stop: only a trusted green allows the stop (the goal recipe: an untrusted green, "
        "such as skipped or deleted tests, blocks too, within the same bound)",
    )
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)


def add_install(sub: SubParsers) -> None:
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
        help="only the Stop hook, not the tool-output digest (where the host has one)",
    )
    p.add_argument(
        "--wrap",
        action="store_true",
        help="Claude Code: wrap every verifier command the agent runs, not only those your "
        "permission rules allow (for Bash allowed on Claude's command line, --allowedTools Bash, "
        "which a hook cannot see); Claude Code then decides on the wrapped command",
    )
    p.add_argument(
        "--goal",
        action="store_true",
        help="the Stop hook as the judge of a goal loop (Claude Code's /goal, Codex's goal mode): "
        "only a trusted green ends it; an untrusted green (tests skipped or deleted) blocks too",
    )
    p.add_argument("--list", action="store_true", help="show what is installed where")


def add_uninstall(sub: SubParsers) -> None:
    p = sub.add_parser(
        "uninstall",
        help="remove greenloop's hooks from an agent host's configuration",
        description="Remove greenloop's entries; a file unchanged since install gets its bytes "
        "back from the backup.",
    )
    p.add_argument("target", metavar="HOST", help=_HOST_NAMES)
    p.add_argument("--global", dest="global_", action="store_true", help="the user's configuration")


def add_mcp(sub: SubParsers) -> None:
    p = sub.add_parser("mcp", help="serve verify/detect/last_report as MCP tools over stdio")
    p.add_argument("--no-cache", dest="cache", action="store_false", help=_NO_CACHE)


def add_demo(sub: SubParsers) -> None:
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


def add_run(sub: SubParsers) -> None:
    p = sub.add_parser(
        "run",
        help="the loop: baseline -> agent -> commit -> verify -> decide, bounded",
        usage="greenloop run --agent AGENT [options] [-- CMD ...]",
        description="Exit codes: 0 success; 1 exhausted/stalled/circular/regression/"
        "non_convergence/agent_failure; 2 usage or precondition; 3 env_failure; "
        "4 timeout/unresolved; 5 suspicious_pass; 130 interrupted.",
        epilog=COMMAND_HELP,
    )
    _add_run_task(p)
    _add_run_caps(p)
    _add_run_outcome(p)
    _add_run_verifier(p)
    p.add_argument(
        "--format",
        choices=("text", "json", "md"),
        default="text",
        help="the final report on stdout: text (default), json, or md (Markdown)",
    )
    p.add_argument(
        "-y", "--yes", action="store_true", help="don't ask for confirmation on a terminal"
    )


def _add_run_task(p: argparse.ArgumentParser) -> None:
    """The agent and what it is asked."""
    p.add_argument(
        "--agent",
        help="preset (claude, aider, codex, gemini, cline, openhands), openai:MODEL, or a shell command",
    )
    p.add_argument("--task", help="the task for iteration 1 (default: make the verifier pass)")


def _add_run_caps(p: argparse.ArgumentParser) -> None:
    """Iterations, time, spend: the run's bounds."""
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


def _add_run_outcome(p: argparse.ArgumentParser) -> None:
    """What happens to the branch and how a green is judged."""
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


def _add_run_verifier(p: argparse.ArgumentParser) -> None:
    """The digest, the stages and subsets; then --base-url and --must-pass (their place in --help)."""
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
    p.add_argument("--stages-from", choices=("detect", "ci", "both"), help=STAGES_FROM_HELP)
    p.add_argument("--base-url", help="OpenAI-compatible endpoint for --agent openai:MODEL")
    p.add_argument(
        "--must-pass",
        action="append",
        metavar="ID",
        help="a test (pytest node id) that must have run and passed for a success; repeatable",
    )


def add_batch(sub: SubParsers) -> None:
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


def add_pr(sub: SubParsers) -> None:
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


def add_bench(sub: SubParsers) -> None:
    from greenloop.bench.cli import add_arguments

    p = sub.add_parser(
        "bench",
        help="seeded bugs in your own repository, run through batch: which agent fixes them",
        usage="greenloop bench --agent A [--agent B ...] --out DIR [options] [-- CMD ...]\n"
        "       greenloop bench --export harbor DIR [--mutants N] [--seed S] [options] [-- CMD ...]",
    )
    add_arguments(p)


def add_report(sub: SubParsers) -> None:
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


def add_runs(sub: SubParsers) -> None:
    sub.add_parser("runs", help="list recorded runs, newest first")


def add_flaky(sub: SubParsers) -> None:
    p = sub.add_parser(
        "flaky",
        help="the known-flaky tests: passed and failed on one tree (remembered across runs)",
        description="Lists the tests that passed and failed on the same tree in the runs greenloop "
        "remembers (check, the Stop hook, the loop's re-runs): never the agent's first target; a "
        "run whose only failures are these exits 6. --forget drops a test's history.",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="text or json")
    forget = p.add_mutually_exclusive_group()
    forget.add_argument("--forget", metavar="TEST", help="forget this test's outcomes so far")
    forget.add_argument("--all", action="store_true", help="with nothing else: forget every test")


def add_recover(sub: SubParsers) -> None:
    sub.add_parser("recover", help="after a killed run: restore the branch, keep the attempt")


SUBCOMMANDS = (
    add_check,
    add_detect,
    add_run,
    add_batch,
    add_pr,
    add_bench,
    add_report,
    add_runs,
    add_flaky,
    add_recover,
    add_hook,
    add_install,
    add_uninstall,
    add_mcp,
    add_demo,
)
"""In --help's order."""
