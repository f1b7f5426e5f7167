"""SWE-bench instances in (issue 28): five instances in SWE-bench's format, built from real bug-fix
commits of more-itertools (tests/resources/swebench/README.md), run end to end through
``greenloop batch --format swe-bench``: the fix's own source change solves 5/5, a no-op 0/5."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from greenloop.batch.swebench import build_start, find_mirror, load_instances
from greenloop.errors import FatalError
from limits import hang

RESOURCES = Path(__file__).parent / "resources" / "swebench"
INSTANCES = RESOURCES / "more-itertools.jsonl"
PACK = RESOURCES / "more-itertools.git.tar.gz"
REPO = "more-itertools/more-itertools"
TIMEOUT_S = hang(1800)  # a hang guard: at load 15 on 2 cores the 5 instances take ~10 min
# The instance's own `patch` field: what SWE-bench calls the gold patch.
FIXER = """\
import json, os, subprocess, sys
wanted = os.path.basename(os.getcwd())  # the batch's workspace is DIR/work/<instance_id>
for line in open(sys.argv[1], encoding="utf-8"):
    item = json.loads(line)
    if item["instance_id"] == wanted:
        subprocess.run(["git", "apply"], input=item["patch"], text=True, check=True)
        print("Summary: the fix's source change, as the instance's patch has it")
        break
else:
    sys.exit(f"no instance {wanted}")
"""


def _mirrors(root: Path) -> Path:
    """The committed shallow mirror, unpacked as DIR/more-itertools__more-itertools.git."""
    root.mkdir()
    with tarfile.open(PACK) as tar:
        tar.extractall(root, filter="data")
    return root


def _greenloop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # the verifier's `python` is this interpreter (it has pytest; more-itertools needs nothing else)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this venv's hypothesis, anyio … are not theirs
    return subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        cwd=cwd, env=env, check=False, capture_output=True, text=True, timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _rows(out: Path) -> dict[str, dict[str, object]]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {str(r["id"]): r for r in map(json.loads, lines)}


def _instances() -> list[dict[str, object]]:
    return [json.loads(line) for line in INSTANCES.read_text().splitlines()]


def test_the_fix_of_each_real_instance_solves_5_of_5(tmp_path: Path) -> None:
    mirrors = _mirrors(tmp_path / "mirrors")
    fixer = tmp_path / "fix.py"
    fixer.write_text(FIXER)
    out = tmp_path / "out"

    done = _greenloop(
        "batch", "--format", "swe-bench", str(INSTANCES), "--repos", str(mirrors),
        "--out", str(out), "--workers", "2", "--agent", f"python {fixer} {INSTANCES}",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "greenloop batch: 5/5 solved (100 %), declared acceptance met in 5/5, 5 finished"
    ) in done.stdout
    rows = _rows(out)
    assert sorted(rows) == sorted(str(i["instance_id"]) for i in _instances())
    assert {r["result"] for r in rows.values()} == {"success"}
    assert {r["accepted"] for r in rows.values()} == {True}  # FAIL_TO_PASS and PASS_TO_PASS ran
    declared = {str(i["instance_id"]): i for i in _instances()}
    for task_id, row in rows.items():
        f2p = len(json.loads(str(declared[task_id]["FAIL_TO_PASS"])))
        assert f"{f2p}/{f2p} fail-to-pass passed" in str(row["acceptance"]), row["acceptance"]
    assert {r["iterations"] for r in rows.values()} == {1}
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["solved"], summary["valid"], summary["invalid"]) == (5, 5, 0)

    again = _greenloop(
        "batch", "--format", "swe-bench", str(INSTANCES), "--repos", str(mirrors),
        "--out", str(out), "--workers", "2", "--agent", f"python {fixer} {INSTANCES}",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "resuming: 5 finished (skipped), 0 to run again" in again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 5


def test_a_no_op_agent_solves_0_of_5(tmp_path: Path) -> None:
    mirrors = _mirrors(tmp_path / "mirrors")
    out = tmp_path / "out"

    done = _greenloop(
        "batch", "--format", "swe-bench", str(INSTANCES), "--repos", str(mirrors),
        "--out", str(out), "--workers", "2", "--agent", "true", "--max-iters", "1",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "greenloop batch: 0/5 solved (0 %), declared acceptance met in 0/5, 5 finished"
    ) in done.stdout
    rows = _rows(out)
    assert len(rows) == 5
    assert all(r["result"] not in ("success", "invalid") for r in rows.values()), rows
    declared = {str(i["instance_id"]): json.loads(str(i["FAIL_TO_PASS"])) for i in _instances()}
    for task_id, row in rows.items():  # the baseline failed on the instance's FAIL_TO_PASS tests
        report = json.loads((Path(str(row["record"])) / "report.json").read_text())
        baseline = report["history"][0]
        assert baseline["verdict"] == "failed", baseline
        assert baseline["failures"] == len(declared[task_id]), (task_id, baseline)


def test_each_start_is_the_base_commit_plus_the_test_patch_with_no_later_commit_in_view(
    tmp_path: Path,
) -> None:
    mirror = find_mirror(_mirrors(tmp_path / "mirrors"), REPO)
    assert mirror is not None
    for item in load_instances(INSTANCES):
        start = tmp_path / "starts" / item.instance_id

        assert build_start(item, mirror, start, tmp_path / "aside") == ""

        def git(*args: str, start: Path = start) -> str:
            done = subprocess.run(
                ["git", *args], cwd=start, capture_output=True, text=True, check=False
            )
            return done.stdout.strip()

        assert git("rev-parse", "HEAD^") == item.base_commit
        assert git("for-each-ref", "--format=%(refname)") == "refs/heads/swebench"
        assert git("status", "--porcelain") == ""
        touched = set(git("diff", "--name-only", "HEAD^", "HEAD").split())
        assert touched == set(item.test_files) == {"tests/test_more.py"}
        assert git("remote") == ""
        head = git("rev-parse", "HEAD")
        assert build_start(item, mirror, start, tmp_path / "aside") == ""  # a resumed batch
        assert git("rev-parse", "HEAD") == head  # the same start commit, kept
    assert not (tmp_path / "aside").exists()


def test_a_test_patch_that_does_not_apply_makes_that_instance_invalid(tmp_path: Path) -> None:
    mirrors = _mirrors(tmp_path / "mirrors")
    first = _instances()[4]
    patch = str(first["test_patch"])
    context = next(ln for ln in patch.splitlines() if ln.startswith(" ") and ln.strip())
    first["test_patch"] = patch.replace(context, context + "  # not in the file", 1)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(first) + "\n")
    out = tmp_path / "out"

    done = _greenloop(
        "batch", "--format", "swe-bench", str(instances), "--repos", str(mirrors),
        "--out", str(out), "--agent", "true", cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    (row,) = _rows(out).values()
    assert row["result"] == "invalid"
    reason = str(row["reason"])
    assert reason.startswith("test_patch does not apply at base_commit aa8c48008605: error:")
    assert "tests/test_more.py" in reason
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["total"], summary["invalid"], summary["valid"]) == (1, 1, 0)
    assert not (out / "work").exists()  # nothing was run for it

    again = _greenloop(
        "batch", "--format", "swe-bench", str(instances), "--repos", str(mirrors),
        "--out", str(out), "--agent", "true", cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 1
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # not recorded twice


def test_mirrors_are_found_by_owner__name_owner_slash_name_or_name_bare_or_not(
    tmp_path: Path,
) -> None:
    bare = _mirrors(tmp_path / "packed") / "more-itertools__more-itertools.git"
    layouts = {
        "a": "more-itertools__more-itertools",
        "b": "more-itertools/more-itertools.git",
        "c": "more-itertools",
    }
    for root, rel in layouts.items():
        dest = tmp_path / root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        bare_flag = ["--bare"] if rel.endswith(".git") else []
        subprocess.run(
            ["git", "clone", "-q", *bare_flag, str(bare), str(dest)],
            check=True,
            capture_output=True,
        )
        assert find_mirror(tmp_path / root, REPO) == dest
    assert find_mirror(tmp_path / "packed", REPO) == bare
    (tmp_path / "plain" / "more-itertools").mkdir(parents=True)
    assert find_mirror(tmp_path / "plain", REPO) is None


def test_the_lists_may_be_json_strings_or_lists_and_every_fault_is_named_with_its_line(
    tmp_path: Path,
) -> None:
    good = _instances()[0]
    as_lists = {
        **good,
        "instance_id": "x__y-1",
        "FAIL_TO_PASS": json.loads(str(good["FAIL_TO_PASS"])),
        "PASS_TO_PASS": [],
    }
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(as_lists) + "\n")
    one, two = load_instances(path)
    assert one.fail_to_pass == two.fail_to_pass == tuple(json.loads(str(good["FAIL_TO_PASS"])))
    assert two.pass_to_pass == ()

    no_base = {k: v for k, v in good.items() if k != "base_commit"}
    bad_list = {**good, "instance_id": "z__z-2", "FAIL_TO_PASS": "[tests/x.py::t"}
    bad_repo = {**good, "instance_id": "z__z-3", "repo": "just-a-name"}
    path.write_text("\n".join(json.dumps(r) for r in (no_base, bad_list, bad_repo, good, good)))
    with pytest.raises(FatalError) as caught:
        load_instances(path)
    message = str(caught.value)
    for expected in (
        "ok.jsonl:1: 'base_commit' is required",
        "ok.jsonl:2: 'FAIL_TO_PASS': expected a list of test ids or a JSON string of one",
        "ok.jsonl:3: 'repo': expected owner/name, got 'just-a-name'",
        f"ok.jsonl:5: instance_id {good['instance_id']!r} already used on line 4",
    ):
        assert expected in message, message


def test_repos_and_the_swe_bench_format_need_each_other_and_a_missing_mirror_is_named(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    alone = _greenloop(
        "batch", str(INSTANCES), "--repos", str(tmp_path), "--out", str(out), cwd=tmp_path
    )
    unmirrored = _greenloop(
        "batch", "--format", "swe-bench", str(INSTANCES), "--out", str(out), cwd=tmp_path
    )
    missing = _greenloop(
        "batch", "--format", "swe-bench", str(INSTANCES), "--repos", str(tmp_path),
        "--out", str(out), "--agent", "true", cwd=tmp_path,
    )  # fmt: skip

    assert alone.returncode == 2
    assert "--repos DIR is for SWE-bench instances: add --format swe-bench" in alone.stderr
    assert unmirrored.returncode == 2
    assert "--format swe-bench needs --repos DIR" in unmirrored.stderr
    assert missing.returncode == 2
    assert "5 problem(s)" in missing.stderr
    assert (
        "more-itertools.jsonl:1: instance 'more-itertools__more-itertools-d992be0': no mirror of "
        f"more-itertools/more-itertools in {tmp_path}"
    ) in missing.stderr
    assert not (out / "results.jsonl").exists()
