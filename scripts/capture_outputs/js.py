"""TypeScript (tsc), eslint, prettier, jest, vitest and node:test cases."""

from __future__ import annotations

from registry import D, add, at, facts

# --------------------------------------------------------------------------
# TypeScript / eslint / prettier / jest / vitest / node:test
# --------------------------------------------------------------------------
fs = {
    "package.json": '{\n  "name": "tsdemo",\n  "private": true\n}\n',
    "tsconfig.json": D("""
        {
          "compilerOptions": {
            "target": "ES2020",
            "module": "commonjs",
            "strict": true,
            "noEmit": true
          },
          "include": ["src"]
        }
        """),
    "src/user.ts": D("""
        export interface User {
          id: number;
          name: string;
        }

        export function makeUser(name: string): User {
          return { id: "1", name };
        }
        """),
    "src/main.ts": D("""
        import { makeUser, User } from "./user";

        function greet(u: User): string {
          return "hi " + u.nam;
        }

        const count: number = makeUser("ada").name;
        greet(makeUser(42));
        console.log(count);
        """),
}
ts_facts = facts(["TS2322", "TS2551", "TS2345"], "TS2322", "Type 'string' is not assignable to type 'number'.",
                 at(fs, "src/user.ts", 'return { id: "1", name };'), 4)
add("tsc", "plain", fs, ["tsc", "-p", ".", "--pretty", "false"], ts_facts)
add("tsc", "pretty", fs, ["tsc", "-p", ".", "--pretty"], ts_facts)
add("tsc", "default", fs, ["tsc", "-p", "."], ts_facts)

fs = {
    "package.json": '{\n  "name": "lintdemo",\n  "private": true,\n  "type": "module"\n}\n',
    "eslint.config.js": D("""
        import js from "@eslint/js";

        export default [
          js.configs.recommended,
          {
            languageOptions: {
              ecmaVersion: 2022,
              sourceType: "module",
              globals: { console: "readonly" },
            },
            rules: {
              "no-unused-vars": "warn",
              eqeqeq: "error",
              "prefer-const": "warn",
            },
          },
        ];
        """),
    "src/app.js": D("""
        import { helper } from "./helper.js";

        let total = 0;
        const unused = 42;

        export function check(value) {
          if (value == null) {
            return undefinedThing;
          }
          total += helper(value);
          return total;
        }
        """),
    "src/helper.js": D("""
        export function helper(x) {
          let y = x * 2;
          return y;
        }
        """),
}
add("eslint", "errors_and_warnings", fs, ["eslint", "."],
    facts(["eqeqeq", "no-undef", "no-unused-vars", "prefer-const"], "eqeqeq",
          "Expected '===' and instead saw '=='", at(fs, "src/app.js", "if (value == null)"), 4),
    link_node_modules=True)
add("eslint", "json", fs, ["eslint", "--format", "json", "."],
    facts(["eqeqeq", "no-undef", "no-unused-vars", "prefer-const"], "eqeqeq",
          "Expected '===' and instead saw '=='.", None, 4),
    link_node_modules=True)
fs_pr = {
    "package.json": '{\n  "name": "fmtdemo",\n  "private": true\n}\n',
    "src/a.js": "const x = {a:1,\n  b:2}\nfunction f( y ){return y}\n",
    "src/b.js": "export const ok = 1;\n",
    "src/c.ts": "let s:string='x'\n",
}
add("prettier", "check", fs_pr, ["prettier", "--check", "src"],
    facts(["src/a.js", "src/c.ts"], "Code style issues", "Code style issues found in 2 files", None, 2))

JEST_SRC = D("""
    function parseUser(line) {
      const [name, age] = line.split(":");
      return { name, age, tags: [] };
    }

    function loadConfig(raw) {
      return { port: raw.port || 80 };
    }

    module.exports = { parseUser, loadConfig };
    """)
fs = {
    "package.json": '{\n  "name": "jestdemo",\n  "private": true\n}\n',
    "src/user.js": JEST_SRC,
    "test/user.test.js": D("""
        const { parseUser, loadConfig } = require("../src/user");

        describe("parseUser", () => {
          test("splits name and age", () => {
            expect(parseUser("ada:36")).toEqual({ name: "ada", age: 36, tags: [] });
          });

          test("keeps the name", () => {
            expect(parseUser("bob:1").name).toBe("bob");
          });
        });

        test("loadConfig defaults the port", () => {
          expect(loadConfig(null).port).toBe(80);
        });
        """),
}
add("jest", "failures", fs, ["jest"],
    facts(["parseUser › splits name and age", "loadConfig defaults the port"], "toEqual",
          "expect(received).toEqual(expected)", at(fs, "test/user.test.js", "toEqual({ name"), 2))
add("jest", "ci_verbose", fs, ["jest", "--ci", "--verbose"],
    facts(["parseUser › splits name and age", "loadConfig defaults the port"], "toEqual",
          "expect(received).toEqual(expected)", at(fs, "test/user.test.js", "toEqual({ name"), 2))

# a jest worker killed by a signal mid-run (seed 003: killed, never "0 failures")
fs = {
    "package.json": '{\n  "name": "jestkill",\n  "private": true\n}\n',
    "test/dies.test.js": 'test("dies", () => {\n  process.kill(process.pid, "SIGKILL");\n});\n',
    **{f"test/ok{i}.test.js": f'test("ok {i}", () => {{\n  expect({i}).toBe({i});\n}});\n' for i in (1, 2, 3)},
}
add("jest", "worker_killed", fs, ["jest", "-w", "2"],
    facts(["test/dies.test.js"], None, "was terminated by another process: signal=SIGKILL", None, None,
          killed=True))

fs = {
    "package.json": '{\n  "name": "vitestdemo",\n  "private": true,\n  "type": "module"\n}\n',
    "src/user.js": JEST_SRC.replace("module.exports = { parseUser, loadConfig };", "export { parseUser, loadConfig };"),
    "test/user.test.js": D("""
        import { describe, expect, test } from "vitest";
        import { loadConfig, parseUser } from "../src/user.js";

        describe("parseUser", () => {
          test("splits name and age", () => {
            expect(parseUser("ada:36")).toEqual({ name: "ada", age: 36, tags: [] });
          });

          test("keeps the name", () => {
            expect(parseUser("bob:1").name).toBe("bob");
          });
        });

        test("loadConfig defaults the port", () => {
          expect(loadConfig(null).port).toBe(80);
        });
        """),
}
add("vitest", "failures", fs, ["vitest", "run"],
    facts(["test/user.test.js > parseUser > splits name and age", "test/user.test.js > loadConfig defaults the port"],
          "AssertionError", "expected { name: 'ada', age: '36', tags: [] } to deeply equal { name: 'ada', age: 36, tags: [] }",
          at(fs, "test/user.test.js", "toEqual({ name"), 2),
    link_node_modules=True)

# vitest --retry=2 (issue 37): one test fails every try (listed once per try), one passes on its
# second try (flaky: a pass, `(retry x1)`), one passes
fs = {
    "package.json": '{\n  "name": "vitestretry",\n  "private": true,\n  "type": "module"\n}\n',
    "test/retry.test.js": D("""
        import { expect, test } from "vitest";

        let tries = 0;

        test("passes on its second try", () => {
          tries += 1;
          expect(tries).toBe(2);
        });

        test("always fails", () => {
          expect(1 + 1).toBe(3);
        });

        test("passes", () => {
          expect(1).toBe(1);
        });
        """),
}
add("vitest", "retry", fs, ["vitest", "run", "--retry=2"],
    facts(["test/retry.test.js > always fails"], "AssertionError", "expected 2 to be 3",
          at(fs, "test/retry.test.js", "expect(1 + 1)"), 1, counts={"passed": 2, "failed": 1, "skipped": 0}),
    link_node_modules=True)

# a long string compared (issue 37): vitest prints `Expected: "…"` / `Received: "…"` whole, 680
# characters each, alike but for `port=8081` / `port=8080` near their end
fs = {
    "package.json": '{\n  "name": "vitestlong",\n  "private": true,\n  "type": "module"\n}\n',
    "src/row.js": D("""
        export function row(port) {
          const hosts = Array.from({ length: 12 }, (_, i) => `backend-${i}.eu-west.example.internal`);
          const tags = Array.from({ length: 8 }, (_, i) => `release-${i}`);
          return `name=api;hosts=${hosts.join(",")};port=${port + 1};tags=${tags.join(",")}`;
        }
        """),
    "test/row.test.js": D("""
        import { expect, test } from "vitest";
        import { row } from "../src/row.js";

        test("renders the server line", () => {
          const hosts = Array.from({ length: 12 }, (_, i) => `backend-${i}.eu-west.example.internal`);
          const tags = Array.from({ length: 8 }, (_, i) => `release-${i}`);
          expect(row(8080)).toBe(`name=api;hosts=${hosts.join(",")};port=8080;tags=${tags.join(",")}`);
        });
        """),
}
add("vitest", "long_string", fs, ["vitest", "run"],
    facts(["test/row.test.js > renders the server line"], "AssertionError", None,
          at(fs, "test/row.test.js", "expect(row(8080))"), 1),
    link_node_modules=True)

fs = {
    "package.json": '{\n  "name": "nodetestdemo",\n  "private": true\n}\n',
    "src/stack.js": D("""
        class Stack {
          constructor() { this.items = []; }
          push(x) { this.items.push(x); }
          pop() { return this.items.shift(); }
          peek() { return this.items.at(-1).value; }
        }
        module.exports = { Stack };
        """),
    "test/stack.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");
        const { Stack } = require("../src/stack");

        test("pop returns last pushed", () => {
          const s = new Stack();
          s.push(1);
          s.push(2);
          assert.strictEqual(s.pop(), 2);
        });

        test("items deep equal", () => {
          const s = new Stack();
          s.push({ a: 1 });
          assert.deepStrictEqual(s.items, [{ a: 2 }]);
        });

        test("peek on empty", () => {
          const s = new Stack();
          s.peek();
        });

        test("push works", () => {
          const s = new Stack();
          s.push(3);
          assert.strictEqual(s.items.length, 1);
        });
        """),
}
nt_facts = facts(["pop returns last pushed", "items deep equal", "peek on empty"], "AssertionError",
                 "Expected values to be strictly equal", at(fs, "test/stack.test.js", "assert.strictEqual(s.pop(), 2)"), 3)
add("node-test", "spec", fs, ["node", "--test", "--test-reporter=spec"], nt_facts)
add("node-test", "tap", fs, ["node", "--test", "--test-reporter=tap"], nt_facts)
add("node-test", "default", fs, ["node", "--test"], nt_facts)

# bare assert(expr) (issue 37): node's one generic message for every expression; each failure
# differs only in the expression it quotes
fs = {
    "package.json": '{\n  "name": "ntassert",\n  "private": true\n}\n',
    "src/parity.js": "function isEven(n) {\n  return n % 2 === 1;\n}\nmodule.exports = { isEven };\n",
    "test/parity.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");
        const { isEven } = require("../src/parity");

        test("two is even", () => {
          assert(isEven(2));
        });

        test("zero is even", () => {
          assert.ok(isEven(0));
        });

        test("three is odd", () => {
          assert(!isEven(3));
        });
        """),
}
assert_facts = facts(["two is even", "zero is even", "three is odd"], "AssertionError",
                     "The expression evaluated to a falsy value", at(fs, "test/parity.test.js", "assert(isEven(2))"), 3)
add("node-test", "assert_expr_tap", fs, ["node", "--test", "--test-reporter=tap"], assert_facts)
add("node-test", "assert_expr_spec", fs, ["node", "--test", "--test-reporter=spec"], assert_facts)

# a test file killed by a signal: node reports it as one failing "test" named by its path
fs = {
    "package.json": '{\n  "name": "ntkill",\n  "private": true\n}\n',
    "test/a.test.js": D("""
        const test = require("node:test");
        test("ok one", () => {});
        test("dies", () => { process.kill(process.pid, "SIGSEGV"); });
        """),
    "test/b.test.js": D("""
        const test = require("node:test");
        test("b passes", () => {});
        """),
}
add("node-test", "file_killed", fs, ["node", "--test"],
    facts(["test/a.test.js"], "SIGSEGV", "test failed", "test/a.test.js:1", 1, killed=True))
add("node-test", "file_killed_spec", fs, ["node", "--test", "--test-reporter=spec"],
    facts(["test/a.test.js"], None, "test failed", None, 1, killed=True))

# a test file that fails to LOAD (a SyntaxError in the code under test): exit 1, not a kill
fs = {
    "package.json": '{\n  "name": "ntload",\n  "private": true\n}\n',
    "src/calc.js": "function add(a, b) {\n  return a + b;\n}\n\nfunction mul(a, b) {\n"
                   "  return a * (b;\n}\n\nmodule.exports = { add, mul };\n",
    "test/calc.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");
        const { add } = require("../src/calc");

        test("adds", () => {
          assert.strictEqual(add(2, 2), 4);
        });
        """),
    "test/other.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");

        test("truth", () => {
          assert.strictEqual(1, 1);
        });
        """),
}
load_facts = facts(["test/calc.test.js"], "SyntaxError", "Unexpected token ';'", "src/calc.js:6", 1)
add("node-test", "load_error", fs, ["node", "--test"], load_facts)
add("node-test", "load_error_spec", fs, ["node", "--test", "--test-reporter=spec"], load_facts)

# ES modules: node prints file:/// URLs and util.inspect properties after the stack
fs = {
    "package.json": '{\n  "name": "ntesm",\n  "private": true,\n  "type": "module"\n}\n',
    "src/range.js": "export function range(n) {\n  const out = [];\n"
                    "  for (let i = 0; i <= n; i++) out.push(i);\n  return out;\n}\n",
    "test/range.test.js": D("""
        import test from "node:test";
        import assert from "node:assert";
        import { range } from "../src/range.js";

        test("range of 3", () => {
          assert.strictEqual(range(3).length, 3);
        });

        test("range of 0", () => {
          assert.deepStrictEqual(range(0), []);
        });
        """),
}
esm_facts = facts(["range of 3", "range of 0"], "AssertionError", "Expected values to be strictly equal",
                  at(fs, "test/range.test.js", "assert.strictEqual(range(3)"), 2)
add("node-test", "esm_spec", fs, ["node", "--test", "--test-reporter=spec"], esm_facts)
