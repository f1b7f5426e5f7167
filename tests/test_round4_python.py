"""Python shapes a new user meets on real projects (issue 37): a pytest plugin the tests need and
the environment lacks, an error in a fixture's teardown after every test passed, and code that
names a secret-looking word (``token``, ``secret``) kept whole by the redaction.

Real outputs: the conformance corpus's cases (aiofiles without pytest-asyncio, tinydb without
pytest-cov, diskcache without pytest-xdist, flask with a seeded bug in its session fixture's
teardown; tests/resources/real/projects/*.toml), and pytest itself in a temporary directory.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_process import git, greenloop
from greenloop.redact import redact
from limits import hang
from secret_shapes import PROJECT_PATTERN, SHAPES
from test_conformance import check

REAL = Path(__file__).parent / "resources" / "real"


def _checked(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / name / "case.json").read_text(encoding="utf-8"))
    return check(data)


def test_async_tests_no_plugin_runs_are_an_environment_failure_naming_the_declared_plugin() -> None:
    out = _checked("pytest/aiofiles-0")  # 207 of 219 tests: 'async def functions are not natively…'
    assert out["verdict"] == "env_failure"
    digest = out["digest"]
    assert "Not sent to the agent" in digest
    assert "Install `pytest-asyncio`" in digest
    assert "declares it in pyproject.toml" in digest
    assert "tests/test_os.py::test_stat: Failed: async def functions are not natively" in digest


def test_async_tests_an_older_pytest_skipped_for_want_of_a_plugin_are_not_a_green() -> None:
    out = _checked("pytest/outcome-0")  # pytest 8.3: 7 passed, 3 skipped, exit 0
    digest = out["digest"]
    assert out["verdict"] == "env_failure"
    assert "pytest skipped them (3 skipped), so they never ran" in digest
    assert "async def function and no async plugin installed" in digest
    assert "Install `pytest-asyncio`" in digest
    assert "declares it in test-requirements.txt" in digest


def test_async_tests_no_plugin_runs_are_an_environment_failure_from_the_plugins_report_too(
    tmp_path: Path,
) -> None:
    # `greenloop check` reads its pytest plugin's report: a missing fixture of pytest-asyncio's
    # is a FixtureLookupError there, not the text's "fixture 'unused_tcp_port' not found"
    (tmp_path / "pyproject.toml").write_text('[dependency-groups]\ntests = ["pytest-asyncio"]\n')
    (tmp_path / "test_io.py").write_text(
        "async def test_read():\n    assert True\n\n\n"
        "async def test_serve(unused_tcp_port):\n    assert unused_tcp_port\n"
    )
    _commit(tmp_path)
    argv = (sys.executable, "-m", "pytest", "-p", "no:asyncio")
    run = greenloop(tmp_path, "check", "--no-cache", "--format", "json", "--", *argv)
    out = json.loads(run.stdout)
    assert out["verdict"] == "env_failure", run.stdout
    assert "Install `pytest-asyncio`" in out["digest"]
    assert "declares it in pyproject.toml" in out["digest"]


def test_pytest_refusing_coverage_options_quotes_its_error_and_names_pytest_cov() -> None:
    out = _checked("pytest/tinydb-0")  # pytest.ini's addopts: --cov-append --cov-report term …
    digest = out["digest"]
    assert out["verdict"] == "env_failure"
    what = next(line for line in digest.splitlines() if line.startswith("What failed:"))
    assert (
        what == "What failed: error: unrecognized arguments: --cov-append --cov-report --cov tinydb"
    )
    assert "Install `pytest-cov` where the verifier runs" in digest
    assert "declares it in pyproject.toml" in digest


def test_pytest_refusing_dash_n_names_pytest_xdist_where_the_project_declares_it() -> None:
    out = _checked("pytest/diskcache-0")  # tox.ini's [pytest] addopts: -n auto
    digest = out["digest"]
    assert "What failed: error: unrecognized arguments: -n" in digest
    assert "Install `pytest-xdist`" in digest
    assert "(the project declares it in requirements-dev.txt)" in digest


def test_an_ini_option_of_a_missing_plugin_under_w_error_names_the_plugin_not_the_summary(
    tmp_path: Path,
) -> None:
    # outcome's ci.sh runs `pytest -W error …`: without pytest-asyncio its `asyncio_mode` is an
    # unknown option, a PytestConfigWarning made an INTERNALERROR (exit 3)
    (tmp_path / "pyproject.toml").write_text(
        '[dependency-groups]\ntests = ["pytest", "pytest-asyncio"]\n\n'
        '[tool.pytest.ini_options]\nasyncio_mode = "auto"\n'
    )
    (tmp_path / "test_it.py").write_text("def test_it():\n    assert True\n")
    _commit(tmp_path)
    argv = (sys.executable, "-m", "pytest", "-W", "error", "-p", "no:asyncio")
    run = greenloop(tmp_path, "check", "--no-cache", "--format", "json", "--", *argv)
    out = json.loads(run.stdout)
    assert out["verdict"] == "env_failure", run.stdout
    digest = out["digest"]
    assert "What failed: INTERNALERROR> " in digest
    assert "Unknown config option: asyncio_mode" in digest
    assert "Install `pytest-asyncio`" in digest
    assert "declares it in pyproject.toml" in digest


def _commit(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tests")


def test_a_teardown_error_after_green_tests_is_headlined_as_teardown() -> None:
    out = _checked("pytest/flask-1")  # `mp.undo()` misspelt after the session fixture's yield
    digest = out["digest"]
    assert out["verdict"] == "failed"
    assert "FIRST FAILING TEST" not in digest
    assert "FIRST ERROR, IN TEARDOWN OF: tests/test_views.py::test_init_once" in digest
    assert "1 error, 492 passed" in digest
    assert "at tests/conftest.py:33 in _standard_os_environ: mp.unod()" in digest


def test_a_teardown_error_is_headlined_as_teardown_from_the_plugins_report_too(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='session', autouse=True)\n"
        "def database():\n    yield {}\n    raise RuntimeError('could not close the database')\n"
    )
    (tmp_path / "test_it.py").write_text(
        "def test_one():\n    assert 1\n\n\ndef test_two():\n    assert 2\n"
    )
    _commit(tmp_path)
    run = greenloop(
        tmp_path, "check", "--no-cache", "--format", "json", "--", sys.executable, "-m", "pytest"
    )
    out = json.loads(run.stdout)
    assert out["verdict"] == "failed", run.stdout
    assert "FIRST ERROR, IN TEARDOWN OF: test_it.py::test_two" in out["digest"]
    assert [f["phase"] for f in out["failures"]] == ["teardown"]
    assert "1 error, 2 passed" in out["digest"]


def _pytest_output(tmp_path: Path, test: str) -> str:
    (tmp_path / "test_lexer.py").write_text(test)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    run = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=hang(300), check=False
    )
    return run.stdout


def test_redaction_keeps_a_repr_after_a_secret_word_in_pytests_assertion_diff(
    tmp_path: Path,
) -> None:
    output = _pytest_output(
        tmp_path,
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Token:\n    kind: str\n\n\n"
        "@dataclass\nclass Lexed:\n    token: Token\n    line: int\n\n\n"
        "def test_lexed():\n    assert Lexed(Token('NAME'), 1) == Lexed(Token('OP'), 1)\n",
    )
    said = [ln for ln in output.splitlines() if "token: Token(" in ln or "token=T" in ln]
    assert len(said) >= 2, output  # `token: Token(kind='NAME') != Token(kind='OP')`, the cut repr
    assert [redact(ln, secrets=()) for ln in said] == said


def test_redaction_keeps_a_location_ending_a_sentence_in_a_file_named_like_a_secret_word() -> None:
    for text in ("The test failed at tests/test_token.py:142.", "See app/secrets.py:1024."):
        assert redact(text, secrets=()) == text
    assert redact("token: 42.5abc", secrets=()) == "token: [REDACTED]"


def test_redaction_keeps_source_lines_that_name_a_secret_word_in_real_tracebacks() -> None:
    # oauthlib-1: `token = token_handler.create_token(request, refresh_token=self.refresh_token)`
    # was `token = [REDACTED], refresh_token=[REDACTED])` in the digest's call chain
    digest = _checked("pytest/oauthlib-1")["digest"]
    assert "token = token_handler.create_token(request, refresh_token=self.refresh_token)" in digest
    assert "[REDACTED]" not in digest
    lines = {
        "pytest/itsdangerous-5": "self.secret_keys: list[bytes] = _make_keys_list(secret_key)",
        "pytest/dateutil-1": "res, skipped_tokens = self._parse(timestr, **kwargs)",
        "pytest/jmespath-1": "self._tokens = list(self.tokenizer)",
    }
    for case, line in lines.items():
        data = json.loads((REAL / case / "case.json").read_text(encoding="utf-8"))
        assert line in data["stdout"]
        assert redact(line, secrets=()) == line


def test_redaction_still_hides_every_seeded_secret_shape() -> None:
    for line, secret in SHAPES:
        if re.search(PROJECT_PATTERN, secret):
            continue  # hidden by the project's own pattern (tests/test_redact_outputs.py)
        assert secret not in redact(line, secrets=()), line
