"""pytest's report laid out: its ``=== name ===`` sections, the short summary's FAILED/ERROR
entries (exact node ids) and the ``___ title ___`` blocks under FAILURES and ERRORS."""

from __future__ import annotations

import re
from dataclasses import dataclass

from greenloop.parsers.pytest_counts import SUMMARY, split_sessions

MAX_BLOCKS = 200
MAX_FAILURES = 500
_SECTION = re.compile(r"(?<!=)=+ (?P<name>[^=\n]+?) =+[ \t]*")
SECTIONS = (
    "ERRORS",
    "FAILURES",
    "short test summary info",
    "warnings summary",
    "PASSES",
    "XPASSES",
)
HEAD = 4_000_000
TAIL = 1_000_000
_HEADER = re.compile(r"^_+ (?P<title>[^\n]+?) _+[ \t]*$", re.MULTILINE)
# pytest 9's subtests: "SUBFAILED[label] tests/t.py::T::test - msg", named "tests/t.py::T::test [label]"
# Linear: the id ends on a non-space and the message is greedy, so no run of spaces is rescanned.
_ENTRY = re.compile(
    r"^(?:(?P<cat>FAILED|ERROR)|SUB(?P<subcat>FAILED)\[(?P<label>[^\n]*?)\]) (?P<id>[^\n]*?\S)"
    r"(?: - (?P<msg>[^\n]*))?[^\S\n]*$",
    re.M,
)
_VERBOSE = re.compile(
    r"^(?:\[gw\d+\] \[ *\d+%\] (?P<cat1>FAILED|ERROR) (?P<id1>(?>\S+?::)[^\n]+?)"
    r"|(?P<id2>(?>\S+?::)[^\n]+?) (?P<cat2>FAILED|ERROR)(?: +\[ *\d+%\])?)[ \t]*$",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One FAILED or ERROR section of pytest's report: its id and its text."""

    category: str
    """FAILED or ERROR."""
    id: str
    text: str


def split_sections(text: str) -> dict[str, str]:
    """The named sections; found with str.find (a regex over a 50 MB log costs a second)."""
    starts: list[tuple[int, int, str]] = []
    for name in SECTIONS:
        m = _find_rule(text, name)
        if m is not None:
            starts.append((*m, name))
    starts.sort()
    sections: dict[str, str] = {}
    for i, (_, body, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        sections[name] = text[body:end]
    return sections


def outer_summary(text: str) -> str | None:
    """The run's own short summary when sessions its tests started printed theirs before it
    (pytest-mock's suite: pytester's runs in a failure's captured stdout, each with a summary whose
    ``FAILED`` lines are meant): the last one, unless the run is several sessions one after
    another (tox running pytest three times), each with its own."""
    needle = "= short test summary info ="
    if text.count(needle) < 2 or len(split_sessions(text, list(SUMMARY.finditer(text)))) > 1:
        return None
    at = text.rfind(needle)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        if _SECTION.fullmatch(text, start, end):
            return text[end:]
        at = text.rfind(needle, 0, at)
    return None


def _find_rule(text: str, name: str) -> tuple[int, int] | None:
    """(line start, body start) of the first ``=== name ===`` line."""
    needle = f"= {name} ="
    at = text.find(needle)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        if _SECTION.fullmatch(text, start, end):
            return start, end
        at = text.find(needle, at + 1)
    return None


def read_entries(summary: str, text: str) -> list[Entry]:
    found = [
        Entry(
            category=m["cat"] or m["subcat"],
            id=f"{m['id']} [{m['label']}]" if m["subcat"] else m["id"],
            text=(m["msg"] or "").rstrip(),
        )
        for m in _ENTRY.finditer(summary)
    ]
    if found:
        return found[:MAX_FAILURES]
    for m in _VERBOSE.finditer(text[:HEAD]):
        category = m["cat1"] or m["cat2"]
        found.append(Entry(category=category, id=m["id1"] or m["id2"], text=""))
        if len(found) >= MAX_FAILURES:
            break
    return found


def split_blocks(section: str) -> list[tuple[str | None, list[str]]]:
    """(title, lines) per failure; ``--tb=line`` has no titles: one block per location line."""
    if not section:
        return []
    headers: list[re.Match[str]] = []
    for m in _HEADER.finditer(section):
        if m["title"].startswith("coverage: "):
            break  # pytest-cov's report follows the last failure, under the same kind of rule
        if m["title"].replace("_", "").strip():
            headers.append(m)
        if len(headers) > MAX_BLOCKS:
            break
    if not headers:
        return _line_blocks(section)
    blocks: list[tuple[str | None, list[str]]] = []
    for i, m in enumerate(headers[:MAX_BLOCKS]):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(section)
        blocks.append((m["title"], section[m.end() : end].strip("\n").split("\n")))
    return blocks


def _line_blocks(section: str) -> list[tuple[str | None, list[str]]]:
    blocks: list[tuple[str | None, list[str]]] = []
    current: list[str] = []
    for line in section.strip("\n").split("\n")[: MAX_BLOCKS * 4]:
        current.append(line)
        if not line.startswith("E ") and re.match(r"^\S+:\d+: ", line):
            blocks.append((None, current))
            current = []
    return blocks


def id_file(node_id: str) -> str:
    return node_id.partition("::")[0]
