"""mocha, uvu, ava and tap (node-tap) cases: one project, the same two failures in each
runner's words."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# mocha, uvu, ava, tap (node-tap): one project, the same two failures in each runner's words
# --------------------------------------------------------------------------
CALC_JS = D("""
    function add(a, b) {
      return a - b;
    }

    function first(items) {
      return items[0].value;
    }

    module.exports = { add, first };
    """)
JS_PKG = '{\n  "name": "jscalc",\n  "private": true\n}\n'
fs = {
    "package.json": JS_PKG,
    "src/calc.js": CALC_JS,
    "test/calc.test.js": D("""
        const assert = require("node:assert");
        const { add, first } = require("../src/calc");

        describe("calc", () => {
          it("adds two numbers", () => {
            assert.strictEqual(add(2, 2), 4);
          });

          it("takes the first value", () => {
            assert.strictEqual(first([]), undefined);
          });

          it("adds zero", () => {
            assert.strictEqual(add(0, 0), 0);
          });

          it.skip("multiplies", () => {});
        });
        """),
}
mocha_facts = facts(["calc adds two numbers", "calc takes the first value"], "AssertionError",
                    "Expected values to be strictly equal", at(fs, "test/calc.test.js", "add(2, 2), 4"), 2,
                    counts={"passed": 1, "failed": 2, "skipped": 1})
add("mocha", "spec", fs, ["mocha"], mocha_facts, link_node_modules=True)
add("mocha", "json", fs, ["mocha", "--reporter", "json"],
    dict(mocha_facts, message="Expected values to be strictly equal"), link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": CALC_JS.replace("a - b", "a + b").replace(
    "items[0].value", "items.length ? items[0].value : undefined")})
add("mocha", "green", fs_green, ["mocha"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

UVU_TEST = D("""
    const { test } = require("uvu");
    const assert = require("uvu/assert");
    const { add, first } = require("../src/calc");

    test("adds two numbers", () => {
      assert.is(add(2, 2), 4);
    });

    test("takes the first value", () => {
      assert.is(first([]), undefined);
    });

    test("adds zero", () => {
      assert.is(add(0, 0), 0);
    });

    test.skip("multiplies", () => {});

    test.run();
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "tests/calc.js": UVU_TEST}
add("uvu", "failures", fs, ["uvu", "tests"],
    facts(["adds two numbers", "takes the first value"], None, "Expected values to be strictly equal",
          at(fs, "tests/calc.js", "assert.is(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("uvu", "green", fs_green, ["uvu", "tests"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

AVA_TEST = D("""
    const test = require("ava");
    const { add, first } = require("../src/calc");

    test("adds two numbers", (t) => {
      t.is(add(2, 2), 4);
    });

    test("takes the first value", (t) => {
      t.is(first([]), undefined);
    });

    test("adds zero", (t) => {
      t.is(add(0, 0), 0);
    });

    test.skip("multiplies", (t) => {
      t.pass();
    });
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "test/calc.test.js": AVA_TEST}
add("ava", "failures", fs, ["ava"],
    facts(["adds two numbers", "takes the first value"], None, "Difference (- actual, + expected)",
          at(fs, "test/calc.test.js", "t.is(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("ava", "green", fs_green, ["ava"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

TAP_TEST = D("""
    const t = require("tap");
    const { add, first } = require("../src/calc");

    t.test("adds two numbers", async (t) => {
      t.equal(add(2, 2), 4);
    });

    t.test("takes the first value", async (t) => {
      t.equal(first([]), undefined);
    });

    t.test("adds zero", async (t) => {
      t.equal(add(0, 0), 0);
    });

    t.test("multiplies", { skip: "later" }, async () => {});
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "test/calc.test.js": TAP_TEST}
add("tap", "failures", fs, ["tap", "--disable-coverage", "test/calc.test.js"],
    facts(["adds two numbers", "takes the first value"], None, "should be equal",
          at(fs, "test/calc.test.js", "t.equal(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("tap", "green", fs_green, ["tap", "--disable-coverage", "test/calc.test.js"],
    facts([], None, None, None, 0, counts={"passed": 3, "failed": 0, "skipped": 1}),
    link_node_modules=True)


# tape with node's own assert (issue 37): `assert(expr)` throws out of the test, node ends the run
# with its uncaught-exception block: the message ends in a colon, the expression is on the lines
# below it, then the stack
fs = {
    "package.json": '{\n  "name": "tapeassert",\n  "private": true\n}\n',
    "test.js": D("""
        const test = require("tape");
        const assert = require("assert");

        function isEven(n) {
          return n % 2 === 1;
        }

        test("two is even", (t) => {
          assert(isEven(2));
          t.end();
        });
        """),
}
add("tape", "node_assert", fs, ["node", "test.js"],
    facts(["two is even"], "AssertionError", "The expression evaluated to a falsy value",
          at(fs, "test.js", "assert(isEven(2))"), 1),
    link_node_modules=True)
