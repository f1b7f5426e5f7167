"""aider's own loop with greenloop as its test command, run for real.

``aider --test-cmd "greenloop check" --auto-test``: after every reply that edited a
file, aider runs the test command; on a non-zero exit it puts the command's output in
the chat ("I ran this command: … And got this output: …") and, once the user agrees
("Attempt to fix test errors?", answered by ``--yes-always``), sends it to the model as
the next message. It stops when the command exits 0, when a reply edits nothing, or
after 3 such reflections per message. So the model sees greenloop's digest, never
pytest's raw dump.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYPROJECT = f"""[[tool.greenloop.stage]]
name = "test"
run = "{sys.executable} -m pytest -q -p no:cacheprovider"
"""

# Reply 1 edits calc.py without fixing it, so aider runs the test command.
NOT_A_FIX = """I'll document add().

calc.py
```
<<<<<<< SEARCH
def add(a, b):
=======
def add(a, b):
    \"\"\"The sum of a and b.\"\"\"
>>>>>>> REPLACE
```
"""

THE_FIX = """The operator is wrong.

calc.py
```
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE
```
"""

FIXED = 'def add(a, b):\n    """The sum of a and b."""\n    return a + b\n'

AIDER_FLAGS = (
    "--model=openai/replay-model",
    "--weak-model=openai/replay-weak",
    "--edit-format=diff",
    "--no-show-model-warnings",
    "--yes-always",
    "--no-auto-commits",
    "--no-dirty-commits",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-detect-urls",
    "--no-suggest-shell-commands",
    "--no-fancy-input",
    "--no-pretty",
)


def seed_aider_model_cache(home: Path) -> None:
    """Aider fetches litellm's model price list unless a fresh non-empty cache exists."""
    cache = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    info = {"max_input_tokens": 128000, "max_output_tokens": 4096, "litellm_provider": "openai"}
    cache.write_text(json.dumps({"replay-model": {**info, "mode": "chat"}}))


def last_user_message(request: Mapping[str, Any]) -> str:
    users = [m for m in request["messages"] if m.get("role") == "user"]
    content = users[-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def run_aider(repo: Path, home: Path, server: ReplayServer) -> tuple[int, str]:
    """``aider --test-cmd "greenloop check" --auto-test --message "fix the bug"``: exit, output."""
    bin_dir = require_cli("aider")
    seed_aider_model_cache(home)
    # `greenloop` (next to this interpreter) must be on the PATH aider runs --test-cmd with
    environ = clean_environ(
        home,
        Path(sys.executable).parent,
        bin_dir,
        OPENAI_API_BASE=server.base_url,
        OPENAI_API_KEY="sk-dummy",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    command = [
        str(bin_dir / "aider"),
        *AIDER_FLAGS,
        "--test-cmd=greenloop check",
        "--auto-test",
        "--message=fix the bug",
        "calc.py",
    ]
    done = subprocess.run(
        command,
        cwd=repo,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=hang(240),
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def replay(script: list[Reply]) -> ReplayServer:
    """The scripted model; aider's weak model (chat summaries) gets side answers."""
    return ReplayServer(script, api="chat", is_side=lambda body: body.get("model") == "replay-weak")


def test_aider_auto_test_sends_greenloops_digest_back_until_the_suite_is_green(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo({"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": PYPROJECT})
    with replay([Reply.say(NOT_A_FIX), Reply.say(THE_FIX)]) as server:
        exit_code, output = run_aider(repo, tmp_path / "home", server)
    assert exit_code == 0, output
    assert (repo / "calc.py").read_text() == FIXED, output
    # 1: "fix the bug"; 2: greenloop's failing digest; then greenloop check exits 0
    assert len(server.main_requests) == 2, output
    assert server.remaining == 0
    # aider appends its SEARCH/REPLACE rules reminder to the last user message
    assert last_user_message(server.main_requests[0]).startswith("fix the bug\n")
    fed_back = last_user_message(server.main_requests[1])
    assert fed_back.startswith("I ran this command:\n\ngreenloop check\n\nAnd got this output:")
    assert "The verifier failed (exit 1" in fed_back
    assert "FIRST FAILING TEST: test_calc.py::test_add" in fed_back
    assert "assert -1 == 5" in fed_back
    # aider keeps the output in the chat (user turn + "Ok.") and also sends it as the next
    # message, so the digest is in request 2 twice; pytest's own report is not in it at all
    sent = json.dumps(server.main_requests[1])
    assert sent.count("FIRST FAILING TEST: test_calc.py::test_add") == 2
    assert "=== FAILURES ===" not in sent
    assert "short test summary info" not in sent
    history = (repo / ".aider.chat.history.md").read_text()
    assert history.count("Attempt to fix test errors? (Y)es/(N)o [Yes]: y") == 1
    assert "greenloop: GREEN" in output


def not_a_fix(n: int) -> Reply:
    """An edit that applies but leaves the test failing."""
    return Reply.say(
        f"Attempt {n}.\n\ncalc.py\n```\n<<<<<<< SEARCH\ndef add(a, b):\n=======\n"
        f"def add(a, b):\n    # attempt {n}\n>>>>>>> REPLACE\n```\n"
    )


def test_aider_stops_after_three_test_reflections_with_the_suite_still_failing(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo({"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": PYPROJECT})
    with replay([not_a_fix(n) for n in range(1, 6)]) as server:
        exit_code, output = run_aider(repo, tmp_path / "home", server)
    # aider's own bound (max_reflections = 3, no flag): the message plus 3 test reflections;
    # it then exits 0 although the suite is still red
    assert exit_code == 0, output
    assert len(server.main_requests) == 4, output
    assert server.remaining == 1
    assert "Only 3 reflections allowed, stopping." in output
    assert output.count("greenloop: FAILED") == 4
    assert "# attempt 4\n" in (repo / "calc.py").read_text()


def test_aider_runs_no_test_when_the_reply_edits_nothing(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo({"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": PYPROJECT})
    with replay([Reply.say("The code looks correct to me.")]) as server:
        exit_code, output = run_aider(repo, tmp_path / "home", server)
    assert exit_code == 0, output
    assert len(server.main_requests) == 1, output
    assert "greenloop: " not in output  # the test command never ran
    assert (repo / "calc.py").read_text() == CALC
