"""Start-up: `greenloop --version` against bare `python -c pass` (issue 2, goal <= 2.5x).

Also: the top import-time offenders of `greenloop --version`, and whether `greenloop check` on a
green repo imports anything heavy (rich, jinja2, openai, defusedxml, mcp ...) with its import chain.

Run: /tmp/glvenv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (
    GREENLOOP,
    HEADER,
    PYTHON,
    cached_env,
    load,
    machine,
    row,
    time_command,
    today,
    verdict,
)

GOAL = 2.5
HELP_GOAL = 2.0
HEAVY = (
    "rich",
    "jinja2",
    "openai",
    "defusedxml",
    "mcp",
    "httpx",
    "pydantic",
    "markdown_it",
    "pygments",
)


def importtime(argv: list[str], cwd: Path | None = None) -> list[tuple[int, int, int, str]]:
    """(self_us, cumulative_us, depth, module) per line of `python -X importtime`."""
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", *argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    out = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum, name = line.split(":", 1)[1].split("|")
        name = name[1:]  # one separator space, then two spaces per nesting level
        depth = (len(name) - len(name.lstrip())) // 2
        out.append((int(self_us), int(cum), depth, name.strip()))
    return out


def chains(entries: list[tuple[int, int, int, str]], wanted: tuple[str, ...]) -> list[str]:
    """For each heavy top-level package imported, the chain of importers leading to it."""
    found: dict[str, str] = {}
    # importtime prints children before their parent; walk backwards keeping a depth stack.
    stack: list[tuple[int, str]] = []
    for _self, cum, depth, name in reversed(entries):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, name))
        top = name.split(".")[0]
        if top in wanted and top not in found:
            found[top] = " -> ".join(n for _, n in stack) + f" ({cum / 1000:.1f} ms cumulative)"
    return [f"{k}: {v}" for k, v in found.items()]


def green_repo(tmp: Path) -> Path:
    repo = tmp / "green"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "green"\nversion = "0"\n\n'
        f'[[tool.greenloop.stage]]\nname = "test"\nrun = "{PYTHON} -c pass"\n'
    )
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()

    print(f"before: {load()}")
    env = cached_env()
    bare, bare_cpu = time_command([PYTHON, "-c", "pass"], runs=args.runs, env=env)
    version, version_cpu = time_command([GREENLOOP, "--version"], runs=args.runs, env=env)
    nocache, nocache_cpu = time_command([GREENLOOP, "--version"], runs=args.runs)
    # issue 16: --help from its kept rendering (the first call renders and keeps it)
    helps = {}
    for argv in (["--help"], ["run", "--help"], ["check", "--help"]):
        helps[" ".join(argv)] = time_command([GREENLOOP, *argv], runs=args.runs, env=env)[1]
    ratio = version.median / bare.median
    cpu_ratio = version_cpu.median / bare_cpu.median
    with tempfile.TemporaryDirectory() as tmp:
        repo = green_repo(Path(tmp))
        check, _ = time_command(
            [GREENLOOP, "check"], runs=max(5, args.runs // 4), cwd=repo, env=env
        )
        check_imports = importtime(["-m", "greenloop", "check"], cwd=repo)
    version_imports = importtime(["-m", "greenloop", "--version"])

    print(
        f"bare `python -c pass`: median {bare.median * 1000:.1f} ms ({bare.spread}, {args.runs} runs)"
    )
    print(
        f"`greenloop --version`: median {version.median * 1000:.1f} ms ({version.spread}, {args.runs} runs)"
    )
    print(f"ratio (wall): {ratio:.2f}x (goal <= {GOAL}x)")
    print(
        f"CPU user+sys: python {bare_cpu.median * 1000:.1f} ms, greenloop {version_cpu.median * 1000:.1f} ms,"
        f" ratio {cpu_ratio:.2f}x"
    )
    print(
        f"without bytecode cache (PYTHONDONTWRITEBYTECODE=1 as in this sandbox): `greenloop --version` "
        f"median {nocache.median * 1000:.1f} ms wall, {nocache_cpu.median * 1000:.1f} ms CPU"
    )
    for name, cpu in helps.items():
        print(
            f"`greenloop {name}`: CPU {cpu.median * 1000:.1f} ms = {cpu.median / bare_cpu.median:.2f}x"
            f" bare python (goal <= {HELP_GOAL}x)"
        )
    worst_help = max(cpu.median for cpu in helps.values()) / bare_cpu.median
    print(f"after: {load()}")
    print(
        f"`greenloop check` on a green repo (stage `python -c pass`): median {check.median * 1000:.1f} ms ({check.spread})"
    )
    print(
        "\nTop import-time offenders of `python -X importtime -m greenloop --version` (self time):"
    )
    for self_us, cum, _d, name in sorted(version_imports, reverse=True)[:10]:
        print(f"  {name:<32} self {self_us / 1000:6.2f} ms  cumulative {cum / 1000:6.2f} ms")
    gl = sorted((e for e in version_imports if e[3].startswith("greenloop")), key=lambda e: -e[1])
    print(
        "  greenloop modules (cumulative): " + ", ".join(f"{e[3]} {e[1] / 1000:.1f} ms" for e in gl)
    )
    heavy = chains(check_imports, HEAVY)
    print(f"\n`greenloop check` on a green repo imports {len(check_imports)} modules; heavy ones:")
    print("\n".join(f"  {c}" for c in heavy) or "  none")
    print()
    print(HEADER)
    print(
        row(
            "startup",
            f"`greenloop --version` CPU {version_cpu.median * 1000:.1f} ms vs `python -c pass` "
            f"{bare_cpu.median * 1000:.1f} ms = **{cpu_ratio:.2f}x** (wall {version.median * 1000:.0f}"
            f" vs {bare.median * 1000:.0f} ms = {ratio:.2f}x, noisy under load)",
            f"<= {GOAL}x",
            verdict(cpu_ratio <= GOAL),
            today(),
            machine(),
        )
    )
    print(
        row(
            "startup: --help",
            f"slowest of `greenloop --help`, `run --help`, `check --help`: CPU **{worst_help:.2f}x** "
            f"bare python ({', '.join(f'{n} {c.median * 1000:.1f} ms' for n, c in helps.items())})",
            f"<= {HELP_GOAL}x",
            verdict(worst_help <= HELP_GOAL),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()
