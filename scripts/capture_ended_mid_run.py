"""Real runs whose code under test ends the process with exit 0 in the middle of the suite.

One small project per runner: a library function that calls ``process.exit(0)`` (``os._exit(0)``
in Python) when given 2, and four tests: one passes, one fails, one calls the function with 2, one
would pass after it. jest, mocha (spec, dot, tap), pytest and unittest then exit 0 with no
end-of-run summary. (node:test prints nothing at all then: a file run directly buffers its report,
and ``node --test`` reports the file as one passing test: no output says the run was cut.) The runners are installed with npm into a
temporary folder at the versions below; each run's merged output and exit code is written to
tests/resources/ended_mid_run/<case>.json (the temporary path replaced by ``/tmp/glmid``).

    python scripts/capture_ended_mid_run.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "resources" / "ended_mid_run"
PLACEHOLDER = "/tmp/glmid"
NPM = ["jest@30.5.2", "mocha@12.0.3"]
LIB_JS = "exports.check = (x) => { if (x === 2) process.exit(0); return x; };\n"
LIB_PY = "import os\n\n\ndef check(x):\n    if x == 2:\n        os._exit(0)\n    return x\n"
BODIES = ("check(1) === 1", "check(3) === 4", "check(2)", "true")
NODE_TEST = "const test = require('node:test');\n" + "".join(
    f"test('t{i}', () => {{ require('node:assert').ok({b}); }});\n" for i, b in enumerate(BODIES)
)
JEST = "".join(
    f"test('t{i}', () => {{ expect({b}).toBeTruthy(); }});\n" for i, b in enumerate(BODIES)
)
MOCHA = (
    "describe('lib', () => {\n"
    + "".join(
        f"  it('t{i}', () => {{ require('node:assert').ok({b}); }});\n"
        for i, b in enumerate(BODIES)
    )
    + "});\n"
)
REQUIRE = "const { check } = require('../lib.js');\n"
PYTEST = "from lib import check\n\n" + "".join(
    f"\ndef test_t{i}():\n    assert {b.replace('===', '==').replace('true', 'True')}\n"
    for i, b in enumerate(BODIES)
)
UNITTEST = "import unittest\n\nfrom lib import check\n\n\nclass T(unittest.TestCase):\n" + "".join(
    f"    def test_t{i}(self):\n        self.assertTrue({b.replace('===', '==').replace('true', 'True')})\n\n"
    for i, b in enumerate(BODIES)
)
FILES = {
    "lib.js": LIB_JS,
    "lib.py": LIB_PY,
    "nt/a.test.js": REQUIRE + NODE_TEST,
    "jt/a.test.js": REQUIRE + JEST,
    "mt/a.test.js": REQUIRE + MOCHA,
    "test_a.py": PYTEST,
    "test_u.py": UNITTEST,
}
CASES = {
    "jest": ["npx", "jest", "jt"],
    "mocha-spec": ["npx", "mocha", "mt/a.test.js"],
    "mocha-dot": ["npx", "mocha", "--reporter", "dot", "mt/a.test.js"],
    "mocha-tap": ["npx", "mocha", "--reporter", "tap", "mt/a.test.js"],
    "pytest": [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_a.py"],
    "pytest-q": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_a.py"],
    "unittest": [sys.executable, "-m", "unittest", "-v", "test_u"],
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="glmid-") as tmp:
        root = Path(tmp)
        for name, text in FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        (root / "package.json").write_text('{"name": "glmid", "private": true}\n')
        subprocess.run(["npm", "i", "--no-audit", "--no-fund", *NPM], cwd=root, check=True)
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0", "CI": "1"}
        env.pop("PYTEST_ADDOPTS", None)
        for case, argv in CASES.items():
            run = subprocess.run(
                argv, cwd=root, env=env, capture_output=True, text=True, check=False
            )
            shown = ["python" if a == sys.executable else a for a in argv]
            data = {
                "case": case,
                "argv": shown,
                "cwd_placeholder": PLACEHOLDER,
                "exit_code": run.returncode,
                "output": (run.stdout + run.stderr).replace(tmp, PLACEHOLDER),
            }
            (OUT / f"{case}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            print(case, run.returncode)


if __name__ == "__main__":
    main()
