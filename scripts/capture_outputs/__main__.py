"""Capture REAL output of real verifier tools, for greenloop's parser tests.

Each case writes a tiny project into /tmp/glcap/<tool>_<case>, runs the real
tool there, and stores what it printed in
tests/resources/outputs/<tool>/<case>.json (+ <case>.txt for humans).

The "facts" of each case (failing ids, error type, message, frame, ...) are
ground truth declared in its family module, next to the project they describe; they are NOT
derived from the output.  After capturing, the script checks that each fact
appears verbatim in the output and lists the ones that do not under
"facts_unverified" (some facts, e.g. the id of a test that killed its runner,
are true but never printed by the tool).

Stdlib only.  Tools come from PATH, with /tmp/glcap-tools/venv/bin and
/tmp/glcap-tools/node/node_modules/.bin in front (see
scripts/install_capture_tools.sh).  A case whose tool is missing is skipped.

Usage (a directory Python runs as a script, from a fresh clone; its own folder is sys.path[0],
so the modules import each other by their plain names):
    python3 scripts/capture_outputs                 # all cases
    python3 scripts/capture_outputs --only pytest --only cargo
    python3 scripts/capture_outputs --only pytest --case deep_exception
    python3 scripts/capture_outputs --list

Layout: registry.py (paths, the forced environment, Case, add), one module per tool family
(pytest_failures, pytest_runs, pytest_more, python_tools, js, js_runners, rust, go, native, other),
capture.py (run a case, write its .json/.txt, check its facts) and this __main__.py (the CLI).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import sys

from capture import capture, ensure_bare_venv
from registry import BARE_VENV, CAP_ROOT, CASES, OUT_DIR, Case

FAMILIES = (
    "pytest_failures", "pytest_runs", "pytest_more", "python_tools", "js", "js_runners", "rust",
    "go", "native", "other",
)  # fmt: skip
"""The tool family modules, in the cases' order: each adds its cases to registry.CASES on import."""


def load_cases() -> list[Case]:
    for name in FAMILIES:
        importlib.import_module(name)
    return CASES


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="only this tool (repeatable, or comma-separated)")
    ap.add_argument("--case", action="append", default=[], help="only this case name (repeatable)")
    ap.add_argument("--list", action="store_true", help="list cases and exit")
    args = ap.parse_args()
    only = {t for o in args.only for t in o.split(",") if t}
    cases = [c for c in load_cases() if (not only or c.tool in only) and (not args.case or c.name in args.case)]
    if args.list:
        for c in cases:
            argv = c.argv if isinstance(c.argv, str) else " ".join(c.argv)
            print(f"{c.tool}/{c.name}: {argv}")
        print(f"{len(cases)} cases, {len({c.tool for c in cases})} tools")
        return 0
    if any(c.path_front == [str(BARE_VENV / "bin")] for c in cases):
        ensure_bare_venv()
    CAP_ROOT.mkdir(parents=True, exist_ok=True)
    date = _dt.date.today().isoformat()
    results: list[tuple[Case, str, str]] = []
    for c in cases:
        try:
            status, detail = capture(c, date)
        except Exception as exc:  # never fail the whole run for one case
            status, detail = "skipped", f"error: {type(exc).__name__}: {exc}"
        results.append((c, status, detail))
        print(f"[{status}] {c.tool}/{c.name}: {detail}", flush=True)
    captured = [r for r in results if r[1] == "captured"]
    skipped = [r for r in results if r[1] != "captured"]
    versions: dict[str, str] = {}
    for c, _, _ in captured:
        j = json.loads((OUT_DIR / c.tool / f"{c.name}.json").read_text(encoding="utf-8"))
        versions.setdefault(c.tool, j["tool_version"])
    print(f"\ncaptured {len(captured)} cases over {len({r[0].tool for r in captured})} tools; skipped {len(skipped)}")
    for c, _, detail in skipped:
        print(f"  skipped {c.tool}/{c.name}: {detail}")
    for tool, v in sorted(versions.items()):
        print(f"  {tool}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
