"""Trusting green (seed step 6, OP-5, case 3): what in the run's diff makes a green suspicious. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Markers that disable tests or silence checkers, per language.
SKIP_MARKERS = re.compile(
    r"pytest\.mark\.(?:skip|skipif|xfail)\b|pytest\.skip\(|pytest\.xfail\(|unittest\.skip|@skip\b"
    r"|\b(?:it|test|describe)\.skip\(|\bxit\(|\bxdescribe\(|\b(?:it|test|describe)\.only\("
    r"|\bt\.Skip(?:f|Now)?\(|#\[ignore\]|@Disabled\b|@Ignore\b"
    r"|^\s*(?:skip|pending)\b|\bxtest\("
)
SILENCERS = re.compile(
    r"#\s*noqa\b|#\s*type:\s*ignore|eslint-disable|@ts-ignore|@ts-expect-error|#\s*pyright:\s*ignore"
)
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|spec|__tests__|testing)/|(?:^|/)test_[^/]*\.py$|_test\.(?:py|go)$"
    r"|\.(?:test|spec)\.[cm]?[jt]sx?$|_spec\.rb$|(?:^|/)src/test/|Tests?\.(?:java|kt|cs)$"
)
VERIFIER_CONFIG = re.compile(
    r"(?:^|/)(?:conftest\.py|pytest\.ini|tox\.ini|noxfile\.py|setup\.cfg|greenloop\.toml|Makefile|"
    r"GNUmakefile|[Jj]ustfile|jest\.config\.[cm]?[jt]s|vitest\.config\.[cm]?[jt]s|\.mocharc\.[a-z]+|"
    r"\.pre-commit-config\.yaml|\.gitlab-ci\.yml|mypy\.ini|ruff\.toml|\.ruff\.toml|\.eslintrc[^/]*|"
    r"eslint\.config\.[cm]?[jt]s|tsconfig\.json)$|(?:^|/)\.github/workflows/"
)
# Lines of pyproject.toml / package.json / Cargo.toml that configure the verifier.
CONFIG_LINES = re.compile(
    r"addopts|testpaths|\[tool\.(?:pytest|greenloop|mypy|ruff|coverage)|\"test\"\s*:|\[\[test\]\]"
)
_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$")
_OLD_FILE = re.compile(r"^--- (?:a/)?(.+?)\s*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_ASSERT = re.compile(
    r"^\s*(?:assert\b|self\.assert|expect\(|assert_eq!|assert!|t\.(?:Error|Fatal))"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    kind: str
    """skip_added, silencer_added, test_modified, test_deleted, assert_removed, config_modified,
    fewer_tests, no_tests, suppressed_command."""
    file: str = ""
    line: int | None = None
    text: str = ""

    def describe(self) -> str:
        where = f" {self.file}:{self.line}" if self.line else f" {self.file}" if self.file else ""
        text = f": {self.text.strip()[:120]}" if self.text else ""
        return f"{self.kind.replace('_', ' ')}{where}{text}"


def is_test_path(path: str) -> bool:
    return bool(TEST_PATH.search(path))


def review_diff(diff: str, *, allow_test_edits: bool = False) -> tuple[Finding, ...]:
    """Findings in the unified diff between the run's initial commit and its end."""
    findings: list[Finding] = []
    old = new = ""
    line_no = 0
    for raw in diff.splitlines():
        if m := _OLD_FILE.match(raw):
            old = m.group(1)
            continue
        if m := _FILE.match(raw):
            new = m.group(1)
            findings += _file_findings(old, new, allow_test_edits)
            continue
        if m := _HUNK.match(raw):
            line_no = int(m.group(2))
            continue
        if raw.startswith("+"):
            findings += _added_line(new, line_no, raw[1:])
            line_no += 1
        elif raw.startswith("-"):
            findings += _removed_line(old, raw[1:])
        elif raw.startswith(" "):
            line_no += 1
    return tuple(findings)


def _file_findings(old: str, new: str, allow_test_edits: bool) -> list[Finding]:
    path = old if new == "/dev/null" else new
    if new == "/dev/null" and is_test_path(old):
        return [Finding(kind="test_deleted", file=old)]
    found: list[Finding] = []
    if old != "/dev/null" and is_test_path(path) and not allow_test_edits:
        found.append(Finding(kind="test_modified", file=path))
    if VERIFIER_CONFIG.search(path):
        found.append(Finding(kind="config_modified", file=path))
    return found


def _added_line(path: str, line: int, text: str) -> list[Finding]:
    if SKIP_MARKERS.search(text) and (
        is_test_path(path) or path.endswith((".py", ".js", ".ts", ".go", ".rs"))
    ):
        return [Finding(kind="skip_added", file=path, line=line, text=text)]
    if SILENCERS.search(text):
        return [Finding(kind="silencer_added", file=path, line=line, text=text)]
    if CONFIG_LINES.search(text) and path.endswith(
        ("pyproject.toml", "package.json", "Cargo.toml")
    ):
        return [Finding(kind="config_modified", file=path, line=line, text=text)]
    return []


def _removed_line(path: str, text: str) -> list[Finding]:
    if is_test_path(path) and _ASSERT.search(text):
        return [Finding(kind="assert_removed", file=path, text=text)]
    return []


def review_counts(
    baseline_collected: int | None, final_collected: int | None
) -> tuple[Finding, ...]:
    if final_collected == 0:
        return (Finding(kind="no_tests", text="0 tests collected"),)
    if (
        baseline_collected is not None
        and final_collected is not None
        and final_collected < baseline_collected
    ):
        return (
            Finding(
                kind="fewer_tests",
                text=f"{baseline_collected} tests at baseline, {final_collected} now",
            ),
        )
    return ()


def dedupe(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    return tuple(dict.fromkeys(findings))
