"""greenloop's pytest plugin: structured results as JSON lines, one file per process.

Loaded with ``PYTHONPATH=<a dir holding only this file>`` and ``PYTEST_PLUGINS=greenloop_pytest_plugin``
so it works in whatever environment runs the user's pytest. Depends only on pytest and the standard
library (no greenloop imports: it runs inside the user's interpreter). Every hook swallows its own
errors, and it does nothing when ``GREENLOOP_PYTEST_REPORT_DIR`` is unset. It changes the run in
two ways only: ``--lf`` and ``--sw`` are turned off (a partial run is no verification), and
greenloop's failing-first run (issue 7) selects: ``GREENLOOP_PYTEST_SELECT`` (node ids and test
files, one a line) replaces the paths pytest collects with those tests' files (so only they are
imported, issue 29) and deselects every other item in them; ``GREENLOOP_PYTEST_FAILFAST`` acts as
``-x``. ``GREENLOOP_PYTEST_FIRST`` (groups of node ids and test files, one a line, groups parted
by an empty line) runs those tests first, group by group, then the rest of the suite; a group in
which a test failed ends the run after its last test, as ``-x`` would (the loop's narrow steps and
its gate in one process: a red iteration pays for what it needs, a green one runs the suite once);
with ``GREENLOOP_PYTEST_STOP_ABOVE`` (a number N) it also ends after the (N+1)-th failure.
``GREENLOOP_PYTEST_COVERAGE`` (a folder) records, when coverage.py is importable and not
already measuring, which of the project's files each test executes (greenloop's affected-tests map).
A pytest session the tests start themselves (pytester in a plugin's suite, in process or as a
subprocess, which inherits these variables) records and selects nothing: its failures are the
test's fixtures, not the verification's.

Each line is one event, flushed at once, so a run killed halfway still leaves what it did (the test it
was in when it died: a ``start`` without a ``report`` for ``teardown``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import linecache
import os
import sys
import time
from typing import Any

import pytest

ENV_DIR = "GREENLOOP_PYTEST_REPORT_DIR"
ENV_SELECT = "GREENLOOP_PYTEST_SELECT"
ENV_FAILFAST = "GREENLOOP_PYTEST_FAILFAST"
ENV_COVERAGE = "GREENLOOP_PYTEST_COVERAGE"
ENV_FIRST = "GREENLOOP_PYTEST_FIRST"
ENV_RERUN = "GREENLOOP_PYTEST_RERUN"
"""A number: the failed tests, when they are no more than that and were quick (``RERUN_SHARE``),
run once more when the session's tests are done, in the same process, their reports not logged; a ``rerun`` event says whether each passed the second time
(greenloop's flaky check at baseline, without a second pytest start-up)."""
ENV_STOP_ABOVE = "GREENLOOP_PYTEST_STOP_ABOVE"
"""A number N: the run ends after the test whose failure is the (N+1)-th (the failures already
rose above the last count: a regression whatever the rest does, and the rest is not run)."""
ENV_OUTER = "GREENLOOP_PYTEST_OUTER"
"""``<pid>:<report dir>`` of the session that records: a pytest session the tests start themselves
(pytester's runs in a plugin's own suite, a subprocess or in process) is not the verification."""
RERUN_SHARE = 0.1
RERUN_FLOOR_S = 0.5
RERUN_CPU_SHARE = 0.05
RERUN_CPU_FLOOR_S = 0.2
"""The re-runs stop once they spent this share of the process's CPU so far (or the floor): what a
test costs beyond its own duration (fixtures, a property test's search, reporting) counts too."""
"""The failed tests are re-run when their first run took at most this share of the session's test
time (plus the floor): the flaky check must not double a run whose failures are what is slow."""
MAX_TEXT = 8000
MAX_LINE = 1000
MAX_FRAMES = 40

_state: dict[str, Any] = {
    "file": None,
    "frames": {},
    "skip_dirs": (),
    "nested": set(),
    "cov": None,
    "cov_files": {},
    "group_of": {},
    "group_last": {},
    "group_failed": set(),
    "session": None,
    "failed_items": {},
    "seconds": {},
    "rerunning": False,
    "failures": 0,
    "our_stop": False,
    "outer": frozenset(),
    "ran_first": None,
    "held": None,
}


def _emit(record: dict[str, Any]) -> None:
    handle = _state["file"]
    if handle is None or _state["nested"]:  # a session inside a test: its events are not ours
        return
    try:
        handle.write(json.dumps(record, default=str) + "\n")
        handle.flush()
    except Exception:
        _state["file"] = None


def _worker_id(config: Any) -> str:
    workerinput = getattr(config, "workerinput", None)
    if isinstance(workerinput, dict):
        return str(workerinput.get("workerid", "worker"))
    return ""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: Any) -> None:
    """A verification runs the whole suite: ``--lf`` or ``--sw`` from the project's addopts or
    PYTEST_ADDOPTS (a developer's quick loop) would run only the last failures and call it green.
    Turned off here, before the cache plugin reads them at configure time."""
    with contextlib.suppress(Exception):
        if os.environ.get(ENV_DIR):
            for option in ("lf", "stepwise", "stepwise_skip"):
                if getattr(config.option, option, False):
                    setattr(config.option, option, False)


def _nested(config: Any, directory: str) -> bool:
    """A session started inside the recording one's tests (pytest-mock's suite runs pytester's
    sessions, whose tests fail on purpose): the recording session's marker is set for this
    report dir, and this is neither that session nor one of its xdist workers."""
    pid, _, where = os.environ.get(ENV_OUTER, "").partition(":")
    if where != directory:
        return False
    return not (_worker_id(config) and pid == str(os.getppid()))


def pytest_configure(config: Any) -> None:
    directory = os.environ.get(ENV_DIR)
    with contextlib.suppress(Exception):
        if directory and _nested(config, directory):
            _state["nested"].add(id(config))
            return
    with contextlib.suppress(Exception):
        if os.environ.get(ENV_FAILFAST):
            config.option.maxfail = 1
    with contextlib.suppress(Exception):
        _collect_only_selected(config)
    with contextlib.suppress(Exception):
        if os.environ.get(ENV_FIRST) and directory and not _worker_id(config):
            config.pluginmanager.register(_FirstGroupFirst(), "greenloop-first-group-first")
    with contextlib.suppress(Exception):
        _start_coverage(config)
    try:
        if not directory:
            return
        os.environ[ENV_OUTER] = f"{os.getpid()}:{directory}"
        worker = _worker_id(config)
        name = f"pytest-{os.getpid()}-{worker or 'main'}.jsonl"
        os.makedirs(directory, exist_ok=True)
        _state["file"] = open(os.path.join(directory, name), "a", encoding="utf-8")  # noqa: SIM115
        _state["skip_dirs"] = _framework_dirs()
        python = ".".join(map(str, sys.version_info[:3]))
        _emit(
            {
                "event": "session",
                "pid": os.getpid(),
                "worker": worker,
                "time": time.time(),
                "cpu": time.process_time(),  # start-up: what every extra pytest run pays again
                "python": python,
            }
        )
    except Exception:
        _state["file"] = None


def _collect_only_selected(config: Any) -> None:
    """The selection's files become pytest's arguments: a one-test run imports one module, not
    the whole suite (which it then deselected). Entries whose file is gone are left to the
    deselection (a renamed test: nothing of it runs, the gate's full run decides)."""
    wanted = [w for w in os.environ.get(ENV_SELECT, "").split("\n") if w]
    if not wanted:
        return
    bases = (str(config.rootpath), str(config.invocation_params.dir))
    files: dict[str, None] = {}
    for entry in wanted:
        name = entry.split("::", 1)[0].split(" ", 1)[0]
        found = [os.path.join(b, name) for b in bases if os.path.exists(os.path.join(b, name))]
        if found:
            files[os.path.normpath(found[0])] = None
    if files:
        config.args[:] = list(files)


def _start_coverage(config: Any) -> None:
    """Per-test coverage for the affected-tests map, in this process (each xdist worker too)."""
    directory = os.environ.get(ENV_COVERAGE)
    if not directory or _state["cov"] is not None:
        return
    import coverage  # the project's own: absent, there is no map (greenloop falls back)

    if coverage.Coverage.current() is not None:
        return  # pytest-cov or ``coverage run`` measures already: two tracers would fight
    root = str(config.rootpath)
    cov = coverage.Coverage(data_file=None, source=[root], branch=False, config_file=False)
    cov.start()
    _state["cov"] = cov
    _state["cov_root"] = root


def _coverage_switch(nodeid: str) -> None:
    cov = _state["cov"]
    if cov is not None and not _state["nested"]:
        with contextlib.suppress(Exception):
            cov.switch_context(nodeid)


def _save_coverage(config: Any) -> None:
    """``<dir>/map-<pid>.json``: test id -> the project files it executed (relative paths)."""
    cov, _state["cov"] = _state["cov"], None
    if cov is None:
        return
    cov.stop()
    data = cov.get_data()
    root = _state["cov_root"]
    tests: dict[str, set[str]] = {}
    for path in data.measured_files():
        rel = os.path.relpath(path, root)
        if rel.startswith(".."):
            continue
        for contexts in (data.contexts_by_lineno(path) or {}).values():
            for context in contexts:
                if context:
                    tests.setdefault(context, set()).add(rel)
    out = os.path.join(os.environ[ENV_COVERAGE], f"map-{os.getpid()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as handle:
        json.dump({"root": root, "tests": {k: sorted(v) for k, v in tests.items()}}, handle)
    os.replace(out + ".tmp", out)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _coverage_switch("")
    with contextlib.suppress(Exception):
        group = _state["group_last"].get(nodeid)
        if group is not None and group in _state["group_failed"]:
            # shouldfail, not shouldstop: the exit status and the closing line of -x, not an interrupt
            _state["session"].shouldfail = "greenloop: a test run first failed; the rest not run"
            _state["our_stop"] = True
        above = os.environ.get(ENV_STOP_ABOVE)
        if above and _state["session"] is not None and _state["failures"] > int(above):
            _state[
                "session"
            ].shouldfail = (
                f"greenloop: more than {int(above)} failures, more than before; the rest not run"
            )
            _state["our_stop"] = True


def _framework_dirs() -> tuple[str, ...]:
    dirs = []
    for name in ("_pytest", "pluggy"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(path) + os.sep)
    return tuple(dirs)


def pytest_unconfigure(config: Any) -> None:
    if id(config) in _state["nested"]:
        _state["nested"].discard(id(config))
        return
    with contextlib.suppress(Exception):
        _save_coverage(config)
    try:
        handle = _state["file"]
        _state["file"] = None
        if handle is not None:
            handle.close()
    except Exception:
        pass


@pytest.hookimpl(trylast=True)  # after any other plugin's reordering (pytest-randomly's)
def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    if _state["held"] is not None and id(config) not in _state["nested"]:  # a lazy run's rest
        kept, _state["held"] = _state["held"], None
        seen = (_state["ran_first"] or frozenset()) | {item.nodeid for item in kept}
        items[:] = kept + [item for item in items if item.nodeid not in seen]
    _deselect(config, items)
    with contextlib.suppress(Exception):
        _order_first(session, config, items)


def _deselect(config: Any, items: list[Any]) -> None:
    try:
        wanted = {w for w in os.environ.get(ENV_SELECT, "").split("\n") if w}
        if not wanted or id(config) in _state["nested"]:
            return
        base = str(config.invocation_params.dir)
        keep = [item for item in items if _selected(item, wanted, base)]
        drop = [item for item in items if not _selected(item, wanted, base)]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    except Exception:
        pass


def _order_first(session: Any, config: Any, items: list[Any]) -> None:
    raw = os.environ.get(ENV_FIRST, "")
    if not raw.strip() or id(config) in _state["nested"]:
        return
    base = str(config.invocation_params.dir)
    taken: set[int] = set()
    first: list[Any] = []
    _state["group_last"] = {}
    for group, block in enumerate(b for b in raw.split("\n\n") if b.strip()):
        rank = {w: i for i, w in enumerate(w for w in block.split("\n") if w)}
        mine = [
            (r, i, item)
            for i, item in enumerate(items)
            if id(item) not in taken and (r := _rank(item, rank, base)) is not None
        ]
        mine.sort(key=lambda t: (t[0], t[1]))  # the group's own order, then pytest's
        for _, _, item in mine:
            taken.add(id(item))
            _state["group_of"][item.nodeid] = group
            first.append(item)
        if mine:
            _state["group_last"][mine[-1][2].nodeid] = group
    _state["session"] = session
    _state["outer"] = _state["outer"] | {item.nodeid for item in items}
    items[:] = first + [item for item in items if id(item) not in taken]


def _rank(item: Any, rank: dict[str, int], base: str) -> int | None:
    """Where the group lists ``item`` (by its id, a parent's, its file's), None: not in it."""
    parts = item.nodeid.split("::")
    keys = ["::".join(parts[:i]) for i in range(len(parts), 0, -1)]
    keys.append(os.path.relpath(str(item.path), base))
    found = [rank[k] for k in keys if k in rank]
    return min(found) if found else None


def _selected(item: Any, wanted: set[str], base: str) -> bool:
    """The node id, one of its parents (file, class), its file relative to the invocation dir,
    or one of its failing subtests (the node id, a space and the subtest's description)."""
    parts = item.nodeid.split("::")
    if any("::".join(parts[:i]) in wanted for i in range(1, len(parts) + 1)):
        return True
    if any(w.startswith(item.nodeid + " ") for w in wanted if " " in w):
        return True
    return os.path.relpath(str(item.path), base) in wanted


def pytest_collection_finish(session: Any) -> None:
    with contextlib.suppress(Exception):
        count = len(session.items) + len(_state["ran_first"] or ())
        _emit({"event": "collected", "count": count, "cpu": time.process_time()})


class _FirstGroupFirst:
    """An ordered run collects the first group's files only, runs that group, and collects the
    rest of the suite only when it passed: a red iteration imports the test modules it needs (on
    dateutil 0.3 s instead of the whole suite's 0.5 s). What pytest prints and counts is a plain
    run's (one ``collected`` line, the whole suite's). A file is collected once: the rest's
    collection skips the first group's files, whose other tests were kept from the first (a module
    collected twice is not the same tests: a generator in a ``parametrize`` is spent the first
    time). Only where that is sure: no xdist, no ``-k``/``-m``/``--deselect``/``--ignore``,
    arguments that are paths, the group's files under them (not arguments themselves) and named as
    pytest collects test files; otherwise the whole suite is collected first."""

    def __init__(self) -> None:
        self.first_files: frozenset[str] = frozenset()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: Any) -> Any:
        try:
            files = _first_group_files(session.config)
        except Exception:
            files = None
        if not files:
            return None
        config = session.config
        rest = list(config.args)
        verbose = config.option.verbose
        config.option.verbose = min(verbose, -1)  # pytest's "collected N items": the whole's, later
        try:
            session.perform_collect(files)
        finally:
            config.option.verbose = verbose
        group = [item for item in session.items if _state["group_of"].get(item.nodeid) == 0]
        # the files' other tests, kept for the rest's collection (which skips these files)
        _state["held"] = [i for i in session.items if _state["group_of"].get(i.nodeid) != 0]
        self.first_files = frozenset(files)
        session.items[:] = group
        session.testscollected = len(group) + 1  # never "[100%]" before the rest has run
        _state["rest_args"] = rest
        return True

    def pytest_ignore_collect(self, collection_path: Any, config: Any) -> Any:
        """The rest's collection: the first group's files are collected already."""
        if (
            _state["ran_first"] is not None
            and os.path.normpath(str(collection_path)) in self.first_files
        ):
            return True
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> Any:
        rest = _state.pop("rest_args", None)
        if rest is None:
            return None
        _collection_errors(session)
        _run(session, session.items)
        _state["ran_first"] = frozenset(item.nodeid for item in session.items)
        failed = session.testsfailed
        items = session.perform_collect(rest)
        session.testscollected = len(items) + len(_state["ran_first"])
        if session.testsfailed > failed and not session.config.option.continue_on_collection_errors:
            n = session.testsfailed - failed
            raise session.Interrupted(f"{n} error{'s' if n != 1 else ''} during collection")
        _run(session, items)
        return True


def _first_group_files(config: Any) -> list[str] | None:
    """The first group's test files, when collecting them alone is sure to collect what a whole
    run would; None: collect everything."""
    option = config.option
    if getattr(option, "numprocesses", None) or getattr(option, "collectonly", False):
        return None
    if getattr(option, "keyword", "") or getattr(option, "markexpr", ""):
        return None
    for name in ("deselect", "ignore", "ignore_glob", "pyargs"):
        if getattr(option, name, None):
            return None
    block = os.environ.get(ENV_FIRST, "").split("\n\n", 1)[0]
    entries = [w for w in block.split("\n") if w]
    base = str(config.invocation_params.dir)
    roots = [os.path.normpath(os.path.join(base, a)) for a in config.args]
    if not entries or not roots or any("::" in a or not os.path.exists(a) for a in roots):
        return None
    patterns = config.getini("python_files")
    files: dict[str, None] = {}
    for entry in entries:
        path = os.path.normpath(os.path.join(base, entry.split("::", 1)[0].split(" ", 1)[0]))
        if not os.path.isfile(path) or not any(
            fnmatch.fnmatch(os.path.basename(path), p) for p in patterns
        ):
            return None
        if path in roots or not any(path.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            return None  # a file argument of its own: pytest would collect it again
        files[path] = None
    return list(files)


def _collection_errors(session: Any) -> None:
    """pytest's own stop on a collection error, before any test runs."""
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        n = session.testsfailed
        raise session.Interrupted(f"{n} error{'s' if n != 1 else ''} during collection")


def _run(session: Any, items: list[Any]) -> None:
    """pytest's own test loop over ``items``."""
    for i, item in enumerate(items):
        after = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=after)
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)


def pytest_collectreport(report: Any) -> None:
    try:
        if report.failed:
            _emit(
                {
                    "event": "collecterror",
                    "nodeid": report.nodeid,
                    "text": str(report.longrepr)[:MAX_TEXT],
                    "crash": _crash(report),
                }
            )
    except Exception:
        pass


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _coverage_switch(nodeid)  # setup, call and teardown: all of the test's
    with contextlib.suppress(Exception):
        _emit({"event": "start", "nodeid": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    try:
        excinfo = call.excinfo
        report = outcome.get_result()
        if excinfo is not None and report.failed and not _state["rerunning"]:
            _state["frames"][(report.nodeid, report.when)] = _exception(excinfo)
        if os.environ.get(ENV_RERUN):
            seconds = _state["seconds"]
            seconds[item.nodeid] = seconds.get(item.nodeid, 0.0) + float(report.duration)
            if report.failed:
                _state["failed_items"].setdefault(item.nodeid, item)
    except Exception:
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: Any) -> Any:
    yield
    with contextlib.suppress(Exception):
        _rerun_failed(session)


def _rerun_failed(session: Any) -> None:
    """Each failed test once more, unlogged (pytest's summary and our reports keep the first
    run): a test that passes now is flaky, and greenloop needs no second process to know it."""
    limit = int(os.environ.get(ENV_RERUN) or 0)
    items = list(_state["failed_items"].values())
    stopped = (session.shouldfail and not _state["our_stop"]) or session.shouldstop
    if not items or len(items) > limit or stopped:
        return  # past the limit greenloop re-runs none of them (a bug failing half the suite)
    if _state["nested"]:
        return
    from _pytest.runner import runtestprotocol

    seconds = _state["seconds"]
    budget = RERUN_SHARE * sum(seconds.values()) + RERUN_FLOOR_S
    if sum(seconds.get(item.nodeid, 0.0) for item in items) > budget:
        return  # failures slower than the suite's own pace (a bug that loops): none re-run
    option = session.config.option
    style = getattr(option, "tbstyle", None)
    # the re-run's reports are never shown: no traceback with source (pytest parses each frame's
    # whole file for it, ~130 ms a failure on dateutil's rrule.py, more than the tests themselves)
    option.tbstyle = "no"
    _state["rerunning"] = True
    started = time.process_time()
    cap = max(RERUN_CPU_SHARE * started, RERUN_CPU_FLOOR_S)
    try:
        for i, item in enumerate(items):
            if i and time.process_time() - started > cap:
                break  # the rest unchecked: real failures to greenloop, as past the limit
            after = items[i + 1] if i + 1 < len(items) else None  # fixtures shared stay set up
            reports = runtestprotocol(item, log=False, nextitem=after)
            passed = any(r.when == "call" and r.passed for r in reports)
            _emit(
                {
                    "event": "rerun",
                    "nodeid": item.nodeid,
                    "passed": passed and not any(r.failed for r in reports),
                }
            )
    finally:
        option.tbstyle = style
        _state["rerunning"] = False


def _exception(excinfo: Any) -> dict[str, Any]:
    """The raw traceback (function names and source lines), framework frames dropped."""
    frames = []
    for entry in excinfo.traceback:
        path = str(entry.path)
        if path.startswith(_state["skip_dirs"]):
            continue
        lineno = entry.lineno + 1
        source = linecache.getline(path, lineno).strip()
        frames.append({"path": path, "lineno": lineno, "function": entry.name, "source": source})
    kind = excinfo.type
    module = getattr(kind, "__module__", "builtins")
    name = kind.__qualname__ if module in ("builtins", "") else f"{module}.{kind.__qualname__}"
    return {
        "type": name,
        "message": _capped(str(excinfo.value)),
        "notes": _notes(excinfo.value),
        "frames": frames[-MAX_FRAMES:],
    }


def _notes(value: BaseException) -> str:
    """``add_note`` text, which ``str()`` leaves out: hypothesis's failing example is one."""
    notes = getattr(value, "__notes__", None)
    if not isinstance(notes, list):
        return ""
    return _capped("\n".join(str(note) for note in notes))


def _capped(text: str) -> str:
    """Each line cut to MAX_LINE, then the whole to MAX_TEXT: a -vv repr of a long list is one line,
    and pytest's explanation (``At index 437 diff: -1 != 437``) comes on the lines after it."""
    lines = [
        line if len(line) <= MAX_LINE else line[:MAX_LINE] + " ..." for line in text.split("\n")
    ]
    return "\n".join(lines)[:MAX_TEXT]


def pytest_runtest_logreport(report: Any) -> None:
    try:
        record: dict[str, Any] = {
            "event": "report",
            "nodeid": _nodeid(report),
            "when": report.when,
            "outcome": report.outcome,
            "wasxfail": getattr(report, "wasxfail", None),
            "subtest": callable(getattr(report, "_sub_test_description", None)),
        }
        if report.failed and report.nodeid in _state["group_of"]:
            _state["group_failed"].add(_state["group_of"][report.nodeid])
        if report.failed and report.nodeid in _state["outer"]:  # not a nested session's
            _state["failures"] += 1
        if report.failed or report.skipped:
            record["crash"] = _crash(report)
        if report.failed:
            record["entries"] = _entries(report)
            record["exception"] = _state["frames"].pop((report.nodeid, report.when), None)
            record["text"] = _longrepr_text(report)
        _emit(record)
    except Exception:
        pass


def _nodeid(report: Any) -> str:
    """A subtest's report (pytest 9, unittest's ``subTest``) carries its test's node id: the
    description pytest prints after it (``(<subtest>)``, ``[msg] (i=3)``) tells them apart."""
    describe = getattr(report, "_sub_test_description", None)
    if callable(describe):
        with contextlib.suppress(Exception):
            return f"{report.nodeid} {describe()}"
    return str(report.nodeid)


def _crash(report: Any) -> dict[str, Any] | None:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return None
    return {"path": crash.path, "lineno": crash.lineno, "message": _capped(str(crash.message))}


def _entries(report: Any) -> list[dict[str, Any]]:
    """reprtraceback entries: what the controller gets from xdist workers (no live exception)."""
    tb = getattr(report.longrepr, "reprtraceback", None)
    entries = []
    for entry in getattr(tb, "reprentries", None) or ():
        loc = getattr(entry, "reprfileloc", None)
        lines = [str(line) for line in getattr(entry, "lines", None) or ()]
        source = next((line[1:].strip() for line in lines if line.startswith(">")), "")
        function = getattr(loc, "message", "") if loc is not None else ""
        entries.append(
            {
                "path": getattr(loc, "path", None),
                "lineno": getattr(loc, "lineno", None),
                "function": function[3:] if function.startswith("in ") else "",
                "source": source,
                "lines": lines[-20:],
            }
        )
    return entries[-MAX_FRAMES:]


def _longrepr_text(report: Any) -> str:
    text = str(report.longrepr)
    return (
        text
        if len(text) <= MAX_TEXT
        else text[: MAX_TEXT // 2] + "\n...\n" + text[-MAX_TEXT // 2 :]
    )


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    with contextlib.suppress(Exception):
        _emit(
            {
                "event": "finish",
                "exitstatus": int(exitstatus),
                "testscollected": getattr(session, "testscollected", None),
                "testsfailed": getattr(session, "testsfailed", None),
                "site_copies": _site_copies(session),
            }
        )


def _site_copies(session: Any) -> dict[str, str]:
    """The repository's own top-level modules (a folder or file of that name where pytest was
    started, or in its ``src``) that this run imported from elsewhere: an installed copy, or
    another checkout (an editable install of the clone next door). name -> its file. Never
    raises: the finish event must be written whatever goes wrong here (an old pytest)."""
    try:
        return _imported_elsewhere(str(session.config.invocation_params.dir))
    except Exception:
        return {}


def _imported_elsewhere(base: str) -> dict[str, str]:
    own = _names(base) | _names(os.path.join(base, "src"))
    inside = os.path.realpath(base) + os.sep
    found = {}
    for name in own.intersection(sys.modules):
        path = getattr(sys.modules[name], "__file__", None) or ""
        installed = "site-packages" in path or "dist-packages" in path
        if path and (installed or not os.path.realpath(path).startswith(inside)):
            found[name] = path
    return found


def _names(folder: str) -> set[str]:
    """Top-level module names a folder provides (``pkg/``, ``mod.py``)."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    return {e[:-3] if e.endswith(".py") else e for e in entries if not e.startswith(".")}
