"""Runner output printed on Windows keeps its project frame, and the digest names the file relative
to the project, as for the same output on Linux.

Where the outputs come from, each said at its test:
- pytest: a real Windows run from a public repository's captured agent log (QuixBugs'
  topological_ordering, under ``D:\\…\\repo``), and this suite's real Linux capture
  (tests/resources/outputs/pytest/deep_exception) spelled as pytest spells paths on Windows:
  ``_pytest._code.code`` writes a frame's path as ``bestrelpath(cwd, path)``, joined with os.sep
  (``src\\pkg\\a.py:6: in run``), or absolute when shorter (``C:\\Python314\\Lib\\…``); node ids keep
  ``/`` (``FAILED tests/test_pipeline.py::…``), as the real log shows.
- go test: the real Linux captures spelled as Go spells them on Windows: the runtime's stack
  frames keep forward slashes after the drive (``C:/Users/me/…/idx.go:4``: the compiler records
  file names with ``/``), GOROOT is ``C:/Program Files/Go``, and go build names a package file
  ``.\\main.go:13:18`` (relative, with os.sep).
- jest: jest-message-util's ``formatPath`` writes every stack frame as
  ``slash(path.relative(rootDir, file))`` and jest-reporters' ``formatTestPath`` slashes the FAIL
  line, so the real Linux capture is what Windows prints; Babel's parse error names the file
  absolutely (``${filename}: ${message}``, @babel/core), built here with a Windows filename.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.digest.frames import repo_location
from greenloop.parsers import ParserInput, parse_output
from greenloop.parsers.model import ParseResult
from greenloop.parsers.path_spellings import posix_path, posix_text, windows_root
from greenloop.processes.process import ProcessResult
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import classify

OUTPUTS = Path(__file__).parent / "resources" / "outputs"
WIN = "C:\\Users\\me\\glcap"

# A real pytest run on Windows (a public repository's captured agent log of a QuixBugs task,
# found with the tool library's find_string; kept as printed).
QUIX_ROOT = "D:\\Sujit\\Micro1_hackathon\\.scratch\\baseline\\quixbugs__topological_ordering\\repo"
QUIX_COLLECT = r"""
=================================== ERRORS ====================================
_______ ERROR collecting python_testcases/test_topological_ordering.py ________
..\..\..\..\.venv\Lib\site-packages\_pytest\python.py:508: in importtestmodule
    mod = import_path(
..\..\..\..\.venv\Lib\site-packages\_pytest\pathlib.py:596: in import_path
    importlib.import_module(module_name)
C:\Python314\Lib\importlib\__init__.py:88: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
<frozen importlib._bootstrap>:1406: in _gcd_import
    ???
<frozen importlib._bootstrap>:1371: in _find_and_load
    ???
<frozen importlib._bootstrap>:1342: in _find_and_load_unlocked
    ???
<frozen importlib._bootstrap>:938: in _load_unlocked
    ???
..\..\..\..\.venv\Lib\site-packages\_pytest\assertion\rewrite.py:188: in exec_module
    exec(co, module.__dict__)
python_testcases\test_topological_ordering.py:7: in <module>
    from python_programs.topological_ordering import topological_ordering
E     File "D:\Sujit\Micro1_hackathon\.scratch\baseline\quixbugs__topological_ordering\repo\python_programs\topological_ordering.py", line 34
E       \"\"\"
E       ^
E   SyntaxError: unterminated triple-quoted string literal (detected at line 34)
=========================== short test summary info ===========================
ERROR python_testcases/test_topological_ordering.py
!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.27s
""".replace('\\"', '"')


def capture(runner: str, case: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((OUTPUTS / runner / f"{case}.json").read_text())
    return data


def parse(argv: tuple[str, ...], stdout: str, stderr: str, root: str) -> ParseResult:
    return parse_output(
        ParserInput(
            argv=argv, exit_code=1, stdout=stdout, stderr=stderr, merged=stdout + stderr, root=root
        )
    )


def digest_text(argv: tuple[str, ...], stdout: str, stderr: str, root: str) -> str:
    run = ProcessResult(
        argv=argv, exit_code=1, stdout=stdout, stderr=stderr, merged=stdout + stderr
    )
    parsed = parse(argv, stdout, stderr, root)
    stage = Stage(name="test", command=argv, why="captured")
    verdict = classify(run, parsed, command=stage.display, repo_modules={"src", "tests"})
    result = CheckResult(
        cascade=Cascade(stages=(stage,), source="test"),
        runs=(StageRun(stage=stage, result=run, parsed=parsed, classification=verdict),),
        verdict=verdict.verdict,
        duration_s=1.0,
    )
    return build_digest(result, root=root).text


def places(result: ParseResult, root: str) -> list[tuple[str, str, int | None, object]]:
    """Each failure's id, file and line, and where the digest points in the project."""
    return [(f.id, f.file, f.line, repo_location(f, Path(root))) for f in result.failures]


def pytest_on_windows(text: str, linux_root: str, win_root: str) -> str:
    """pytest's Windows spelling: frame and location paths joined with backslashes."""
    text = text.replace("platform linux", "platform win32").replace(linux_root, win_root)
    path_first = re.compile(r"^(?P<path>[\w./-]+\.py)(?P<rest>:\d+:| [.FEsx]+ )", re.MULTILINE)
    return path_first.sub(lambda m: m["path"].replace("/", "\\") + m["rest"], text)


def test_a_real_windows_pytest_collection_error_names_the_project_file_relative_to_the_project() -> (
    None
):
    result = parse(("python", "-m", "pytest", "-q"), QUIX_COLLECT, "", QUIX_ROOT)
    (failure,) = result.failures
    assert failure.file == "python_programs/topological_ordering.py"
    assert failure.line == 34
    assert failure.error_type == "SyntaxError"
    frames = [(frame.file, frame.line) for frame in failure.frames]
    assert ("python_testcases/test_topological_ordering.py", 7) in frames
    assert ("/c/Python314/Lib/importlib/__init__.py", 88) in frames  # kept, outside the project
    assert repo_location(failure, Path(QUIX_ROOT)) == ("python_programs/topological_ordering.py", 34, None)  # fmt: skip
    digest = digest_text(("python", "-m", "pytest", "-q"), QUIX_COLLECT, "", QUIX_ROOT)
    assert "python_programs/topological_ordering.py:34" in digest
    assert "Sujit" not in digest


def test_pytest_frames_printed_on_windows_read_as_the_same_run_printed_on_linux() -> None:
    data = capture("pytest", "deep_exception")
    linux_root = data["cwd_placeholder"]
    win_root = WIN + "\\pytest_deep_exception"
    windows = pytest_on_windows(data["stdout"], linux_root, win_root)
    assert "src\\pkg\\a.py:6: in run" in windows
    on_linux = parse(("pytest",), data["stdout"], data["stderr"], linux_root)
    on_windows = parse(("pytest",), windows, data["stderr"], win_root)
    assert places(on_windows, win_root) == places(on_linux, linux_root)
    assert places(on_windows, win_root)[0][3] == ("src/pkg/c.py", 6, None)
    linux_digest = digest_text(("pytest",), data["stdout"], data["stderr"], linux_root)
    assert digest_text(("pytest",), windows, data["stderr"], win_root) == linux_digest


def test_an_absolute_windows_path_inside_the_project_is_the_project_s_in_any_letter_case() -> None:
    root = "C:\\Users\\Me\\proj"
    said = "C:\\Users\\me\\PROJ\\pkg\\mod.py:12: in add\n/c/Users/me/proj/pkg/b.py:3: in f\n"
    assert posix_text(said, posix_path(root)) == (
        "/c/Users/Me/proj/pkg/mod.py:12: in add\n/c/Users/Me/proj/pkg/b.py:3: in f\n"
    )


def go_on_windows(text: str, linux_root: str, win_root: str) -> str:
    """Go's Windows spelling: the runtime's frames with forward slashes after the drive."""
    text = text.replace(linux_root, win_root.replace("\\", "/"))
    return re.sub(r"/usr/lib/go-[\d.]+", "C:/Program Files/Go", text)


def test_a_go_panic_printed_on_windows_keeps_the_project_frame() -> None:
    data = capture("go", "test_panic")
    linux_root, win_root = data["cwd_placeholder"], WIN + "\\go_test_panic"
    windows = go_on_windows(data["stdout"], linux_root, win_root)
    assert "C:/Users/me/glcap/go_test_panic/idx.go:4" in windows
    argv = ("go", "test", "./...")
    on_linux = parse(argv, data["stdout"], data["stderr"], linux_root)
    on_windows = parse(argv, windows, data["stderr"], win_root)
    assert on_linux.failures
    assert places(on_windows, win_root) == places(on_linux, linux_root)
    assert digest_text(argv, windows, "", win_root) == digest_text(
        argv, data["stdout"], "", linux_root
    )


def test_go_build_errors_printed_on_windows_name_the_package_file() -> None:
    data = capture("go", "build_error")
    windows = data["stderr"].replace("./main.go", ".\\main.go")
    argv = ("go", "build", "./...")
    on_windows = parse(argv, "", windows, WIN + "\\go_build_error")
    on_linux = parse(argv, "", data["stderr"], data["cwd_placeholder"])
    assert [(f.file, f.line) for f in on_windows.failures] == [("main.go", 13), ("main.go", 14)]
    assert places(on_windows, WIN) == places(on_linux, data["cwd_placeholder"])


def test_jest_output_read_with_a_windows_root_keeps_its_project_frames() -> None:
    data = capture("jest", "failures")
    win_root = WIN + "\\jest_failures"
    on_linux = parse(("jest",), data["stdout"], data["stderr"], data["cwd_placeholder"])
    on_windows = parse(("jest",), data["stdout"], data["stderr"], win_root)
    assert on_linux.failures
    assert places(on_windows, win_root) == places(on_linux, data["cwd_placeholder"])
    assert ("src/user.js", 7, None) in [p[3] for p in places(on_windows, win_root)]


BABEL_SUITE = """FAIL test/user.test.js
  ● Test suite failed to run

    SyntaxError: {root}{sep}src{sep}user.js: Unexpected token (7:22)

       5 |
       6 | function loadConfig(raw) {{
    >  7 |   return {{ port: raw.port || }};
         |                             ^

Test Suites: 1 failed, 1 total
Tests:       0 total
"""


def test_a_jest_suite_that_failed_to_parse_names_the_windows_file_relative_to_the_project() -> None:
    linux_root, win_root = "/tmp/glcap/jest_babel", WIN + "\\jest_babel"
    on_linux = parse(("jest",), "", BABEL_SUITE.format(root=linux_root, sep="/"), linux_root)
    windows = BABEL_SUITE.format(root=win_root, sep="\\")
    on_windows = parse(("jest",), "", windows, win_root)
    assert on_linux.failures
    assert places(on_windows, win_root) == places(on_linux, linux_root)
    assert "C:\\" not in digest_text(("jest",), "", windows, win_root)


@pytest.mark.parametrize(
    ("root", "platform", "windows"),
    [
        ("C:\\Users\\me\\proj", "linux", True),
        ("c:/Users/me/proj", "win32", True),
        ("/c/Users/me/proj", "win32", True),
        ("/c/Users/me/proj", "linux", False),  # a Linux folder named c
        ("/home/me/proj", "win32", False),
    ],
)
def test_a_windows_root_is_told_by_its_drive_or_by_git_bash_s_spelling_on_windows(
    root: str, platform: str, windows: bool
) -> None:
    assert windows_root(root, platform) is windows


def test_output_under_a_linux_root_is_read_as_printed() -> None:
    said = "C:\\tmp\\x.py:3: in f\nsrc\\a.py:1: E\n"
    result = parse(("pytest",), said, "", "/home/me/proj")
    linux = parse_output(ParserInput(argv=("pytest",), stdout=said, merged=said, root=""))
    assert result == linux
