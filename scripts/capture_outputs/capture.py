"""Run one case: write its project, run the real tool, store what it printed and check its facts."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from registry import (
    ANSI_RE,
    BARE_VENV,
    DROPPED_ENV,
    FORCED_ENV,
    NODE_BIN,
    NODE_MODULES,
    OUT_DIR,
    PROJECTS_DIR,
    VENV_BIN,
    Case,
)


# --------------------------------------------------------------------------
# runner
# --------------------------------------------------------------------------
def base_env(case: Case) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(FORCED_ENV)
    front = list(case.path_front)
    if not case.path_front:
        front += [str(VENV_BIN), str(NODE_BIN)]
    env["PATH"] = os.pathsep.join(front + [env.get("PATH", "")])
    env.update(case.env)
    return env


def run_capture(argv: list[str] | str, cwd: Path, env: dict[str, str], timeout: float
                ) -> tuple[int, str, str, bool]:
    shell = isinstance(argv, str)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, shell=shell, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            executable=None if not shell else "/bin/sh")
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    return (proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out)


def which(name: str, env: dict[str, str]) -> str | None:
    return shutil.which(name, path=env["PATH"])


def tool_version(case: Case, env: dict[str, str], cwd: Path) -> str:
    try:
        rc, out, err, _ = run_capture(case.version_argv, cwd, env, 120)
    except OSError as exc:
        return f"unknown ({exc})"
    text = (out.strip() or err.strip()).splitlines()
    return text[0].strip() if text else "unknown"


def ensure_bare_venv() -> None:
    if not (BARE_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(BARE_VENV)], check=True)


def write_project(case: Case) -> None:
    cwd = case.cwd
    if cwd.exists():
        shutil.rmtree(cwd)
    cwd.mkdir(parents=True)
    shared = PROJECTS_DIR / case.tool / case.name
    if shared.is_dir():
        shutil.copytree(shared, cwd, dirs_exist_ok=True)
    for rel, text in case.files.items():
        p = cwd / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    if case.link_node_modules:
        (cwd / "node_modules").symlink_to(NODE_MODULES)


def check_facts(case: Case, text: str) -> list[str]:
    plain = ANSI_RE.sub("", text)
    f = case.facts
    missing = []
    for fid in f["failing_ids"]:
        if fid not in plain:
            missing.append(f"failing_ids:{fid}")
    for key in ("error_type", "message"):
        if f[key] and f[key] not in plain:
            missing.append(f"{key}:{f[key]}")
    if f["frame"]:
        path, line = f["frame"].rsplit(":", 1)
        base = path.rsplit("/", 1)[-1]
        pats = [f"{path}:{line}", f'{path}", line {line}', f"{path}({line},",
                f"{base}:{line}", f'{base}", line {line}']
        found = any(p in plain for p in pats)
        if not found and path in plain:
            # eslint "stylish" (file header, then "  LINE:COL  ...") or JSON reports
            found = bool(re.search(rf"^\s+{line}:\d+\s", plain, re.M)
                         or re.search(rf'"(row|line)":\s*{line}\b', plain))
        if not found:
            missing.append(f"frame:{f['frame']}")
    return missing


def capture(case: Case, date: str) -> tuple[str, str]:
    """Returns (status, detail)."""
    env = base_env(case)
    need = [r for r in case.requires if not which(r, env)]
    if need:
        return "skipped", f"missing tool(s): {', '.join(need)}"
    write_project(case)
    for step in case.setup:
        rc, out, err, _ = run_capture(step, case.cwd, env, case.timeout)
        if rc != 0:
            return "skipped", f"setup step {step} failed rc={rc}: {(out + err)[-500:]}"
    rc, out, err, timed_out = run_capture(case.argv, case.cwd, env, case.timeout)
    version = tool_version(case, env, case.cwd)
    unverified = check_facts(case, out + "\n" + err)
    record = {
        "tool": case.tool,
        "case": case.name,
        "argv": case.argv,
        "cwd_placeholder": str(case.cwd),
        "exit_code": rc,
        "stdout": out,
        "stderr": err,
        "tool_version": version,
        "captured_at": date,
        "facts": case.facts,
        "facts_unverified": unverified,
        "setup": case.setup,
        "timed_out": timed_out,
        "timeout_s": case.timeout if timed_out else None,
        "env": {k: v for k, v in FORCED_ENV.items()} | case.env,
    }
    d = OUT_DIR / case.tool
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{case.name}.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sep = "" if (not out or out.endswith("\n")) else "\n"
    (d / f"{case.name}.txt").write_text(out + sep + err, encoding="utf-8")
    size = (d / f"{case.name}.json").stat().st_size
    detail = f"exit={rc} version={version!r} size={size // 1024}KB"
    if size > 200 * 1024:
        detail += " WARNING: >200KB"
    if unverified:
        detail += f" unverified={unverified}"
    return "captured", detail
