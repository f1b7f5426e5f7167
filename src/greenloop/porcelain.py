"""``git status --porcelain=v2 -z [--branch]`` read: HEAD's commit and the changed paths.

Standard library only, and nothing of it: the Stop hook's cache hit (``integrations/hook_hit.py``)
reads it before anything else is imported, and the cache key (``verify/cache.py``) the same way."""

from __future__ import annotations

BRANCH_OID = "# branch.oid "


def changed_paths(porcelain: str) -> tuple[str, list[str]] | None:
    """HEAD's commit ("unborn" without a ``--branch`` line) and the changed and untracked paths,
    sorted; None when a submodule is involved (its work tree is beyond the key)."""
    head, paths = "unborn", []
    fields = porcelain.split("\0")
    i = 0
    while i < len(fields):
        record = fields[i]
        i += 1
        kind = record[:1]
        if record.startswith(BRANCH_OID):
            head = record[len(BRANCH_OID) :]
        elif kind == "?":
            paths.append(record[2:])
        elif kind in ("1", "2", "u"):
            parts = record.split(" ", 10 if kind == "u" else 9 if kind == "2" else 8)
            if parts[2].startswith("S"):
                return None
            paths.append(parts[-1])
            if kind == "2":  # the source path follows: gone from the tree, or back as a new file
                paths.append(fields[i])
                i += 1
    return head, sorted(paths)
