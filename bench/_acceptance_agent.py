"""The scripted agent of bench/acceptance_batch.py: ``python _acceptance_agent.py PLAN.json``.

Modes: ``fix`` reverts the planted line (the task's last commit, in ``file``); ``nothing`` edits
nothing; ``delete`` removes the declared failing tests' functions; ``skip`` puts a skip marker on
them, spelt so no diff pattern finds it (``@__import__("pytest").mark.skip``): the two cheats a
declared acceptance must catch."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path


def main(plan_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    mode = plan["mode"]
    if mode == "fix":
        diff = subprocess.run(
            ["git", "diff", "HEAD~1", "HEAD", "--", plan["file"]],
            capture_output=True, check=True, stdin=subprocess.DEVNULL,
        ).stdout  # fmt: skip
        subprocess.run(["git", "apply", "-R"], input=diff, check=True)
        print("Summary: put the planted line back as it was")
    elif mode in ("delete", "skip"):
        for test_id in plan["tests"]:
            _cheat(test_id, mode)
        print(f"Summary: {mode} the failing tests")
    return 0


def _cheat(test_id: str, mode: str) -> None:
    path, *names = test_id.split("::")
    names[-1] = names[-1].split("[", 1)[0]
    file = Path(path)
    text = file.read_text(encoding="utf-8")
    node = _find(ast.parse(text).body, names)
    if node is None:  # already removed (a parametrized test listed twice)
        return
    lines = text.splitlines(keepends=True)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    if mode == "delete":
        del lines[first : node.end_lineno]
    else:
        indent = lines[node.lineno - 1][: node.col_offset]
        lines.insert(first, f'{indent}@__import__("pytest").mark.skip(reason="flaky")\n')
    file.write_text("".join(lines), encoding="utf-8")


def _find(body: list[ast.stmt], names: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if node.name != names[0]:
            continue
        if len(names) == 1 and not isinstance(node, ast.ClassDef):
            return node
        if isinstance(node, ast.ClassDef):
            return _find(node.body, names[1:])
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
