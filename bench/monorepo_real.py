"""The monorepo loop on real workspaces (issue 29): a planted bug in a leaf package, then in a shared
one; the real loop (scripted agent, real git, the projects' own test commands) runs the packages the
edit affects each iteration and every package at the gate. Prints what ran and how long it took.

Setup (once; registries only, npm for pnpm, Node 22.18 and the workspace's dependencies):

    npm install --prefix /tmp/monorepo-pnpm pnpm@9
    npm install --prefix /tmp/monorepo-node2218 node@22.18.0   # type stripping, the project's tests
    git clone <mirror of github.com/mjackson/remix-the-web> /tmp/mr-real/remix   # 88dea9bf87
    cd /tmp/mr-real/remix && pnpm install --filter './packages/*' && pnpm --filter './packages/*' -r build

    PATH=/tmp/monorepo-node2218/node_modules/.bin:/tmp/monorepo-pnpm/node_modules/.bin:$PATH \\
        .venv/bin/python bench/monorepo_real.py pnpm /tmp/mr-real/remix

Cargo, offline (no crates.io here): serde-rs/serde at v1.0.156 (5 crates, the last release on syn
1, whose dependencies Debian bookworm ships), its dependencies from Debian's librust-*-dev through
a directory source:

    apt-get install librust-automod-dev librust-fnv-dev librust-rustversion-dev \
        librust-trybuild-dev librust-dissimilar-dev librust-syn-dev librust-quote-dev librust-proc-macro2-dev
    git clone <mirror of github.com/serde-rs/serde> /tmp/mr-real/serde && git -C /tmp/mr-real/serde checkout v1.0.156
    # .cargo/config.toml: [source.crates-io] replace-with = "debian"; [source.debian] directory =
    # "/usr/share/cargo/registry"; [net] offline = true; [build] rustflags = ["--cap-lints", "warn"]
    # (2023 code, rustc 1.95's new lints), target-dir = "/tmp/mr-real/serde-target"
    # serde, serde_derive, serde_derive_internals: AGENTS.md "Test command: `cargo test --lib
    # --tests`" (their doctests need `--features derive`, as serde's CI runs them); serde_test's
    # tests are its doctests: "Test command: `cargo test --features serde/derive,serde/rc`"
    # the leaf: serde_test_suite (test_suite/, tests only), which no crate depends on; its bug is in
    # a helper under tests/, so that case runs as with --allow-test-edits
    .venv/bin/python bench/monorepo_real.py cargo /tmp/mr-real/serde
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from greenloop.agents.scripted import scripted
from greenloop.config import Config
from greenloop.loop.loop import run_loop
from greenloop.loop.trust import is_test_path

# project -> (leaf case, shared case): (file, the good text, the planted bug)
CASES: dict[str, dict[str, tuple[str, str, str]]] = {
    "pnpm": {
        "leaf": (
            "packages/file-storage/src/lib/memory-file-storage.ts",
            "return this.#map.has(key);",
            "return !this.#map.has(key);",
        ),
        "shared": (
            "packages/headers/src/lib/utils.ts",
            "return str.charAt(0).toUpperCase() + str.slice(1).toLowerCase();",
            "return str.charAt(0).toUpperCase() + str.slice(1);",
        ),
    },
    # serde-rs/serde v1.0.156 (5 crates), offline: setup in the module docstring
    "cargo": {
        # serde_test_suite: no crate depends on it; its helper for `#[serde(with = "bytes")]`
        "leaf": (
            "test_suite/tests/bytes/mod.rs",
            "Ok(v.as_bytes().to_vec())",
            "Ok(v.as_bytes()[1..].to_vec())",
        ),
        "shared": (
            "serde_test/src/ser.rs",
            "assert_next_token!(self, Bool(v));",
            "assert_next_token!(self, Bool(!v));",
        ),
        "core": (
            "serde/src/ser/impls.rs",
            "        serializer.serialize_unit()\n",
            "        serializer.serialize_none()\n",
        ),
    },
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout.strip()


def scratch_copy(project: Path, into: Path) -> Path:
    """A copy of the prepared project (its node_modules and builds too) as a fresh repository."""
    root = into / project.name
    shutil.copytree(project, root, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
    git(root, "init", "-q", "-b", "main")
    (root / ".git" / "info" / "exclude").write_text("node_modules/\ndist/\ntarget/\n")
    git(root, "add", "-A")
    git(
        root,
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
        "commit",
        "-qm",
        "as fetched",
    )
    return root


def plant(root: Path, path: str, good: str, bad: str) -> None:
    target = root / path
    text = target.read_text()
    assert good in text, f"{good!r} not in {path}"
    target.write_text(text.replace(good, bad, 1))
    git(
        root,
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
        "commit",
        "-qam",
        f"bug in {path}",
    )


def one_case(project: Path, kind: str, case: str) -> dict[str, Any]:
    path, good, bad = CASES[kind][case]
    with tempfile.TemporaryDirectory(prefix="greenloop-monorepo-") as tmp:
        root = scratch_copy(project, Path(tmp))
        plant(root, path, good, bad)
        # iteration 1 leaves the bug (a note beside it), iteration 2 fixes it
        noted = bad.replace("\n", " // checked\n", 1) if "\n" in bad else f"{bad} // checked"
        note = {"replace": path, "old": bad, "new": noted}
        fix = {"replace": path, "old": noted, "new": good}
        # a bug in test code (serde_test_suite is tests only) is fixed in test code: as
        # --allow-test-edits, else the green is flagged suspicious (test_modified), as it should be
        tests_only = is_test_path(path)
        config = Config(max_iters=3, allow_test_edits=tests_only)
        lines: list[str] = []
        started = time.monotonic()
        result = run_loop(root, scripted([[note], [fix]]), config=config, progress=lines.append)
        record = Path(result.record_dir)
        events = [json.loads(x) for x in (record / "events.jsonl").read_text().splitlines()]
        return {
            "case": case,
            "allow_test_edits": tests_only,
            "result": result.result.value,
            "seconds": round(time.monotonic() - started, 1),
            "iterations": [
                {"iteration": r.iteration, "verify_s": r.verifier_s, "subset": r.subset}
                for r in result.history
            ],
            "packages": [
                {
                    "iteration": e["iteration"],
                    "ran": [r["package"] for r in e["ran"]],
                    "s": e["seconds"],
                }
                for e in events
                if e["kind"] == "packages"
            ],
            "gate_stages": [
                line.removeprefix("$ ")
                for line in (record / f"iter-{len(result.history) - 1}" / "verify.log")
                .read_text()
                .splitlines()
                if line.startswith("$ ")
            ],
            "progress": [line for line in lines if "packages" in line or line.startswith("iter")],
        }


def main(argv: list[str]) -> int:
    kind, project = argv[0], Path(argv[1]).resolve()
    for case in argv[2:] or CASES[kind]:  # a case's name runs that one only
        print(json.dumps(one_case(project, kind, case), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
