"""A monorepo's packages (issue 29), read from real projects' workspace manifests (committed under
tests/resources/workspaces/<project>/, each with a SOURCE naming the repository and commit)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from greenloop.config import Config
from greenloop.detect.packages import Workspace, affected_cascade, find_workspace
from greenloop.detect.sources import detect_cascade
from greenloop.errors import FatalError
from limits import hang

REAL = Path(__file__).parent / "resources" / "workspaces"


def real(tmp_path: Path, project: str) -> Path:
    root = tmp_path / project
    shutil.copytree(REAL / project, root)
    return root


def workspace(root: Path) -> Workspace:
    found = find_workspace(root)
    assert found is not None
    return found


def deps(ws: Workspace) -> dict[str, tuple[str, ...]]:
    return {p.name: p.deps for p in ws.packages}


def test_a_pnpm_workspace_lists_its_packages_their_workspace_deps_and_those_with_no_verifier(
    tmp_path: Path,
) -> None:
    ws = workspace(real(tmp_path, "remix-the-web"))
    assert ws.source == "pnpm-workspace.yaml"
    found = deps(ws)
    assert len(found) == 19  # packages/*, their benches and examples, scripts
    assert found["@mjackson/form-data-parser"] == ("@mjackson/multipart-parser",)
    assert found["@mjackson/file-storage"] == ("@mjackson/lazy-file", "@mjackson/form-data-parser")
    assert found["@mjackson/headers"] == ()  # mrmime, esbuild: not the workspace's
    with_tests = [p.name for p in ws.packages if p.stages]
    assert len(with_tests) == 9
    assert {p.name for p in ws.unverified} >= {"remix-the-scripts", "tar-parser-bench"}
    names = [p.name for p in ws.packages]  # dependencies first
    assert names.index("@mjackson/multipart-parser") < names.index("@mjackson/form-data-parser")


def test_the_dependents_of_a_shared_package_are_found_transitively(tmp_path: Path) -> None:
    ws = workspace(real(tmp_path, "remix-the-web"))
    why = ws.dependents(["@mjackson/headers"])
    assert why["@mjackson/headers"] == ""
    assert why["@mjackson/multipart-parser"] == "depends on @mjackson/headers"
    assert why["@mjackson/form-data-parser"] == "depends on @mjackson/multipart-parser"
    assert why["@mjackson/file-storage"] == "depends on @mjackson/form-data-parser"
    assert "@mjackson/lazy-file" not in why
    assert "@mjackson/route-pattern" not in why


def test_an_edit_maps_to_its_package_and_a_root_file_to_every_package(tmp_path: Path) -> None:
    root = real(tmp_path, "remix-the-web")
    cascade = detect_cascade(root, Config())
    assert cascade is not None
    assert cascade.workspace is not None
    leaf = affected_cascade(cascade, ["packages/route-pattern/src/lib/x.ts"], root=root)
    assert leaf is not None
    assert leaf.packages == (("@mjackson/route-pattern", ""),)
    assert [s.display for s in leaf.cascade.stages] == ["cd packages/route-pattern && npm test"]
    everything = affected_cascade(cascade, ["pnpm-lock.yaml"], root=root)
    assert everything is not None
    assert everything.every
    assert everything.cascade is cascade
    assert everything.describe() == "a root-level file changed (pnpm-lock.yaml) → every package"


def test_npm_workspaces_in_package_json_are_read(tmp_path: Path) -> None:
    ws = workspace(real(tmp_path, "polka"))
    assert ws.source == "package.json workspaces"
    assert deps(ws)["polka"] == ("@polka/url",)
    assert len(ws.packages) == 7
    assert ws.unverified == ws.packages  # polka's tests run from the root (uvu): no package has one


def test_a_js_workspace_whose_packages_have_no_tests_keeps_the_roots_command(
    tmp_path: Path,
) -> None:
    root = real(tmp_path, "polka")
    (root / "package.json").write_text(
        json.dumps({"workspaces": ["packages/*"], "scripts": {"test": "uvu packages test"}})
    )
    cascade = detect_cascade(root, Config())
    assert cascade is not None
    assert [s.display for s in cascade.stages] == ["npm test"]
    assert cascade.workspace is None
    shown = subprocess.run(
        [sys.executable, "-m", "greenloop", "-C", str(root), "detect"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(120),
        check=False,
    )
    assert "  1. test     npm test" in shown.stdout
    assert "no verifier: @polka/url (packages/url/package.json)" in shown.stdout
    assert (
        "no package has a verifier of its own: the root's stages run for every edit" in shown.stdout
    )


def test_a_cargo_workspace_with_a_root_package_and_path_deps(tmp_path: Path) -> None:
    ws = workspace(real(tmp_path, "rustc-demangle"))
    assert ws.source == "Cargo.toml [workspace]"
    assert [(p.name, p.path) for p in ws.packages] == [
        ("rustc-demangle", ""),
        ("rustc-demangle-capi", "crates/capi"),
        ("rustc-demangle-fuzz", "fuzz"),
    ]
    # `path = "../.."` and `path = '..'` are the root crate; native-c is no member
    assert deps(ws)["rustc-demangle-capi"] == ("rustc-demangle",)
    assert deps(ws)["rustc-demangle-fuzz"] == ("rustc-demangle",)
    root_package = ws.owner("src/lib.rs")
    assert root_package is not None
    assert root_package.name == "rustc-demangle"
    assert ws.owner("Cargo.toml") is None  # the workspace's manifest: every crate


def test_a_uv_workspace_reads_members_and_hatch_hook_dependencies(tmp_path: Path) -> None:
    ws = workspace(real(tmp_path, "pydantic-ai"))
    assert ws.source == "pyproject.toml [tool.uv.workspace]"
    found = deps(ws)
    assert set(found) == {
        "pydantic-ai",
        "pydantic-ai-slim",
        "pydantic-evals",
        "pydantic-graph",
        "clai",
        "pydantic-ai-examples",
    }
    assert "pydantic-graph" in found["pydantic-ai-slim"]
    assert found["clai"] == ("pydantic-ai",)
    why = ws.dependents(["pydantic-graph"])
    assert why["clai"] == "depends on pydantic-ai"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("pnpm-workspace.yaml", "packages:\n  - 'packages/*\n", "line 2: unterminated quote"),
        ("pnpm-workspace.yaml", "packages: packages/*\n", "line 1: packages must be a list"),
        ("pnpm-workspace.yaml", "packages:\n  packages/*\n", "line 2: expected a list item"),
        (
            "package.json",
            '{"workspaces": ["packages/*"],}',
            "manifest package.json: ",
        ),
        ("package.json", '{"workspaces": "packages/*"}', "workspaces must be a list of globs"),
        ("Cargo.toml", "[workspace]\nmembers = crates/*\n", "Cargo.toml: Invalid value"),
        ("go.work", "go 1.19\nuse (\n  ./a\n", "go.work: the use ( block is not closed"),
    ],
)
def test_a_broken_workspace_manifest_is_a_clear_error_naming_the_file(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(FatalError, match="cannot read the workspace manifest") as caught:
        find_workspace(tmp_path)
    assert said in str(caught.value)


def test_a_broken_member_manifest_is_named_by_its_path(tmp_path: Path) -> None:
    root = real(tmp_path, "remix-the-web")
    (root / "packages/headers/package.json").write_text('{"name": "@mjackson/headers",')
    with pytest.raises(FatalError, match=r"workspace manifest packages/headers/package\.json: "):
        find_workspace(root)


def test_detect_lists_packages_with_no_verifier_and_a_broken_manifest_exits_2(
    tmp_path: Path,
) -> None:
    root = real(tmp_path, "remix-the-web")
    cli = [sys.executable, "-m", "greenloop", "-C", str(root), "detect"]
    shown = subprocess.run(
        cli,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(120),
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "Packages (pnpm-workspace.yaml), dependencies first:" in shown.stdout
    assert (
        "no verifier: tar-parser-bench (packages/tar-parser/bench/package.json): "
        "no scripts.test in its package.json" in shown.stdout
    )
    as_json = subprocess.run(
        [*cli, "--format", "json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(120),
        check=False,
    )
    packages = json.loads(as_json.stdout)["workspace"]["packages"]
    scripts = next(p for p in packages if p["name"] == "remix-the-scripts")
    assert scripts["stages"] == []
    assert scripts["no_verifier"]
    (root / "pnpm-workspace.yaml").write_text("packages:\n  - 'packages/*\n")
    broken = subprocess.run(
        cli,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(120),
        check=False,
    )
    assert broken.returncode == 2
    assert "cannot read the workspace manifest pnpm-workspace.yaml: line 2" in broken.stderr
    assert "Traceback" not in broken.stderr


GO_MOD = "module example.com/{name}\n\ngo 1.19\n"


@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_go_list_deps_finds_a_module_that_imports_the_changed_one(tmp_path: Path) -> None:
    """go.work needs no require line for a sibling: only the import graph shows the dependent."""
    files = {
        "go.work": "go 1.19\n\nuse (\n\t./lib\n\t./app\n\t./other\n)\n",
        "lib/go.mod": GO_MOD.format(name="lib"),
        "lib/lib.go": "package lib\n\nfunc Two() int { return 2 }\n",
        "lib/lib_test.go": 'package lib\n\nimport "testing"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal("two")\n\t}\n}\n',
        "app/go.mod": GO_MOD.format(name="app"),
        "app/app.go": 'package app\n\nimport "example.com/lib"\n\nfunc Four() int { return lib.Two() * 2 }\n',
        "other/go.mod": GO_MOD.format(name="other"),
        "other/other.go": "package other\n\nfunc One() int { return 1 }\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    cascade = detect_cascade(tmp_path, Config())
    assert cascade is not None
    assert cascade.workspace is not None
    assert cascade.workspace.source == "go.work"
    scope = affected_cascade(cascade, ["lib/lib.go"], root=tmp_path)
    assert scope is not None
    assert scope.packages == (
        ("example.com/lib", ""),
        ("example.com/app", "imports example.com/lib (go list -deps)"),
    )
    assert [s.display for s in scope.cascade.stages] == [
        "cd lib && go test ./...",
        "cd app && go test ./...",
    ]


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_nx_projects_are_read_from_project_json_with_their_plain_commands(tmp_path: Path) -> None:
    project = {
        "name": "web",
        "implicitDependencies": ["ui"],
        "targets": {
            "test": {
                "executor": "nx:run-commands",
                "options": {"command": "node --test", "cwd": "apps/web"},
            },
            "lint": {"executor": "@nx/eslint:lint"},  # needs Nx: not run
        },
    }
    ui = {
        "name": "ui",
        "targets": {
            "test": {"executor": "nx:run-commands", "options": {"command": "make -C libs/ui test"}}
        },
    }
    write(
        tmp_path,
        {
            "nx.json": "{}",
            "apps/web/project.json": json.dumps(project),
            "libs/ui/project.json": json.dumps(ui),
        },
    )
    ws = workspace(tmp_path)
    assert ws.source == "Nx project.json"
    assert [(p.name, p.deps) for p in ws.packages] == [("ui", ()), ("web", ("ui",))]
    web = ws.packages[1]
    assert [(s.name, s.display) for s in web.stages] == [("test", "cd apps/web && node --test")]
    assert [s.display for s in ws.packages[0].stages] == ["make -C libs/ui test"]


def test_a_packages_own_agents_md_test_command_is_its_stage(tmp_path: Path) -> None:
    root = real(tmp_path, "rustc-demangle")
    (root / "crates/capi/AGENTS.md").write_text("Test command: `cargo test --lib`\n")
    capi = next(p for p in workspace(root).packages if p.path == "crates/capi")
    assert [(s.display, s.why) for s in capi.stages] == [
        ("cd crates/capi && cargo test --lib", "crates/capi: test command in AGENTS.md")
    ]


def test_cargo_workspace_dependencies_by_workspace_true_resolve_from_the_root(
    tmp_path: Path,
) -> None:
    crate = '[package]\nname = "{n}"\nversion = "0.1.0"\n\n[dependencies]\n{d}\n'
    write(
        tmp_path,
        {
            "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nexclude = ["crates/old"]\n\n'
            '[workspace.dependencies]\nshared = { path = "crates/shared" }\n',
            "crates/shared/Cargo.toml": crate.format(n="shared", d=""),
            "crates/app/Cargo.toml": crate.format(n="app", d="shared.workspace = true"),
            "crates/tool/Cargo.toml": crate.format(
                n="tool", d='renamed = { package = "shared", path = "../shared" }'
            ),
            "crates/old/Cargo.toml": crate.format(n="old", d=""),
        },
    )
    ws = workspace(tmp_path)
    assert deps(ws) == {"shared": (), "app": ("shared",), "tool": ("shared",)}
    assert [p.name for p in ws.packages] == ["shared", "app", "tool"]  # path deps first
    assert set(ws.dependents(["shared"])) == {"shared", "app", "tool"}


def test_several_pyproject_files_under_a_root_with_no_project_are_packages(tmp_path: Path) -> None:
    py = '[project]\nname = "{n}"\ndependencies = [{d}]\n\n[tool.pytest.ini_options]\n'
    write(
        tmp_path,
        {
            "packages/core/pyproject.toml": py.format(n="acme_core", d=""),
            "packages/api/pyproject.toml": py.format(n="acme-api", d='"Acme.Core>=1", "httpx"'),
            "tests/fixture/pyproject.toml": py.format(n="fixture", d=""),  # a fixture: no package
        },
    )
    ws = workspace(tmp_path)
    assert ws.source == "several pyproject.toml"
    assert deps(ws) == {"acme-core": (), "acme-api": ("acme-core",)}
    write(tmp_path, {"pyproject.toml": py.format(n="root", d="")})
    assert (
        find_workspace(tmp_path) is None
    )  # a root project with nested ones: fixtures, not packages


def test_the_plan_names_the_packages_with_no_verifier(tmp_path: Path) -> None:
    from greenloop.detect.packages import plan_line

    line = plan_line(workspace(real(tmp_path, "remix-the-web")))
    assert line.startswith("  packages (pnpm-workspace.yaml): 19 (10 with no verifier: ")
    assert "remix-the-scripts" in line
    assert "and 6 more); each iteration runs the packages its edit affects" in line


def serde_like(root: Path) -> Path:
    """serde's layout: serde_derive_internals/src is a tracked symlink to
    ../serde_derive/src/internals, so both crates compile those files."""
    member = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2021"\n'
    write(
        root,
        {
            "Cargo.toml": '[workspace]\nmembers = ["serde_derive", "serde_derive_internals", "other"]\n',
            "serde_derive/Cargo.toml": member.format("serde_derive"),
            "serde_derive/src/lib.rs": "mod internals;\n",
            "serde_derive/src/internals/mod.rs": "pub fn ast() {}\n",
            "serde_derive_internals/Cargo.toml": member.format("serde_derive_internals")
            + '\n[lib]\npath = "lib.rs"\n',
            "serde_derive_internals/lib.rs": '#[path = "src/mod.rs"]\nmod src;\n',
            "other/Cargo.toml": member.format("other"),
            "other/src/lib.rs": "pub fn other() {}\n",
        },
    )
    (root / "serde_derive_internals/src").symlink_to("../serde_derive/src/internals")
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def test_an_edit_behind_a_tracked_symlink_runs_the_package_that_links_to_it_too(
    tmp_path: Path,
) -> None:
    root = serde_like(tmp_path)
    cascade = detect_cascade(root, Config())
    assert cascade is not None
    scope = affected_cascade(cascade, ["serde_derive/src/internals/mod.rs"], root=root)
    assert scope is not None
    assert [name for name, _ in scope.packages] == ["serde_derive", "serde_derive_internals"]
    assert [s.display for s in scope.cascade.stages] == [
        "cd serde_derive && cargo test",
        "cd serde_derive_internals && cargo test",
    ]
    # a file no link reaches stays its own package's
    alone = affected_cascade(cascade, ["serde_derive/src/lib.rs"], root=root)
    assert alone is not None
    assert [name for name, _ in alone.packages] == ["serde_derive"]


def test_a_tracked_symlink_that_leaves_the_repository_is_no_alias(tmp_path: Path) -> None:
    root = serde_like(tmp_path / "repo")
    (root / "outside").symlink_to("../../elsewhere")
    subprocess.run(["git", "add", "outside"], cwd=root, check=True)
    from greenloop.git import tracked_symlinks

    assert tracked_symlinks(root) == {"serde_derive_internals/src": "serde_derive/src/internals"}
