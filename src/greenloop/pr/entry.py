"""``greenloop pr`` from the command line: flags and environment -> run_pr -> outputs -> exit code."""

from __future__ import annotations

import argparse

from greenloop.errors import FatalError


def main(args: argparse.Namespace) -> int:
    raise FatalError(
        "greenloop pr: the flow is not in this commit yet (forge protocol and flags only)"
    )
