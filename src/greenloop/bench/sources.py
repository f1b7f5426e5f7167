"""Which files ``greenloop bench`` may seed bugs in, and the mutator for each language.

Source files only: Python (``ast``) and C-like sources (JS/TS, Go, Rust: ``clike``), never a test
file, a file of the verifier's configuration or one its command names, nor anything vendored,
generated, built, an example or a benchmark.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import PurePosixPath

from greenloop.bench import clike, mutate
from greenloop.bench.mutate import Mutant
from greenloop.bench.tokens import LANGS
from greenloop.loop.trust import VERIFIER_CONFIG, is_test_path

NOT_SOURCE_DIRS = frozenset(
    [
        "node_modules",
        "vendor",
        "third_party",
        "dist",
        "build",
        "out",
        "target",
        "coverage",
        "examples",
        "example",
        "benches",
        "bench",
        "benchmark",
        "benchmarks",
        "fixtures",
        "testdata",
        "docs",
    ]
)
NOT_SOURCE_SUFFIXES = (".d.ts", ".min.js", ".bundle.js")


def is_source(path: str, named: Collection[str] = ()) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (
        PurePosixPath(path).suffix in (".py", *LANGS)
        and not any(p in NOT_SOURCE_DIRS or p.startswith(".") for p in parts[:-1])
        and not name.endswith(NOT_SOURCE_SUFFIXES)
        and ".config." not in name  # eslint.config.js, vite.config.ts …: tool configuration
        and not is_test_path(path)
        and not VERIFIER_CONFIG.search(path)
        and name != "build.rs"  # Cargo's build script
        and path not in named
        and f"./{path}" not in named
    )


def source_files(files: Iterable[str], named: Collection[str] = ()) -> list[str]:
    return [f for f in files if is_source(f, named)]


def mutants_of(path: str, text: str) -> list[Mutant]:
    suffix = PurePosixPath(path).suffix
    if suffix == ".py":
        return mutate.mutants_of(path, text)
    lang = LANGS.get(suffix)
    return clike.mutants_of(path, text, lang=lang) if lang else []
