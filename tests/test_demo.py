"""``greenloop demo`` end to end: the real loop, the real built-in agent, a scripted model server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from limits import hang

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
PROJECT_FILES = {
    "greenloop/demo/project/pyproject.toml",
    "greenloop/demo/project/src/shop/__init__.py",
    "greenloop/demo/project/src/shop/cart.py",
    "greenloop/demo/project/src/shop/pricing.py",
    "greenloop/demo/project/tests/test_cart.py",
    "greenloop/demo/project/tests/test_pricing.py",
}


def demo(tmp_path: Path, *args: str, pythonpath: Path | None = None) -> tuple[int, str, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_"))}
    env["TMPDIR"] = str(tmp_path)  # the demo's temporary repository lands here
    # the demo must ignore the user's endpoint and key: this one is unreachable and fake
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
    env["OPENAI_API_KEY"] = "sk-not-a-real-key"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    start = time.monotonic()
    proc = subprocess.run(
        [PY, "-m", "greenloop", "demo", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(1800),  # a hang, not a busy machine: the demo's own clocks end it well before
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


def git_log(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%s"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout
    return out.splitlines()


def leftover_repos(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("greenloop-demo-*"))


def test_demo_fixes_both_bugs_in_two_commits_and_keeps_the_repo(tmp_path: Path) -> None:
    code, out, err, _took = demo(tmp_path, "--keep")  # how fast: bench/demo.py, not a test
    assert code == 0, out + err
    assert out.count("SCRIPTED") >= 2  # said at the start and at the end
    assert "127.0.0.1" in out
    assert "No network, no API key" in out
    assert "greenloop run --agent openai:gpt-4o-mini" in out
    assert "--base-url http://localhost:11434/v1" in out
    assert "claude | aider | codex" in out
    # the live digests: iteration 1 sees all four failures, iteration 2 only the cart's
    first, second = out.split("── iteration 1")[1].split("── iteration 2")
    assert "test_ten_percent_off" in first
    assert "test_adding_the_same_item_twice_adds_up_the_quantity" in first
    assert "test_ten_percent_off" not in second.split("model:")[0]
    assert re.search(r"\b1 failed, [37] passed", second)  # 3: only the previously failing re-ran
    assert "3 of 4 previously failing now pass" in second
    # the model's narration comes before the tool calls it announces
    model = [line for line in first.splitlines() if line.startswith("  model: ")]
    assert model[0].startswith("  model: Three of the four failures are wrong discounts"), model
    assert model[1].startswith("  model: read_file"), model
    assert "failing: 4 → 1 → green" in out
    assert "SUCCESS" in out
    kept = Path(re.search(r"The demo repository is kept: (\S+)", out)[1])  # type: ignore[index]
    assert kept.parent.parent == tmp_path
    subjects = git_log(kept)
    assert [s.split(":")[0] for s in subjects[:2]] == ["agent[iter 2/5]", "agent[iter 1/5]"]
    assert "Cart.add" in subjects[0]
    assert len(subjects) == 3
    tests = subprocess.run(
        [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=kept,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout
    assert "8 passed" in tests.stdout
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=kept, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


def test_demo_runs_from_the_built_wheel_and_prints_json_then_removes_its_repo(
    tmp_path: Path,
) -> None:
    wheel_dir, site = tmp_path / "dist", tmp_path / "site"
    subprocess.run(
        [PY, "-m", "hatchling", "build", "-t", "wheel", "-d", str(wheel_dir)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("greenloop-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert set(zf.namelist()) >= PROJECT_FILES
        zf.extractall(site)
    code, out, err, _took = demo(tmp_path, "--format", "json", pythonpath=site)
    assert code == 0, out + err
    data = json.loads(out)  # stdout holds only the JSON; the narration went to stderr
    assert data["result"] == "success"
    assert data["exit_code"] == 0
    assert [h["failures"] for h in data["history"]] == [4, 1, 0]
    assert data["demo"]["scripted"] is True
    assert data["demo"]["unanswered_replies"] == 0  # the script matched what the loop asked
    assert data["demo"]["repo"] is None
    assert sum("agent[iter" in line for line in data["demo"]["commits"]) == 2
    assert "SCRIPTED" in err
    where = subprocess.run(
        [PY, "-c", "import greenloop.demo.run as d; print(d.PROJECT)"],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where) == site / "greenloop" / "demo" / "project"  # the wheel's copy ran
    assert leftover_repos(tmp_path) == []


def test_demo_without_pytest_says_so_and_exits_2(tmp_path: Path) -> None:
    code = "import sys; sys.modules['pytest'] = None; from greenloop.cli.entry import main; sys.exit(main(['demo']))"
    proc = subprocess.run(
        [PY, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "pytest" in proc.stderr
    assert "not installed" in proc.stderr
    assert proc.stdout == ""


def test_demo_names_every_missing_dependency_in_one_message(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pytest'] = sys.modules['openai'] = None; "
        "from greenloop.cli.entry import main; sys.exit(main(['demo']))"
    )
    proc = subprocess.run(
        [PY, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "pytest" in proc.stderr
    assert "openai" in proc.stderr
    assert "pip install 'greenloop[demo]'" in proc.stderr
    assert proc.stderr.count("\n") == 1  # one message


def test_demo_without_the_openai_sdk_names_the_llm_extra_and_exits_2(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['openai'] = None; "
        "from greenloop.cli.entry import main; sys.exit(main(['demo']))"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [PY, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "pip install 'greenloop[llm]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert leftover_repos(tmp_path) == []
