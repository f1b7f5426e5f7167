"""A CI file's YAML -> plain values whose strings know their line (issue 38).

PyYAML's composer only: nodes, never constructed objects (no tag is ever executed, and GitHub's
``on:`` stays the string ``on``, not YAML 1.1's ``True``); its C parser where the wheel has libyaml.
Imported only when CI stages are asked for: ``detect`` and the Stop hook do not pay its ~20 ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from greenloop.errors import FatalError

MAX_BYTES = 2 * 1024 * 1024
"""A CI file larger than this is not read (real ones are a few kilobytes)."""


class Text(str):
    """A scalar with the 1-based line it starts on, and for a block scalar (``run: |``) the line
    of its first content line."""

    line: int
    block: bool

    def __new__(cls, value: str, line: int, *, block: bool = False) -> Text:
        made = super().__new__(cls, value)
        made.line = line
        made.block = block
        return made


def load(path: Path, root: Path) -> Any:
    """The file's last document as dicts, lists and :class:`Text`; FatalError naming the file
    and line when it is not YAML."""
    import yaml

    shown = path.relative_to(root).as_posix()
    try:
        data = path.read_bytes()[:MAX_BYTES].decode("utf-8", errors="replace")
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        # GitLab's component header (`spec:` then `---`) is a document of its own: the last one
        # is the configuration
        node = None
        for document in yaml.compose_all(data, Loader=loader):
            node = document if document is not None else node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{shown}:{mark.line + 1}" if mark is not None else shown
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FatalError(f"malformed CI file {where}: {problem}") from None
    except OSError as exc:
        raise FatalError(f"cannot read CI file {shown}: {exc.strerror or exc}") from None
    return _plain(node) if node is not None else None


def _plain(node: Any) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "<<":  # a merge key
                merged = _plain(value)
                for item in merged if isinstance(merged, list) else [merged]:
                    if isinstance(item, dict):
                        out = {**item, **out}
                continue
            out[_plain(key)] = _plain(value)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v) for v in node.value]
    block = node.style in ("|", ">")
    line = node.start_mark.line + (2 if block else 1)
    return Text(str(node.value), line, block=block)


def line_of(value: object, default: int = 1) -> int:
    return value.line if isinstance(value, Text) else default
