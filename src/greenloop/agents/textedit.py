"""SEARCH/REPLACE text edits: the fallback for models (or endpoints) without tool calling.

The model writes aider-style blocks in plain text::

    src/calc.py
    <<<<<<< SEARCH
    return a - b
    =======
    return a + b
    >>>>>>> REPLACE

The line before ``<<<<<<< SEARCH`` names the file (Markdown fences and backticks around it are
ignored; a block without one reuses the previous block's file). SEARCH must match the file
exactly once, the same rule as ``replace_in_file``; an empty SEARCH creates a new file. Nothing
in the text is ever executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from greenloop.agents.tools import ToolError, ToolResult, replace_text, resolve_inside

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")
_DONE = re.compile(r"^\s*(?:DONE|SUMMARY)\s*:\s*(.+)$", re.MULTILINE)

FORMAT_HELP = """\
You cannot call tools. Edit files by writing SEARCH/REPLACE blocks in your reply:

path/to/file.py
<<<<<<< SEARCH
the exact existing lines (copied character for character, with indentation)
=======
the new lines
>>>>>>> REPLACE

Rules: the line before <<<<<<< SEARCH is the file path, relative to the repository root. SEARCH
must match exactly one place in the file; include enough lines to make it unique, and leave
out the "   12| " line-number prefixes of the files shown to you. An empty
SEARCH section creates a new file. Use one block per change. End your reply with one line
`DONE: <one-line summary of the change>`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EditBlock:
    path: str
    search: str
    replace: str


def _clean_path(line: str) -> str:
    return line.strip().strip("`*:").strip()


def _filename(lines: list[str], index: int, previous: str) -> str:
    for line in reversed(lines[max(0, index - 3) : index]):
        text = line.strip()
        if text and not text.startswith("```"):
            return _clean_path(text)
    return previous


def _section(lines: list[str], start: int, end: re.Pattern[str]) -> tuple[str, int]:
    body: list[str] = []
    for index in range(start, len(lines)):
        if end.match(lines[index]):
            return "".join(body), index
        body.append(lines[index])
    raise ToolError(f"unterminated SEARCH/REPLACE block (expected {end.pattern!r})")


def parse_blocks(text: str) -> list[EditBlock]:
    """Every SEARCH/REPLACE block in ``text``; ToolError on a malformed one."""
    lines = text.splitlines(keepends=True)
    blocks: list[EditBlock] = []
    index, previous = 0, ""
    while index < len(lines):
        if not _SEARCH.match(lines[index]):
            index += 1
            continue
        path = _filename(lines, index, previous)
        if not path:
            raise ToolError("a SEARCH/REPLACE block has no file path on the line before it")
        search, divider = _section(lines, index + 1, _DIVIDER)
        replace, end = _section(lines, divider + 1, _REPLACE)
        blocks.append(EditBlock(path=path, search=search, replace=replace))
        index, previous = end + 1, path
    return blocks


def apply_block(root: Path, block: EditBlock) -> ToolResult:
    """Apply one block with the exact-unique rule; errors become results."""
    try:
        file = resolve_inside(root, block.path)
        if not block.search.strip():
            if file.exists() and file.read_text(encoding="utf-8").strip():
                raise ToolError(f"{block.path} exists; an empty SEARCH only creates new files")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(block.replace, encoding="utf-8")
            return ToolResult(text=f"created {block.path}", ok=True, edited=block.path)
        if not file.is_file():
            raise ToolError(f"{block.path}: no such file")
        text = file.read_text(encoding="utf-8")
        file.write_text(replace_text(text, block.search, block.replace, block.path), "utf-8")
    except ToolError as exc:
        return ToolResult(text=f"error: {exc}", ok=False)
    except (OSError, UnicodeDecodeError) as exc:
        return ToolResult(text=f"error: {block.path}: {exc}", ok=False)
    return ToolResult(text=f"edited {block.path}", ok=True, edited=block.path)


def done_summary(text: str) -> str:
    """The ``DONE: …`` line of a reply, or ''."""
    match = _DONE.search(text)
    return " ".join(match.group(1).split()) if match else ""
