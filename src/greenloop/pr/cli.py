"""``greenloop pr``'s flags. Only argparse at import time: the parser is built on every call."""

from __future__ import annotations

import argparse

MODES = ("push", "pr", "suggest")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent",
        help="preset (claude, aider, codex, gemini, cline, openhands), openai:MODEL, or a shell command",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="push",
        help="after a fix: push the iteration commits to the PR's branch (default), open a fix "
        "PR against it (pr), or only comment with the diff (suggest)",
    )
    p.add_argument(
        "--base", metavar="REF", help="the branch the PR merges into (default: the event's)"
    )
    p.add_argument(
        "--forge",
        choices=("github", "gitlab", "auto"),
        default="auto",
        help="the forge whose API the comment, PR and check go to (default: from the environment)",
    )
    p.add_argument("--max-iters", type=int, help="agent iterations at most (default 5)")
    p.add_argument("--max-time", type=float, help="wall-clock seconds for the whole run")
    p.add_argument("--timeout", type=float, help="seconds per verifier stage")
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop before a call that would pass this spend",
    )
    p.add_argument("--max-tokens", type=int, metavar="N", help="the same cap in model tokens")
    p.add_argument(
        "--pr-max-cost",
        type=float,
        metavar="USD",
        help="what every run on this PR may spend together (kept in greenloop's comment; exit 7 "
        "once spent)",
    )
    p.add_argument(
        "--pr-max-attempts",
        type=int,
        metavar="N",
        help="runs with the agent on this PR at most (kept in greenloop's comment; exit 7 after)",
    )
    p.add_argument("--html", metavar="PATH", help="also write the run's report as an HTML page")
    p.add_argument(
        "--no-comment",
        dest="comment",
        action="store_false",
        help="don't create or edit greenloop's comment on the PR",
    )
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="stdout: text (default) or json"
    )


def main_pr(args: argparse.Namespace) -> int:
    from greenloop.pr.entry import main

    return main(args)
