"""Stages derived from the project's CI (issue 38), on real projects' CI files and by contract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ci_corpus import origin_line, projects, score, without_env
from greenloop.detect.ci import read_ci
from greenloop.errors import FatalError

PUBLISHING = re.compile(
    r"\b(twine upload|npm publish|cargo publish|gh release|git push|docker push)"
)


def test_the_ci_corpus_holds_at_least_25_real_projects_with_github_and_gitlab() -> None:
    found = list(projects())
    assert len(found) >= 25
    assert any((p / ".gitlab-ci.yml").is_file() for p in found)
    assert sum(1 for p in found if (p / ".github").is_dir()) >= 20


def test_derived_commands_match_the_hand_written_expectation_at_95_percent() -> None:
    matched = extra = missed = 0
    for project in projects():
        result = score(project)
        matched += len(result.matched)
        extra += len(result.extra)
        missed += len(result.missed)
    precision, recall = matched / (matched + extra), matched / (matched + missed)
    assert precision >= 0.95, (precision, recall)
    assert recall >= 0.95, (precision, recall)


@pytest.mark.parametrize("project", list(projects()), ids=lambda p: p.name)
def test_no_derived_command_publishes_deploys_or_reads_a_secret(project: Path) -> None:
    for command in read_ci(project).commands:
        assert not PUBLISHING.search(command.command), command
        assert "secrets." not in command.command, command


@pytest.mark.parametrize("project", list(projects()), ids=lambda p: p.name)
def test_every_origin_points_at_the_line_that_holds_the_command(project: Path) -> None:
    for command in read_ci(project).commands:
        line = origin_line(project, command.origin)
        if "uses:" in line:
            continue  # an action mapped to its command: the line that names the action
        variable = re.search(r"\$\{?(\w+)", line)
        if variable and f"{variable.group(1)}=" in command.command:
            continue  # GitLab's `- $CHECK`: the job's variable holds the command
        shown = without_env(command.command.splitlines()[0]).split()
        assert any(word in line for word in shown[:3]), (command.origin, line, command.command)


def test_a_malformed_workflow_is_one_error_naming_its_file_and_line(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "ci.yml").write_text("on: [push]\njobs:\n  test:\n    steps: [\n      - run: x\n")
    with pytest.raises(FatalError) as raised:
        read_ci(tmp_path)
    message = str(raised.value)
    assert message.startswith("malformed CI file .github/workflows/ci.yml:")
    assert "\n" not in message


def test_nothing_in_a_workflow_is_executed_while_it_is_read(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "ci.yml").write_text(
        "on: pull_request\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
        f"      - run: touch {marker}\n      - run: pytest -q\n"
        "      - run: !!python/object/apply:os.system ['touch " + str(marker) + "']\n"
    )
    reading = read_ci(tmp_path)
    assert not marker.exists()
    assert [c.command for c in reading.commands] == ["pytest -q"]
    assert any(s.command == f"touch {marker}" for s in reading.skipped)
