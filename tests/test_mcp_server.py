"""``greenloop mcp`` end to end with the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from limits import hang

PY = sys.executable
CALC_BUG = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFIG = '[tool.greenloop]\n[[tool.greenloop.stage]]\nname = "test"\nrun = "{py} -m pytest -q -p no:cacheprovider"\n'


def call_tools(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start ``python -m greenloop -C root mcp`` and call the tools in order over stdio."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=PY, args=["-m", "greenloop", "-C", str(root), "mcp"], env=dict(os.environ)
    )

    async def session() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            names = {t.name for t in listed.tools}
            assert {"verify", "detect", "last_report"} <= names
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def payload(result: Any) -> dict[str, Any]:
    assert not getattr(result, "is_error", getattr(result, "isError", False)), result
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def test_verify_over_stdio_reports_the_failing_test(make_repo: Callable[..., Path]) -> None:
    root = make_repo(
        {"calc.py": CALC_BUG, "test_calc.py": TESTS, "pyproject.toml": CONFIG.format(py=PY)}
    )
    verify, detect = call_tools(root, [("verify", {}), ("detect", {})])
    data = payload(verify)
    assert data["verdict"] == "failed"
    assert data["exit_code"] == 1
    assert "test_calc.py::test_add" in data["digest"]
    stages = payload(detect)["stages"]
    assert [s["name"] for s in stages] == ["test"]


def test_verify_runs_a_given_command_instead_of_the_cascade(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": CALC_BUG, "test_calc.py": TESTS})
    command = f"{PY} -c 'import sys; sys.exit(0)'"
    (green,) = call_tools(root, [("verify", {"command": command})])
    data = payload(green)
    assert data["verdict"] == "green"
    assert data["stages"][0]["command"] == command


def test_last_report_without_runs_says_so(make_repo: Callable[..., Path]) -> None:
    root = make_repo({"README.md": "x\n"})
    (last,) = call_tools(root, [("last_report", {})])
    assert "no runs yet" in payload(last)["error"]


def test_mcp_without_the_sdk_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = tmp_path / "block"
    blocker.mkdir()
    # A module finder that hides the installed SDK, as on a machine without the extra.
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mcp' or name.startswith('mcp.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    out = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(tmp_path), "mcp"],
        check=False,
        capture_output=True,
        text=True,
        timeout=hang(60),
        env=env,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == "greenloop mcp needs the MCP SDK: pip install 'greenloop[mcp]'"
