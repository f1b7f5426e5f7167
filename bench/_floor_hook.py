"""The floor of a Python Stop hook: the least any hook built like greenloop's can cost (issue 16).

``bench/hook.py`` runs it beside the real hook. It does only what no honest hook can skip, with no
greenloop code: Python start-up (as a console script: ``import re``), read the event, a cache key by
one ``git status`` before the run and one after (the tree the verdict is about), the verifier in a
fresh process with greenloop's pytest plugin, the plugin's JSON lines read back, one cache file
written. No config, no detection, no classification, no digest, no redaction, no records.

Run: python bench/_floor_hook.py PLUGIN_DIR REPORT_DIR VERIFIER < event.json  (VERIFIER: one shell string)
"""

import json
import os
import re  # pip's console-script wrapper imports it before greenloop's main
import subprocess
import sys

_ = re
STATUS = ("git", "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all")


def key(cwd: str) -> bytes:
    return subprocess.run(STATUS, cwd=cwd, capture_output=True, check=True).stdout


def main() -> int:
    plugin_dir, reports, verifier = sys.argv[1:]
    cwd = json.loads(sys.stdin.read())["cwd"]
    before = key(cwd)
    env = dict(
        os.environ,
        PYTHONPATH=plugin_dir,
        PYTEST_PLUGINS="greenloop_pytest_plugin",
        GREENLOOP_PYTEST_REPORT_DIR=reports,
    )
    verifier = verifier.replace("PYTHONPATH=", f"PYTHONPATH={plugin_dir}:")  # as greenloop does
    run = subprocess.run(["sh", "-c", verifier], cwd=cwd, env=env, capture_output=True, check=False)
    events = []
    for name in os.listdir(reports):
        path = os.path.join(reports, name)
        with open(path, encoding="utf-8") as handle:
            events.extend(json.loads(line) for line in handle)
        os.unlink(path)
    green = run.returncode == 0 and any(e["event"] == "finish" for e in events)
    if key(cwd) == before:
        with open(os.path.join(reports, "..", "cache.json"), "w", encoding="utf-8") as handle:
            json.dump({"key": before.hex(), "green": green}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
