"""Would Claude Code run this Bash command without asking? Read from the user's own rules.

The PreToolUse wrap (issue 36) rewrites a verifier command so its failing output reaches
PostToolUse, where it can be replaced by the digest. Claude Code checks permissions on the
rewritten command: a prefix rule (``Bash(pytest:*)``) does not match it, and a group in braces is
refused outright. A hook that answers ``permissionDecision: "allow"`` runs it -- so the hook may
say allow only where Claude Code would have run the *original* command anyway, and must never
allow more. Recorded from the real Claude Code 2.1.332:

- the rules of ``permissions.allow`` / ``deny`` / ``ask`` in managed, user, project and local
  settings; a project's own files count only once the user trusted the project
  (``hasTrustDialogAccepted`` in ``~/.claude.json``; untrusted, ``claude -p`` ignores them);
- a compound command is allowed only when each part is (``tail``, ``head`` and ``grep`` after a
  pipe need no rule);
- ``permission_mode: "bypassPermissions"`` runs everything.

Anything this module cannot read with certainty (a variable, a substitution, a redirection to a
file, a wildcard inside a rule) answers "not allowed": the command then goes through Claude
Code's own prompt unchanged, and its failing output gets greenloop's note instead of the digest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

READ_ONLY = frozenset({"tail", "head", "grep"})
"""Commands Claude Code 2.1.332 ran after a pipe with no rule naming them."""
MANAGED = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
)
_FD_DUPS = ("2>&1", "1>&2", ">&2")
BYPASS = "bypassPermissions"
_UNSURE = frozenset("$`(){}<>\n\\!")


def allowed_by(command: str, root: Path, permission_mode: str, environ: Mapping[str, str]) -> str:
    """The rule under which Claude Code runs ``command`` without asking, in words; "" where it
    would ask or refuse, or where that cannot be told for sure."""
    parts = split_command(command)
    if not parts or permission_mode not in ("default", "acceptEdits", "dontAsk", "", BYPASS):
        return ""  # plan mode runs nothing; a mode not known here, nothing either
    found = rules(root, environ)
    if any(_reaches(r, parts) for r in found["deny"]):
        return ""
    if permission_mode == BYPASS:
        return f'permission mode "{BYPASS}"'
    if any(_reaches(r, parts) for r in found["ask"]):
        return ""
    used = []
    for i, part in enumerate(parts):
        rule = next((r for r in found["allow"] if _matches(r, part)), None)
        if rule is None and i and part.split()[0] in READ_ONLY:
            continue
        if rule is None:
            return ""
        used.append(rule)
    return ", ".join(dict.fromkeys(used))


def _reaches(rule: str, parts: list[str]) -> bool:
    """A deny or ask rule that reaches a part, or whose reach cannot be told here."""
    return _unsure_rule(rule) or any(_matches(rule, p) for p in parts)


def split_command(command: str) -> list[str]:
    """The simple commands of a pipeline or list, as written; [] where any part of it holds what
    only the shell could tell (a variable, a substitution, a group, a redirection to a file)."""
    for dup in _FD_DUPS:
        command = command.replace(dup, " ")
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        char = command[i]
        if quote:
            if char == quote:
                quote = ""
            elif quote == '"' and char in "$`\\":
                return []
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in _UNSURE or char == "#":
            return []
        elif char in "|;&":
            pair = command[i : i + 2]
            if char == "&" and pair != "&&":
                return []  # a background job
            i += 1 if pair in ("||", "&&") else 0
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quote:
        return []
    parts.append("".join(current))
    cleaned = [" ".join(p.split()) for p in parts]
    return cleaned if all(cleaned) else []


def _matches(rule: str, part: str) -> bool:
    inner = _bash_rule(rule)
    if inner is None:
        return False
    if inner in ("", "*", ":*"):
        return True
    prefix = _prefix(inner)
    if prefix is not None:
        return part == prefix or part.startswith(prefix + " ")
    return "*" not in inner and part == " ".join(inner.split())


def _bash_rule(rule: str) -> str | None:
    """``Bash`` -> "", ``Bash(x)`` -> "x"; None for another tool's rule."""
    rule = rule.strip()
    if rule == "Bash":
        return ""
    if rule.startswith("Bash(") and rule.endswith(")"):
        return rule[5:-1].strip()
    return None


def _prefix(inner: str) -> str | None:
    for tail in (":*", " *"):
        head = inner[: -len(tail)]
        if inner.endswith(tail) and "*" not in head:
            return " ".join(head.split())
    return None


def _unsure_rule(rule: str) -> bool:
    """A deny or ask rule whose reach cannot be told here (a wildcard inside it)."""
    inner = _bash_rule(rule)
    return (
        inner is not None and "*" in inner and inner not in ("*", ":*") and _prefix(inner) is None
    )


def rules(root: Path, environ: Mapping[str, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"allow": [], "deny": [], "ask": []}
    for path in settings_files(root, environ):
        data = _read_json(path)
        permissions = data.get("permissions") if isinstance(data, dict) else None
        if not isinstance(permissions, dict):
            continue
        for kind, rules in found.items():
            listed = permissions.get(kind)
            if isinstance(listed, list):
                rules.extend(r for r in listed if isinstance(r, str))
    return found


def settings_files(root: Path, environ: Mapping[str, str]) -> list[Path]:
    """The settings files whose rules Claude Code applies here: managed, the user's, and the
    project's own only in a project the user trusted."""
    folder = claude_folder(environ)
    files = [*MANAGED, *([folder / "settings.json"] if folder else [])]
    if trusted(root, environ):
        files += [root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"]
    return files


def claude_folder(environ: Mapping[str, str]) -> Path | None:
    if environ.get("CLAUDE_CONFIG_DIR"):
        return Path(environ["CLAUDE_CONFIG_DIR"])
    return Path(environ["HOME"]) / ".claude" if environ.get("HOME") else None


def trusted(root: Path, environ: Mapping[str, str]) -> bool:
    """Whether the user accepted Claude Code's trust dialog for ``root`` or a folder above it."""
    if environ.get("CLAUDE_CONFIG_DIR"):
        state = Path(environ["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    elif environ.get("HOME"):
        state = Path(environ["HOME"]) / ".claude.json"
    else:
        return False
    data = _read_json(state)
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return False
    return any(_accepted(projects.get(str(p))) for p in _self_and_parents(root))


def _accepted(entry: object) -> bool:
    return isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True


def _self_and_parents(root: Path) -> Iterable[Path]:
    path = Path(os.path.abspath(root))
    return (path, *path.parents)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
