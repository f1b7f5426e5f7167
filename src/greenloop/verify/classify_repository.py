"""Environment failures the output shows beside the repository's own files and module names: a
module not installed, the project imported from another copy or not installed at all, a Python
its requires-python excludes, a submodule not checked out, an import of what only the build writes."""

from __future__ import annotations

import os
import re
from collections.abc import Collection

from greenloop.parsers.model import ParseResult
from greenloop.processes.process import ProcessResult
from greenloop.verify.verdict import Classification, Verdict

TYPE_CHECKING = False  # not typing's: the Stop hook imports this module on every agent turn
if TYPE_CHECKING:
    from greenloop.verify.node_packages import Unresolved


_MISMATCH = r"imported module '(?P<module>[\w.]+)' has this __file__ attribute:\s+(?P<path>\S+)"
_NO_MODULE = r"No module named '?([\w.]+)'?"


def module_not_installed(text: str, repo_modules: Collection[str]) -> Classification | None:
    missing = missing_third_party(text, repo_modules)
    if not missing:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(f"module {missing!r} is not installed",),
        evidence=f"No module named '{missing}'",
        missing_module=missing,
    )


def missing_third_party(text: str, repo_modules: Collection[str]) -> str:
    """The first missing module that is not the project's own (nor a typo of one)."""
    own = set(repo_modules)
    for m in re.finditer(_NO_MODULE, text):
        name = m.group(1)
        top = name.split(".")[0]
        if top in own or _close_match(top, own):
            continue  # the project's own module, or a misspelling of it: a code error
        return name
    return ""


def _close_match(name: str, names: Collection[str]) -> bool:
    import difflib  # only for a missing module the repository does not provide

    return bool(difflib.get_close_matches(name, names, n=1, cutoff=0.75))


def foreign_import(run: ProcessResult, root: str) -> Classification | None:
    """pytest's "import file mismatch" when the module came from outside the repository: the
    environment imports another checkout's copy (an editable install of a second clone) or a moved
    tree's stale bytecode. Inside it, two test files share a basename: the code's to fix."""
    if "import file mismatch" not in run.merged:
        return None
    home = os.path.realpath(root)
    for m in re.finditer(_MISMATCH, run.merged):
        path = os.path.realpath(m["path"])  # as pytest prints it, resolved as the root is
        if os.path.isabs(m["path"]) and os.path.commonpath([path, home]) != home:
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(
                    f"pytest imported {m['module']} from outside this repository: the environment "
                    "has another copy of it (reinstall it from here: pip install -e .; or remove "
                    "stale __pycache__)",
                ),
                evidence=f"imported module '{m['module']}' has this __file__ attribute: {path}",
            )
    return None


def own_package_not_installed(run: ProcessResult, root: str) -> Classification | None:
    """``No module named 'pkg'`` while the repository has ``src/pkg``: a src layout nobody installed
    into the verifier's environment (a fresh clone, no ``pip install -e .``). A package the code
    no longer has, or a misspelt one, stays the code's failure."""
    if "No module named" not in run.merged:
        return None
    for m in re.finditer(_NO_MODULE, run.merged):
        name = m.group(1)
        src = os.path.join(root, "src", name)
        if "." in name or os.path.exists(os.path.join(root, name)):
            continue
        if os.path.isfile(os.path.join(src, "__init__.py")) or os.path.isfile(f"{src}.py"):
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(
                    f"the project's own package {name!r} (src/{name}) is not installed where the "
                    "verifier runs",
                ),
                evidence=m.group(0),
                advice="Install the project there (`pip install -e .`), then re-run.",
            )
    return None


def submodule_not_checked_out(run: ProcessResult, root: str) -> Classification | None:
    """A file the run could not find inside a git submodule nobody checked out (a clone without
    ``--recurse-submodules``: tomlkit's tests read ``tests/toml-test``, an empty directory)."""
    if "No such file or directory" not in run.merged:
        return None
    for path in _submodule_paths(root):
        full = os.path.join(root, path)
        if os.path.isdir(full) and os.listdir(full):
            continue
        inside = re.compile(rf"(?<![\w.-]){re.escape(path)}/")
        for line in run.merged.splitlines():
            if "No such file or directory" in line and inside.search(line):
                return Classification(
                    verdict=Verdict.ENV_FAILURE,
                    reasons=(f"the git submodule {path} is not checked out",),
                    evidence=line.strip(),
                    advice="Check out the submodules (`git submodule update --init --recursive`), "
                    "then re-run.",
                )
    return None


def _submodule_paths(root: str) -> list[str]:
    try:
        with open(os.path.join(root, ".gitmodules"), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    return [
        m.group(1).strip("/")
        for m in re.finditer(r"^[ \t]*path[ \t]*=[ \t]*(\S(?:.*\S)?)[ \t]*$", text, re.M)
    ]


def stale_install(parsed: ParseResult, root: str) -> Classification | None:
    """The tests imported the project's own package from a copy installed without ``-e`` that
    differs from the tree: whatever the exit code, the run says nothing about this tree, and no
    edit reaches it (the agent would "fix" src/ and see the same failure)."""
    if not (parsed.site_copies and root):
        return None
    from greenloop.parsers import installed

    found = installed.stale_copy(parsed, root)
    if found is None:
        return None
    name, path, changed = found
    copy = _under(path, root)
    if "/site-packages/" in path or "/dist-packages/" in path:
        where = f"a copy installed without -e ({copy})"
        python = _under(os.path.join(path.split("/lib/python", 1)[0], "bin", "python"), root)
        install = f"`{python} -m pip install -e .`"
    else:  # an editable install of another clone or worktree of the project
        where, install = f"another checkout ({copy})", "`pip install -e .` from here"
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"the tests imported {name} from {where}, not from this repository, and {changed} "
            "differs from it: the run did not test this tree",
        ),
        evidence=f"{name} imported from {copy}",
        advice=f"Install this checkout in editable mode where the tests run ({install}), then "
        "re-run.",
    )


def _under(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it, else as it is."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def unsupported_python(run: ProcessResult, parsed: ParseResult, root: str) -> Classification | None:
    """The tests ran under a Python the project's ``requires-python`` excludes."""
    if not parsed.python:
        return None
    from greenloop.verify import pyversion  # only for a failing run the plugin saw

    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as handle:
            spec = pyversion.requires_python(handle.read())
    except (OSError, UnicodeDecodeError):
        return None
    if not spec or pyversion.satisfies(parsed.python, spec):
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"the tests ran under Python {parsed.python}, which this project does not support "
            f"(pyproject.toml: requires-python = {spec!r})",
        ),
        evidence=f"Python {parsed.python}; requires-python {spec}",
        advice="Run the verifier with a Python the project supports (a venv of that version), "
        "then re-run.",
    )


def unresolved_js_import(run: ProcessResult, root: str) -> Classification | None:
    """ohash's tests import ``ohash/crypto``, which resolves to dist/ once the build has run."""
    from greenloop.verify import (
        node_packages,  # here: only a failing run with a checkout gets this far
    )

    return _checkout_to_blame(node_packages.unresolved_by_checkout(run.merged, root))


def unbuilt_output_in_lint(parsed: ParseResult, root: str) -> Classification | None:
    """``eslint .`` on a fresh clone: an import of dist/ that only the build writes."""
    from greenloop.verify import node_packages

    errors = [f for f in parsed.failures if f.severity != "warning"]
    if not errors or any(f.code not in node_packages.UNRESOLVED_RULES for f in errors):
        return None
    return _checkout_to_blame(
        node_packages.unbuilt_in_lint([(f.file, f.line or 0, f.message) for f in errors], root)
    )


def _checkout_to_blame(found: Unresolved | None) -> Classification | None:
    if found is None:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(found.reason,),
        evidence=found.evidence,
        advice=found.advice,
    )
