"""The command line's parser: no abbreviations, and a mistake corrected (issue 13).

Imported only when a parser is built (never for ``--version``, a cached ``--help`` or the Stop
hook), so argparse and difflib cost nothing on those paths.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """No abbreviations (``--max-iter`` is not ``--max-iters``); a mistake gets this command's
    usage and the closest valid name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self.prog != "greenloop":  # a subcommand: report it here, with its usage
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        hint = did_you_mean(message, self)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{hint}\n")


def did_you_mean(message: str, parser: argparse.ArgumentParser) -> str:
    import difflib
    import re

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        wrong, names = choice[1], [n.strip(" '") for n in choice[2].split(",")]
    elif message.startswith("unrecognized arguments: "):
        wrong = message.split(": ", 1)[1].split(maxsplit=1)[0]
        names = [o for a in parser._actions for o in a.option_strings]
    else:
        return ""
    close = difflib.get_close_matches(wrong.split("=", 1)[0], names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""
