"""``greenloop bench`` on C-like sources: the token-level mutator on real JavaScript, Go and Rust
files (every candidate checked by the language's own parser or compiler), never inside strings,
comments, template literals, regex, char literals or raw strings; a JS project end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from batch_fixtures import ORACLE, commit_files, git
from greenloop.bench import seed, sources
from greenloop.bench.mutate import Mutant
from greenloop.bench.run import run_bench
from greenloop.config import Config
from limits import hang

LIB_JS = """\
'use strict';
// clamp keeps a value within [low, high]: a < b in this comment is not code
const PATTERN = /a<b|c>=d/g;
function clamp(value, low, high) {
  if (value < low) return low;
  if (value > high) return high;
  return value;
}
function total(items) {
  let result = 0;
  for (const item of items) result = result + item;
  return result;
}
function label(n) {
  return `${n < 0 ? "negative" : "ok"} <= "quoted"`;
}
function isAdult(age) {
  return age >= 18 && age !== -1;
}
/* a block comment: x == y || true */
const ALLOWED = ['a < b', "x == y", Array.isArray([1]) ? 1 : 0];
module.exports = { clamp, total, label, isAdult, PATTERN, ALLOWED, enabled: true };
"""
TEST_JS = """\
const test = require('node:test');
const assert = require('node:assert');
const lib = require('./lib.js');
const eighteen = require('helper');  // installed by the bench's --setup, never committed
test('clamp', () => { assert.strictEqual(lib.clamp(5, 0, 3), 3); assert.strictEqual(lib.clamp(0, 0, 3), 0); assert.strictEqual(lib.clamp(3, 0, 3), 3); });
test('total', () => { assert.strictEqual(lib.total([1, 2, 3]), 6); });
test('isAdult', () => { assert.strictEqual(lib.isAdult(eighteen), true); assert.strictEqual(lib.isAdult(17), false); });
"""
LIB_GO = """\
package clamp

import "strings"

// Clamp keeps v within [lo, hi]; a < b here is a comment.
func Clamp(v, lo, hi int) int {
\tif v < lo {
\t\treturn lo
\t}
\treturn min(v, hi)
}

func min(a, b int) int {
\tif a > b {
\t\treturn b
\t}
\treturn a
}

func Sum(ch <-chan int) int {
\ttotal := 0
\tfor x := range ch {
\t\ttotal = total + x
\t}
\treturn total
}

func Label(s string) string {
\traw := `a < b && c`
\tif strings.Contains(s, "<=") || s == raw {
\t\treturn "odd"
\t}
\tr := '<'
\t_ = r
\treturn "fine"
}
"""
LIB_RS = """\
//! a < b in a doc comment
use std::collections::HashMap;

pub fn clamp<T: PartialOrd + Copy>(v: T, lo: T, hi: T) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

pub fn longest<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.len() >= b.len() { a } else { b }
}

pub fn describe(c: char) -> &'static str {
    let raw = r#"a < b "quoted" && c"#;
    if c == '<' || raw.is_empty() {
        return "angle";
    }
    let f = move || 1 + 2;
    let _ = f();
    "other"
}

pub fn counts(words: &[&str]) -> HashMap<String, usize> {
    let mut m: HashMap<String, usize> = HashMap::new();
    for w in words {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    #[test]
    fn clamps() {
        assert!(super::clamp(5, 0, 3) == 3 && true);
    }
}
"""


def edits(mutants: list[Mutant]) -> set[tuple[int, str, str]]:
    return {(m.line, m.old, m.new) for m in mutants}


def test_bench_clike_mutates_js_code_only_and_every_mutant_parses(tmp_path: Path) -> None:
    found = sources.mutants_of("lib.js", LIB_JS)
    assert edits(found) == {
        (5, "<", "<="), (6, ">", ">="), (10, "0", "1"), (11, "+", "-"), (18, ">=", ">"),
        (18, "18", "19"), (18, "18", "17"), (18, "&&", "||"), (18, "!==", "==="), (18, "1", "2"),
        (18, "1", "0"), (21, "1", "2"), (21, "1", "0"), (21, "0", "1"), (22, "true", "false"),
    }  # fmt: skip
    # not in the comment (2), the regex (3), the template literal (15), the block comment (20),
    # the strings (21), nor the unary minus of -1 (18)
    variants = [m.apply(LIB_JS) for m in found]
    script = (
        "const vm = require('vm'); const all = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "let bad = 0; for (const s of all) { try { new vm.Script(s); } catch (e) { bad++; } }"
        "console.log(bad);"
    )
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(variants), capture_output=True, text=True,
        timeout=hang(60), check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "0"


def test_bench_clike_mutates_go_code_only_and_every_mutant_parses(tmp_path: Path) -> None:
    found = sources.mutants_of("clamp.go", LIB_GO)
    assert edits(found) == {
        (7, "<", "<="), (14, ">", ">="), (21, "0", "1"), (23, "+", "-"), (30, "||", "&&"),
        (30, "==", "!="),
    }  # fmt: skip
    # not <-chan (20), the raw string (29), the string "<=" (30), the rune '<' (33), the comment
    for n, m in enumerate(found):
        (tmp_path / f"v{n}.go").write_text(m.apply(LIB_GO))
    done = subprocess.run(
        ["gofmt", "-l", "-e", str(tmp_path)], capture_output=True, text=True, timeout=hang(60),
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")


def test_bench_clike_mutates_rust_code_only_and_every_mutant_compiles(tmp_path: Path) -> None:
    found = sources.mutants_of("src/lib.rs", LIB_RS)
    assert edits(found) == {
        (5, "<", "<="), (7, ">", ">="), (15, ">=", ">"), (20, "==", "!="), (20, "||", "&&"),
        (23, "+", "-"), (23, "1", "2"), (23, "1", "0"), (23, "2", "3"), (23, "2", "1"),
        (31, "0", "1"), (31, "1", "2"), (31, "1", "0"),
    }  # fmt: skip
    # not the doc comment, T: PartialOrd + Copy, the lifetimes, the raw string, the char '<',
    # move ||, += nor the #[cfg(test)] module below line 36
    lib = "".join(f'#[path = "v{n}.rs"] pub mod v{n};\n' for n in range(len(found)))
    for n, m in enumerate(found):
        (tmp_path / f"v{n}.rs").write_text(m.apply(LIB_RS))
    (tmp_path / "lib.rs").write_text(lib)
    done = subprocess.run(
        ["rustc", "--edition", "2021", "--crate-type", "lib", "--emit=metadata",
         "--cap-lints", "allow", "-o", str(tmp_path / "out.rmeta"), str(tmp_path / "lib.rs")],
        capture_output=True, text=True, timeout=hang(300), check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")


def test_bench_clike_sources_leave_tests_configs_and_vendored_code_alone() -> None:
    files = [
        "src/index.ts", "lib/a.js", "lib/a.test.js", "src/b.spec.ts", "__tests__/c.js",
        "test/d.js", "clamp_test.go", "clamp.go", "tests/it.rs", "src/lib.rs", "build.rs",
        "node_modules/x/index.js", "vendor/y/y.go", "dist/bundle.js", "types.d.ts",
        "eslint.config.js", "jest.config.ts", "vite.config.mjs", "examples/demo.rs",
        "scripts/check.js", "README.md",
    ]  # fmt: skip
    assert sources.source_files(files, named={"scripts/check.js"}) == [
        "src/index.ts",
        "lib/a.js",
        "clamp.go",
        "src/lib.rs",
    ]


SETUP = "mkdir -p node_modules/helper && echo 'module.exports = 18;' > node_modules/helper/index.js"


def commit_files_of(repo: Path) -> list[str]:
    return sorted(git(repo, "ls-files").split())


def make_js_project(tmp: Path) -> Path:
    package = '{"name": "fixture", "scripts": {"test": "node --test"}}\n'
    files = {
        "lib.js": LIB_JS, "lib.test.js": TEST_JS, "package.json": package,
        ".gitignore": "node_modules/\n",
    }  # fmt: skip
    return commit_files(tmp / "jsproject", files)


def test_bench_seeds_js_bugs_the_tests_catch_and_the_oracle_fixes_them(tmp_path: Path) -> None:
    root = make_js_project(tmp_path)
    oracle = tmp_path / "oracle.py"
    oracle.write_text(ORACLE)
    out = tmp_path / "bench"
    agents = [f"{sys.executable} {oracle} {out / 'answers'}"]
    data = run_bench(
        root, agents=agents, out=out, mutants=3, seed_value=2, command=("node", "--test"),
        overrides={"max_iters": 1}, setup=SETUP,
    )  # fmt: skip
    assert {m["path"] for m in data["mutants"]} == {"lib.js"}  # never lib.test.js
    assert len(data["mutants"]) == 3
    assert (data["agents"][0]["solved"], data["agents"][0]["total"]) == (3, 3)  # setup ran
    for mutant in data["mutants"]:
        assert commit_files_of(out / "mutants" / mutant["id"]) == sorted(
            [".gitignore", "lib.js", "lib.test.js", "package.json"]
        )  # what the setup installed in the clean tree is not in any task's repository
    again = seed.select(
        out / "clean", seed.candidate_mutants(out / "clean", ["lib.js", "lib.test.js"], []),
        n=3, seed=2, command=("node", "--test"), config=Config(), max_failing=5,
    )  # fmt: skip
    assert [m.id for m in again.kept] == [m["id"] for m in data["mutants"]]
