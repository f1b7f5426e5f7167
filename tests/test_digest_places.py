"""JSON and GitHub annotations place a failure where the text digest does (issue 26): the deepest
repository frame, never the standard library's ``unittest/case.py`` or ``unittest/mock.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from greenloop.digest import build_digest
from greenloop.report.render import check_json, render_github
from limits import hang
from test_digest import load

PY = sys.executable


def test_json_places_a_django_unittest_failure_at_the_tests_line_not_in_unittest_mock() -> None:
    # django-filter-1: Django's runner (unittest) prints mock's assert_called_with as the last frame
    result, root = load("django-test", "django-filter-1")
    digest = build_digest(result, root=root)
    first = check_json(result, digest)["failures"][0]
    assert "at tests/test_filters.py:954:" in digest.text  # in the test the id names
    assert "test_field_with_lookup_expr" in digest.text.splitlines()[2]
    assert (first["file"], first["line"]) == ("tests/test_filters.py", 954)
    assert first["frames"][-1]["file"].endswith("unittest/mock.py")  # the tool's frames, whole


def test_github_annotates_the_tests_line_of_a_django_unittest_failure() -> None:
    result, root = load("django-test", "django-filter-1")
    out = render_github(result, build_digest(result, root=root))
    assert "::error file=tests/test_filters.py,line=954,title=" in out
    assert "unittest/mock.py" not in out.split("\n  ")[0]


def test_github_leaves_out_a_file_outside_the_repository_rather_than_naming_it() -> None:
    # xo/longest-streak-0: eslint's own rule file in node_modules crashed; no project frame
    result, root = load("xo", "longest-streak-0")
    annotations = [
        line
        for line in render_github(result, build_digest(result, root=root)).splitlines()
        if line.startswith("::")
    ]
    assert annotations
    assert not any(
        "node_modules" in line.partition("::")[2].partition("::")[0] for line in annotations
    )


UNITTEST_HELPERS = """import unittest


class CacheTestMixin:
    def test_clear(self):
        cache = self.Cache(maxsize=2)
        cache.update({1: 1, 2: 2})
        self.assertEqual(2, len(cache))
"""
UNITTEST_TESTS = """import unittest

from cache import Cache
from tests import CacheTestMixin


class CacheTest(unittest.TestCase, CacheTestMixin):
    Cache = Cache
"""
CACHE = "class Cache(dict):\n    def __init__(self, maxsize):\n        self.maxsize = maxsize\n\n    def update(self, other):\n        pass\n"


def test_check_annotates_a_unittest_style_failure_under_pytest_at_the_helpers_line(
    make_repo: Callable[..., Path],
) -> None:
    # cachetools' layout: the assertion in a mixin in tests/__init__.py; the plugin's record puts it
    # at unittest/case.py:866 (the text said tests/__init__.py:8)
    root = make_repo(
        {
            "cache.py": CACHE,
            "tests/__init__.py": UNITTEST_HELPERS,
            "tests/test_cache.py": UNITTEST_TESTS,
        }
    )
    argv = ["--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    run = [PY, "-m", "greenloop", "-C", str(root), "check"]
    github = subprocess.run(
        [*run, "--format", "github", *argv],
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=False,
    )
    assert (
        "::error file=tests/__init__.py,line=8,title=tests/test_cache.py%3A%3ACacheTest%3A%3Atest_clear::AssertionError: 2 != 0"
        in github.stdout
    ), github.stdout
    data = json.loads(
        subprocess.run(
            [*run, "--format", "json", *argv],
            capture_output=True,
            text=True,
            timeout=hang(300),
            check=False,
        ).stdout
    )
    assert (data["failures"][0]["file"], data["failures"][0]["line"]) == ("tests/__init__.py", 8)
    assert "::test_clear\n  AssertionError: 2 != 0\n  at tests/__init__.py:8:" in data["digest"]
