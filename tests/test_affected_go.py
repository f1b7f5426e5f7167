"""Go's affected tests (issue 29): ``go list -test``'s graph picks the packages whose tests reach
the edit; ``go test`` runs those by import path; the loop catches a break there before the gate."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.detect.stages import Stage
from greenloop.loop.loop import run_loop
from greenloop.verify.affected_go import related
from greenloop.verify.cascade import run_stage
from limits import hang

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="go not installed")

COMMAND = "go test ./..."
STAGE = Stage(name="test", command=COMMAND, why="")


def _test(pkg: str, body: str, imports: str = "") -> str:
    return f'package {pkg}\n\nimport (\n\t"testing"\n{imports})\n\nfunc Test{pkg.title()}(t *testing.T) {{\n{body}\n}}\n'


SHOP = {
    "go.mod": "module example.com/shop\n\ngo 1.19\n",
    "price/price.go": "package price\n\nfunc Total(a, b int) int { return a + b }\n",
    "price/price_test.go": _test("price", "\tif Total(1, 2) != 3 {\n\t\tt.Fatal(Total(1, 2))\n\t}"),
    "cart/cart.go": 'package cart\n\nimport "example.com/shop/price"\n\n'
    "func Sum(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts = price.Total(s, x)\n"
    "\t}\n\treturn s\n}\n",
    "cart/cart_test.go": _test(
        "cart", "\tif Sum([]int{1, 2}) != 3 {\n\t\tt.Fatal(Sum([]int{1, 2}))\n\t}"
    ),
    # imports price only in its external test package: still reached
    "audit/audit.go": 'package audit\n\nfunc Name() string { return "audit" }\n',
    "audit/audit_test.go": 'package audit_test\n\nimport (\n\t"testing"\n\n'
    '\t"example.com/shop/price"\n)\n\nfunc TestAudit(t *testing.T) {\n'
    "\tif price.Total(2, 2) != 4 {\n\t\tt.Fatal(price.Total(2, 2))\n\t}\n}\n",
    "label/label.go": 'package label\n\nfunc Text() string { return "label" }\n',
    "label/label_test.go": _test("label", '\tif Text() != "label" {\n\t\tt.Fatal(Text())\n\t}'),
    "label/testdata/names.txt": "label\n",
    "stock/stock.go": "package stock\n\nfunc Count() int { return 1 }\n",
    "stock/stock_test.go": _test("stock", "\tif Count() != 1 {\n\t\tt.Fatal(Count())\n\t}"),
}


def test_an_edit_runs_the_packages_whose_tests_reach_it_and_only_those(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(SHOP)
    (root / "price/price.go").write_text(
        "package price\n\nfunc Total(a, b int) int { return a - b }\n"
    )
    choice = related(STAGE, ["price/price.go"], root)
    assert choice.subset is not None, choice.reason
    assert choice.subset.ids == (
        "example.com/shop/audit",  # through its external test package only
        "example.com/shop/cart",
        "example.com/shop/price",
    )
    assert choice.reason == "3 packages of 5 whose tests reach 1 changed package (go list)"
    ran = run_stage(root, choice.subset.stage, timeout=hang(300))
    assert ran.verdict.value == "failed"
    lines = [line.split("\t") for line in ran.result.stdout.splitlines()]
    packages = {words[1] for words in lines if words[0] in ("ok  ", "FAIL") and len(words) > 1}
    assert "example.com/shop/label" not in ran.result.merged  # not even built
    assert {"example.com/shop/cart", "example.com/shop/price"} <= packages


def test_a_testdata_file_belongs_to_the_package_that_reads_it(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(SHOP)
    choice = related(STAGE, ["label/testdata/names.txt"], root)
    assert choice.subset is not None
    assert choice.subset.ids == ("example.com/shop/label",)


@pytest.mark.parametrize(
    ("command", "changed", "reason"),
    [
        (COMMAND, ["go.mod"], "none: the module's requirements changed, the gate decides"),
        (COMMAND, ["README.md"], "none: no Go package changed, the gate decides"),
        (
            "go test -bench . ./...",
            ["price/price.go"],
            "none: not a `go test` command we can narrow",
        ),
        ("go vet ./...", ["price/price.go"], "none: not a `go test` command we can narrow"),
    ],
)
def test_what_cannot_be_narrowed_is_left_to_the_gate(
    make_repo: Callable[..., Path], command: str, changed: list[str], reason: str
) -> None:
    root = make_repo(SHOP)
    choice = related(Stage(name="test", command=command, why=""), changed, root)
    assert (choice.subset, choice.reason) == (None, reason)


def test_an_edit_every_tested_package_reaches_runs_nothing_before_the_gate(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo(SHOP)
    stage = Stage(name="test", command="go test ./price/... ./cart/...", why="")
    choice = related(stage, ["price/price.go"], root)
    assert choice.subset is None
    assert choice.reason.startswith("all: every package's tests reach the edit (2 packages of 2")
    assert choice.reason.endswith("the gate runs them")


def test_a_broken_module_gives_no_selection_and_says_why(make_repo: Callable[..., Path]) -> None:
    root = make_repo(
        {**SHOP, "go.mod": "module example.com/shop\n\nrequire nowhere.example/x v1.0.0\n"}
    )
    choice = related(STAGE, ["price/price.go"], root)
    assert choice.subset is None
    assert choice.reason.startswith("none: go list failed (")


def test_the_loop_catches_a_break_in_a_dependent_package_before_the_gate(
    make_repo: Callable[..., Path],
) -> None:
    """The label test fails at baseline; the edit fixes it and breaks price: the failing test
    passes alone, the affected step (price and the packages whose tests import it, not label)
    fails, and that is the iteration's verdict; the next edit fixes label alone: green."""
    broken = {**SHOP, "label/label.go": 'package label\n\nfunc Text() string { return "lable" }\n'}
    root = make_repo(broken)
    fix_label = {"replace": "label/label.go", "old": '"lable"', "new": '"label"'}
    break_price = {"replace": "price/price.go", "old": "a + b", "new": "a + b + 1"}
    config = Config(stages=(StageSpec(name="test", run=COMMAND),), timeout=300.0)
    # the worse edit is rolled back (decided on a full run); the next one only fixes label
    steps = [[fix_label, break_price], [fix_label]]
    result = run_loop(root, scripted(steps), config=replace(config, on_regression="continue"))
    assert result.result.value == "success", result.reason
    first = result.history[1]
    assert first.verdict == "failed"
    events = [json.loads(line) for line in (Path(result.record_dir) / "events.jsonl").open()]
    hit = next(e for e in events if e["kind"] == "affected")
    assert "example.com/shop/stock" not in hit["tests"]
    assert hit["tests"] == [f"example.com/shop/{p}" for p in ("audit", "cart", "label", "price")]
    assert hit["verdict"] == "failed"
    assert hit["reason"] == "4 packages of 5 whose tests reach 2 changed packages (go list)"
    assert not result.history[-1].subset  # success only on the full run


def test_the_narrowed_command_is_one_go_would_run(make_repo: Callable[..., Path]) -> None:
    root = make_repo(SHOP)
    stage = Stage(name="test", command=("go", "test", "-count=1", "-v", "./..."), why="")
    choice = related(stage, ["cart/cart.go"], root)
    assert choice.subset is not None
    argv = choice.subset.stage.command
    assert argv == ("go", "test", "-count=1", "-v", "example.com/shop/cart")
    done = subprocess.run(
        argv, cwd=root, capture_output=True, text=True, timeout=hang(300), check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--- PASS: TestCart" in done.stdout
