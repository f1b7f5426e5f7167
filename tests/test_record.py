from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.errors import FatalError
from greenloop.loop import record

MakeRepo = Callable[..., Path]


def test_events_are_appended_as_json_lines_with_a_timestamp(tmp_path: Path) -> None:
    rec = record.RunRecord.create(tmp_path, "20261202-123456-a1b2")
    assert rec.path == tmp_path / "greenloop" / "runs" / "20261202-123456-a1b2"
    rec.event("start", branch="main", stages=("test",))
    rec.event("iteration", n=1, path=Path("x"))
    lines = (rec.path / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["kind"] for e in events] == ["start", "iteration"]
    assert events[0]["stages"] == ["test"]
    assert events[1]["path"] == "x"
    assert all(isinstance(e["t"], float) for e in events)


def test_write_redacts_secrets_and_caps_size(tmp_path: Path) -> None:
    rec = record.RunRecord.create(tmp_path, "r")
    token = "ghp_" + "a" * 36
    path = rec.write("iter-1/verify.log", f"auth failed with {token}\n")
    assert path == rec.path / "iter-1" / "verify.log"
    assert token not in path.read_text()
    assert "[REDACTED]" in path.read_text()
    big = rec.write("iter-1/agent.txt", "head\n" + "x" * (3 << 20) + "\ntail line\n")
    text = big.read_text()
    assert big.stat().st_size <= record.FILE_CAP_BYTES
    assert text.startswith("head\n")
    assert text.endswith("tail line\n")
    assert "bytes omitted" in text


def test_write_refuses_paths_outside_the_run(tmp_path: Path) -> None:
    rec = record.RunRecord.create(tmp_path, "r")
    with pytest.raises(ValueError, match="inside the run"):
        rec.write("../escape.txt", "x")
    with pytest.raises(ValueError, match="inside the run"):
        rec.write("/etc/x", "x")


def test_write_report_replaces_the_whole_file(tmp_path: Path) -> None:
    rec = record.RunRecord.create(tmp_path, "r")
    rec.write_report({"result": "exhausted", "iterations": 1, "history": [{"n": 1}] * 50})
    rec.write_report({"result": "success", "iterations": 2})
    assert json.loads((rec.path / "report.json").read_text()) == {
        "result": "success",
        "iterations": 2,
    }
    assert [p.name for p in rec.path.iterdir()] == ["report.json"]


def test_list_runs_newest_first_with_results(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n"})
    common = record.common_dir_of(root)
    assert common == (root / ".git").resolve()
    old = record.RunRecord.create(common, "20260101-000000-aaaa")
    old.write_report({"result": "exhausted", "iterations": 5})
    new = record.RunRecord.create(common, "20260102-000000-bbbb")
    new.write_report({"result": "success", "iterations": 2})
    record.RunRecord.create(common, "20260103-000000-cccc")  # killed before its first report
    runs = record.list_runs(common)
    assert [(r.run_id, r.result, r.iterations) for r in runs] == [
        ("20260103-000000-cccc", None, None),
        ("20260102-000000-bbbb", "success", 2),
        ("20260101-000000-aaaa", "exhausted", 5),
    ]
    assert runs[1].started == "2026-01-02 00:00:00"
    assert record.load_report(common)["result"] == "success"
    assert record.load_report(common, "20260101")["result"] == "exhausted"
    with pytest.raises(FatalError, match="greenloop runs"):
        record.load_report(common, "2099")


def test_load_report_without_runs_is_a_clear_error(make_repo: MakeRepo) -> None:
    root = make_repo({"a.txt": "a\n"})
    with pytest.raises(FatalError, match="no greenloop run"):
        record.load_report(record.common_dir_of(root))


def test_main_runs_prints_a_table(make_repo: MakeRepo, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"a.txt": "a\n"})
    rec = record.RunRecord.create(record.common_dir_of(root), "20260102-000000-bbbb")
    rec.write_report({"result": "stalled", "iterations": 3})
    assert record.main_runs(argparse.Namespace(repo=str(root))) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["RUN", "RESULT", "ITERS", "STARTED"]
    assert out[1].split()[:3] == ["20260102-000000-bbbb", "stalled", "3"]


CHILD = """
import sys, time
from pathlib import Path
from greenloop.loop.record import RunRecord
rec = RunRecord.create(Path(sys.argv[1]), "killed")
for i in range(20):
    rec.event("step", i=i, text="x" * 1000)
print("ready", flush=True)
time.sleep(60)
"""


def test_events_survive_kill_9(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    path = record.runs_dir(tmp_path) / "killed" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["i"] for e in events] == list(range(20))
