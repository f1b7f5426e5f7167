"""The agent-invocation matrix (issue 36, item 7): real projects run the way agents type their
test commands (``-q``, ``-x``, ``-k``, ``--tb=…``, ``-rN``, ``-v``, ``| tail -n 50``,
``| head -n 100``, one file, one directory, ``--reporter=dot``, ``-run``, ``--grep``, ``-t`` …),
red and green, each output fed through ``hook post-tool`` in each host's payload shape.

Per row: the verdict the model reads is ``check``'s on the same tree (the project's own full
command, captured beside it), or it says why it cannot judge (a cut, a partial run), or it
passes the runner's words through claiming nothing; never a red tree called green by a run that
was not said to be partial; the first failure the runner printed kept; ≤ 2,000 tokens.
Captured by ``scripts/conformance/invocations.py``; run as a script it prints the figures:

    .venv/bin/python tests/test_invocation_matrix.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from greenloop.digest import estimate_tokens
from post_tool_matrix import HOSTS, hook_text, repo_for, verdict_of
from test_conformance import check

INVOCATIONS = Path(__file__).parent / "resources" / "invocations"
PROJECTS = sorted(p.stem for p in INVOCATIONS.glob("*.json"))
BUDGET = 2000
_NARROWING = re.compile(r"\{(?:file|k)\}| -x\b|--lib\b")


@cache
def rows_of(project: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((INVOCATIONS / f"{project}.json").read_text())
    return data


@cache
def tree_verdict(project: str, tree: str) -> dict[str, Any]:
    """``check``'s verdict on the tree: its JSON for the project's own full command."""
    full = next(r for r in rows_of(project) if r["tree"] == tree and r["full"])
    return check(full)


def narrowed(row: dict[str, Any]) -> bool:
    """A command that runs part of the suite: a filter, one file, a sub-package, ``-x``."""
    line = str(row["line"])
    sub_dir = "{dir}" in line and not re.search(r"\s(?:tests|\.|\./\.\.\.)$", str(row["argv"]))
    return bool(_NARROWING.search(line)) or sub_dir


def judge(row: dict[str, Any], host: str, tmp: Path) -> tuple[str, str]:
    """("right" or what is wrong, the hook's text)."""
    project, tree = str(row["project"]), str(row["tree"])
    text = hook_text(row, host, repo_for(row, tmp))
    got = verdict_of(text)
    want = str(tree_verdict(project, tree)["verdict"])
    own = check(row)
    if estimate_tokens(text) > BUDGET:
        return f"{estimate_tokens(text)} tokens", text
    if got in ("cannot judge", "passed through"):
        return "right", text  # one line saying so, or the runner's own words: no claim made
    if got == "green" and want != "green" and "Partial run" not in text:
        return "red tree called green", text
    # check's on the tree; or, for a part of the suite or a command that cannot run here (`npm
    # test` building with a tool not installed), check's on this very command
    mine = own["verdict"] if narrowed(row) or own["verdict"] == "env_failure" else want
    if got not in (want, mine):
        return f"tree {want}, check {own['verdict']}, hook {got}", text
    if got == "failed":
        ids = [str(f["id"]) for f in own["failures"] if f.get("id")]
        if ids and not any(i in text for i in ids):
            return f"no failing id of {ids[:2]}", text
    if narrowed(row) and got == "green" and "Partial run" not in text:
        return "partial run not said", text
    return "right", text


CASES = [
    pytest.param(project, i, host, id=f"{project}-{i}-{host}")
    for project in PROJECTS
    for i in range(len(rows_of(project)))
    for host in HOSTS
]


def test_the_matrix_holds_at_least_ten_real_projects_each_run_red_and_green() -> None:
    assert len(PROJECTS) >= 10
    for project in PROJECTS:
        trees = {(r["tree"], r["full"]) for r in rows_of(project)}
        assert {("green", True), ("red", True)} <= trees, project
        assert tree_verdict(project, "green")["verdict"] == "green", project
        assert tree_verdict(project, "red")["verdict"] == "failed", project


@pytest.mark.parametrize(("project", "index", "host"), CASES)
def test_the_agents_own_run_reads_as_checks_verdict_on_the_tree(
    project: str, index: int, host: str, tmp_path: Path
) -> None:
    row = rows_of(project)[index]
    said, text = judge(row, host, tmp_path)
    assert said == "right", f"{row['tree']} tree, `{row['argv']}` via {host}: {said}\n{text}"


def main() -> None:
    import tempfile

    tally: Counter[str] = Counter()
    wrong: list[str] = []
    with tempfile.TemporaryDirectory(prefix="greenloop-invocations-") as tmp:
        for project in PROJECTS:
            for row in rows_of(project):
                for host in HOSTS:
                    said, text = judge(row, host, Path(tmp))
                    tally[said if said == "right" else "wrong"] += 1
                    tally[verdict_of(text)] += 1
                    if said != "right":
                        first = text.split("\n")[0][:90]
                        wrong.append(
                            f"{project} {row['tree']} `{row['argv']}` {host}: {said}: {first}"
                        )
    print("\n".join(wrong))
    print(dict(sorted(tally.items())))
    print(
        f"right {tally['right']}/{tally['right'] + tally['wrong']} rows, {len(PROJECTS)} projects"
    )


if __name__ == "__main__":
    main()


def row_where(project: str, tree: str, argv: str) -> dict[str, Any]:
    return next(r for r in rows_of(project) if r["tree"] == tree and r["argv"] == argv)


def hook_says(row: dict[str, Any], tmp_path: Path, host: str = "claude") -> str:
    return hook_text(row, host, repo_for(row, tmp_path))


def test_a_red_run_piped_into_tail_reads_as_the_failure_it_printed_not_as_tails_exit_0(
    tmp_path: Path,
) -> None:
    row = row_where("chi", "red", "go test ./... 2>&1 | tail -n 50")
    assert row["exit_code"] == 0  # tail's
    text = hook_says(row, tmp_path)
    assert text.startswith("The verifier failed"), text
    assert "Partial run (output piped into `tail`" in text
    assert "can't be trusted" not in text


@pytest.mark.parametrize(
    ("project", "argv"), [("chi", "go test ./middleware"), ("oauthlib", "pytest -q tests/oauth2")]
)
def test_one_package_or_a_sub_folder_is_said_to_be_part_of_the_suite(
    project: str, argv: str, tmp_path: Path
) -> None:
    text = hook_says(row_where(project, "green", argv), tmp_path)
    assert "passed" in text.split("\n")[0] or text.startswith("greenloop: green"), text
    assert "Partial run (only " in text


def test_the_projects_tests_folder_is_the_whole_suite(tmp_path: Path) -> None:
    text = hook_says(row_where("oauthlib", "green", "pytest --cov=oauthlib tests/"), tmp_path)
    assert "Partial run" not in text


def test_nodes_dot_reporter_is_judged_by_the_runners_exit_code_only_under_its_test_runner(
    tmp_path: Path,
) -> None:
    row = row_where("comma-separated-tokens", "green", "node --test --test-reporter=dot")
    assert hook_says(row, tmp_path).startswith("greenloop: "), hook_says(row, tmp_path)
    assert verdict_of(hook_says(row, tmp_path)) == "green"
    # the same dots from one program run directly: it may have ended itself mid-run
    direct = {**row, "argv": "node --test-reporter=dot test.js"}
    assert verdict_of(hook_says(direct, tmp_path)) != "green"
