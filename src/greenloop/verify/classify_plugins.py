"""A pytest plugin the tests need and the environment lacks: ``async def`` tests that no plugin
runs, options that only a plugin adds (pytest refuses them: exit 4). Both are the environment's
failure, not the code's: the advice names the plugin the project declares, where it declares it."""

from __future__ import annotations

import os
import re

from greenloop.parsers.model import Failure, Kind, ParseResult
from greenloop.processes.process import ProcessResult
from greenloop.verify.verdict import Classification, Verdict

# pytest (8.4+) fails an async test no plugin runs with this (parsers/pytest.py reads it too; not
# imported from there: the Stop hook classifies every run, pytest's or not)
NOT_NATIVE = "async def functions are not natively supported"
# pytest's own list when it cannot run an async test, in the order a project most often uses them
ASYNC_PLUGINS = ("pytest-asyncio", "anyio", "pytest-trio", "pytest-tornasync", "pytest-twisted")
# pytest < 8.4: the skip's reason (-ra shows it) and the warning (the warnings summary)
SKIPPED_NO_PLUGIN = "async def function and no async plugin installed"
_SKIPPED_WARNING = "async def functions are not natively supported and have been skipped"
# what the output says beside the failures: an ini option or a mark only one plugin knows
_ASYNC_HINTS = (
    ("asyncio_", "pytest-asyncio"),
    ("mark.asyncio", "pytest-asyncio"),
    ("anyio_backend", "anyio"),
    ("mark.anyio", "anyio"),
    ("trio_mode", "pytest-trio"),
    ("mark.trio", "pytest-trio"),
)
# an option pytest refused -> the plugin that adds it (a name, or a prefix ending in "-")
OPTION_PLUGINS = {
    "--cov": "pytest-cov",
    "--cov-": "pytest-cov",
    "--no-cov": "pytest-cov",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist",
    "--maxprocesses": "pytest-xdist",
    "--timeout": "pytest-timeout",
    "--timeout-": "pytest-timeout",
    "--timeout_method": "pytest-timeout",
    "--reruns": "pytest-rerunfailures",
    "--reruns-": "pytest-rerunfailures",
    "--only-rerun": "pytest-rerunfailures",
    "--benchmark-": "pytest-benchmark",
    "--mypy": "pytest-mypy",
    "--flake8": "pytest-flake8",
    "--pycodestyle": "pytest-pycodestyle",
    "--asyncio-mode": "pytest-asyncio",
    "--html": "pytest-html",
    "--self-contained-html": "pytest-html",
    "--ds": "pytest-django",
    "--reuse-db": "pytest-django",
    "--create-db": "pytest-django",
    "--nomigrations": "pytest-django",
    "--randomly-seed": "pytest-randomly",
    "--randomly-": "pytest-randomly",
    "--random-order": "pytest-random-order",
    "--random-order-": "pytest-random-order",
    "--doctest-plus": "pytest-doctestplus",
    "--doctest-rst": "pytest-doctestplus",
    "--hypothesis-": "hypothesis",
    "--mpl": "pytest-mpl",
    "--mpl-": "pytest-mpl",
    "--snapshot-update": "syrupy",
    "--snapshot-": "syrupy",
}
# an ini option pytest does not know -> the plugin that adds it (a name, or a prefix ending in
# "_"): "Unknown config option: asyncio_mode", an INTERNALERROR under -W error (exit 3)
INI_PLUGINS = {
    "asyncio_": "pytest-asyncio",
    "timeout": "pytest-timeout",
    "timeout_": "pytest-timeout",
    "DJANGO_SETTINGS_MODULE": "pytest-django",
    "django_": "pytest-django",
    "env": "pytest-env",
    "trio_mode": "pytest-trio",
    "trio_": "pytest-trio",
    "mock_use_standalone_module": "pytest-mock",
    "mypy_": "pytest-mypy",
    "flake8-": "pytest-flake8",
    "doctest_plus": "pytest-doctestplus",
    "reruns": "pytest-rerunfailures",
    "reruns_delay": "pytest-rerunfailures",
}
_UNKNOWN_INI = "Unknown config option: "
# pytest's argparse: "pytest: error: unrecognized arguments: --cov-append --cov tinydb"
_USAGE_ERROR = re.compile(r"^[\w.-]*: error: (?P<what>[^\n]*)$", re.M)
_UNRECOGNIZED = "unrecognized arguments: "
# where a Python project declares what its tests need (top level, tests/ and requirements/)
_MANIFESTS = ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", ".pytest.ini", "setup.py")
_MANIFEST_DIRS = ("", "tests", "requirements")
_MAX_MANIFEST_BYTES = 1_000_000


def missing_async_plugin(
    run: ProcessResult, parsed: ParseResult, root: str = ""
) -> Classification | None:
    """Every failing test is pytest's own "async def functions are not natively supported" (or a
    fixture not found beside them: pytest-asyncio's ``unused_tcp_port``): no async plugin is
    installed, so not one of those tests ran its code."""
    if NOT_NATIVE not in run.merged or "pytest" not in parsed.tool:
        return None
    tests = [f for f in parsed.failures if f.kind is Kind.TEST]
    if not any(NOT_NATIVE in f.message for f in tests):
        return None
    if not all(_not_native(f) or _fixture_not_found(f) for f in tests):
        return None  # some failure is the code's own: the agent gets the run as it is
    plugin, where = _async_plugin(run.merged, root)
    failed = parsed.counts.failing or len(tests)
    first = next(f for f in tests if NOT_NATIVE in f.message)
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"no {plugin or 'async plugin'} installed to run async tests: {failed} tests failed"
            " before their code ran",
        ),
        evidence=f"{first.id}: {first.error_type or 'Failed'}: {first.message}",
        advice=_install_advice(plugin, where, "the plugin the async tests are written for"),
    )


def skipped_async_tests(
    run: ProcessResult, parsed: ParseResult, root: str = ""
) -> Classification | None:
    """pytest before 8.4 skips an ``async def`` test no plugin runs (a warning, a skip) and exits
    0: the run is not green, those tests never ran. Only when the project declares the plugin or
    configures it (``asyncio_mode``): a project whose optional async tests skip is green as ever."""
    if "pytest" not in parsed.tool:
        return None
    said = _line_with(run.merged, SKIPPED_NO_PLUGIN) or _line_with(run.merged, _SKIPPED_WARNING)
    plugin, where = _async_plugin(run.merged, root) if said else ("", "")
    if not plugin:
        return None
    skipped = f" ({parsed.counts.skipped} skipped)" if parsed.counts.skipped else ""
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"no {plugin or 'async plugin'} installed to run async tests: pytest skipped them"
            f"{skipped}, so they never ran",
        ),
        evidence=said,
        advice=_install_advice(plugin, where, "the plugin the async tests are written for"),
    )


def _line_with(text: str, words: str, *, last: bool = False) -> str:
    at = text.rfind(words) if last else text.find(words)
    if at < 0:
        return ""
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    return text[start : end if end >= 0 else len(text)].strip()


def refused_options(run: ProcessResult) -> str:
    """pytest's usage error line (``error: unrecognized arguments: --cov tinydb``), or ""."""
    m = _USAGE_ERROR.search(run.merged) if ": error: " in run.merged else None
    return f"error: {m['what'].strip()}" if m else ""


def option_plugin(evidence: str, root: str = "") -> tuple[str, str]:
    """The plugin that adds an option pytest refused, and the manifest declaring it ("" if none)."""
    _, found, args = evidence.partition(_UNRECOGNIZED)
    if not found:
        return "", ""
    for arg in args.split():
        name = arg.partition("=")[0]
        plugin = OPTION_PLUGINS.get(name) or _by_prefix(name)
        if plugin:
            return plugin, _declared_in(plugin, root)
    return "", ""


def ini_plugin(text: str, root: str = "") -> tuple[str, str]:
    """The plugin whose ini option pytest did not know, and the manifest declaring it."""
    # the last: pytest's own source line that prints it comes first in a traceback
    option = _line_with(text, _UNKNOWN_INI, last=True).rpartition(_UNKNOWN_INI)[2].strip()
    if not option:
        return "", ""
    head = option.partition("_")[0] + "_"
    plugin = INI_PLUGINS.get(option) or INI_PLUGINS.get(head, "")
    return plugin, _declared_in(plugin, root) if plugin else ""


def refused_advice(plugin: str, where: str) -> str:
    return _install_advice(plugin, where, "the plugin that adds these options") if plugin else ""


def _by_prefix(name: str) -> str:
    head, dash, _ = name.rpartition("-")
    while head.startswith("--") and dash:
        plugin = OPTION_PLUGINS.get(head + "-")
        if plugin:
            return plugin
        head, dash, _ = head.rpartition("-")
    return ""


def _not_native(f: Failure) -> bool:
    """pytest's message, or its short summary's cut of it (``Failed: async de...``)."""
    said = f"{f.error_type}: {f.message}" if f.error_type else f.message
    cut = said.removesuffix("...")
    return NOT_NATIVE in said or (cut != said and f"Failed: {NOT_NATIVE}.".startswith(cut))


def _fixture_not_found(f: Failure) -> bool:
    """pytest's text (``fixture 'unused_tcp_port' not found``) or its report's exception."""
    said = f.message.startswith("fixture '") and "' not found" in f.message
    return said or f.error_type.endswith("FixtureLookupError")


def _async_plugin(text: str, root: str) -> tuple[str, str]:
    """The async plugin the project declares (and where), else the one the output hints at."""
    for plugin in ASYNC_PLUGINS:
        where = _declared_in(plugin, root)
        if where:
            return plugin, where
    return next((plugin for hint, plugin in _ASYNC_HINTS if hint in text), ""), ""


def _install_advice(plugin: str, where: str, what: str) -> str:
    if not plugin:
        return f"Install {what} where the verifier runs, then re-run."
    declared = f" (the project declares it in {where})" if where else ""
    return f"Install `{plugin}` where the verifier runs{declared}, then re-run."


def _declared_in(dist: str, root: str) -> str:
    """The first manifest of ``root`` naming the distribution ``dist``, or ""."""
    if not root:
        return ""
    spelt = "[-_.]".join(re.escape(part) for part in dist.split("-"))
    name = re.compile(rf"(?<![\w.-]){spelt}(?![\w-])", re.I)
    for path in _manifest_paths(root):
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                text = f.read(_MAX_MANIFEST_BYTES)
        except OSError:
            continue
        if name.search(text):
            return path
    return ""


def _manifest_paths(root: str) -> list[str]:
    paths = []
    for folder in _MANIFEST_DIRS:
        try:
            names = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            continue
        paths += [os.path.join(folder, name) for name in names if _is_manifest(folder, name)]
    return paths


def _is_manifest(folder: str, name: str) -> bool:
    if name.endswith(".txt") and ("requirements" in name or folder == "requirements"):
        return True
    return not folder and name in _MANIFESTS
