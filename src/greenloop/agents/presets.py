"""Presets: the exact commands greenloop runs for the agent CLIs it knows.

Each command runs through ``sh -c`` in the repo root with the prompt on stdin and in
``$GREENLOOP_PROMPT_FILE`` (``{prompt_file}`` is replaced, shell-quoted). None of them
names a model: the user's own settings for that CLI decide. Every preset is tested
against the real CLI (``tests/test_presets.py``, versions pinned in
``scripts/install_agent_clis.sh``); ``docs/agents.md`` explains each flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A known agent CLI: the command it runs and the executable that must be on PATH."""

    name: str
    executable: str
    first: str
    """Command for iteration 1 (a shell string; ``{prompt_file}`` is replaced, quoted)."""
    later: str
    """Command from iteration 2 on (continuing the agent's own conversation where it can)."""
    env: tuple[tuple[str, str], ...] = ()
    doc: str = ""

    @property
    def continues(self) -> bool:
        """False when ``later`` is ``first``: every iteration is a fresh session of the CLI, and
        the iteration prompt carries the task, the digest and the rules."""
        return self.later != self.first


PRESETS: dict[str, Preset] = {}


def register(preset: Preset) -> None:
    PRESETS[preset.name] = preset


_CLAUDE = "claude -p --output-format json --permission-mode acceptEdits"

CLAUDE = Preset(
    name="claude",
    executable="claude",
    first=_CLAUDE,
    later=f"{_CLAUDE} --continue",
    # an auto-update in the middle of a run would change the agent between iterations
    env=(("DISABLE_AUTOUPDATER", "1"),),
    doc=(
        "Claude Code headless (`claude -p`), prompt on stdin, file edits accepted without asking "
        "(`--permission-mode acceptEdits`; shell commands stay denied), one JSON result object "
        "(session_id, result, num_turns, total_cost_usd) in the run record. From iteration 2 "
        "`--continue` resumes the most recent conversation in the repo root: iteration 1's, "
        "since greenloop owns the tree during a run."
    ),
)


def _aider_file(suffix: str) -> str:
    """A file in the run record: outside the work tree (never committed), one per run."""
    run_dir = (
        "$(git rev-parse --path-format=absolute --git-common-dir)/greenloop/runs/$GREENLOOP_RUN_ID"
    )
    return f'"{run_dir}/aider.{suffix}"'


_AIDER = (
    "aider --yes-always --no-auto-commits --no-dirty-commits --no-auto-test --no-auto-lint"
    " --no-check-update --no-show-release-notes --no-analytics --no-detect-urls"
    " --no-suggest-shell-commands --no-fancy-input --no-pretty"
    f" --chat-history-file {_aider_file('chat.history.md')}"
    f" --input-history-file {_aider_file('input.history')}"
)

AIDER = Preset(
    name="aider",
    executable="aider",
    first=f"{_AIDER} --message-file {{prompt_file}}",
    later=f"{_AIDER} --restore-chat-history --message-file {{prompt_file}}",
    doc=(
        "Aider one-shot (`--message-file`), every question answered yes, no model flags (your "
        ".aider.conf.yml / AIDER_* env decide), no auto-test or auto-lint (greenloop verifies), "
        "no auto-commits (greenloop commits each iteration), no update check, analytics, URL "
        "scraping or shell suggestions. Its chat history is kept in the run record; from "
        "iteration 2 `--restore-chat-history` replays it."
    ),
)

_CODEX = "-c sandbox_mode=workspace-write -c approval_policy=never"

CODEX = Preset(
    name="codex",
    executable="codex",
    first=f"codex exec {_CODEX} -",
    later=f"codex exec resume --last {_CODEX} -",
    doc=(
        "Codex CLI non-interactive (`codex exec`), prompt from stdin (`-`), edits inside the "
        "workspace allowed by its sandbox (`sandbox_mode=workspace-write`), never asking for "
        "approval. From iteration 2 `codex exec resume --last` continues the most recent "
        "session in the repo root."
    ),
)

_GEMINI = "gemini --skip-trust --approval-mode auto_edit --output-format json"

GEMINI = Preset(
    name="gemini",
    executable="gemini",
    first=_GEMINI,
    later=f"{_GEMINI} --resume latest",
    doc=(
        "Gemini CLI headless (prompt on stdin, not a terminal), file edits auto-approved "
        "(`--approval-mode auto_edit`; its edit tools are only offered in that mode), the repo "
        "trusted for this call (`--skip-trust`; else it exits 55 in an untrusted folder), one JSON "
        "result (session_id, response, stats). From iteration 2 `--resume latest` continues "
        "the most recent session of the repo."
    ),
)

for _preset in (CLAUDE, AIDER, CODEX, GEMINI):
    register(_preset)

_OPENHANDS = "openhands --headless --json"

OPENHANDS = Preset(
    name="openhands",
    executable="openhands",
    first=f"{_OPENHANDS} -f {{prompt_file}}",
    later=f"{_OPENHANDS} --resume --last -f {{prompt_file}}",
    env=(("OPENHANDS_SUPPRESS_BANNER", "1"),),
    doc=(
        "OpenHands CLI headless (`--headless`: no UI, every action auto-approved), the prompt "
        "from the prompt file (`-f`), JSONL events (`--json`) in the run record; it edits the "
        "repo directly with its file_editor tool (no container). Model, key and base URL come "
        "from its own `~/.openhands/agent_settings.json`. From iteration 2 `--resume --last` "
        "continues its most recent conversation."
    ),
)
register(OPENHANDS)

# Read instead of the user's ~/.cline/data/settings/global-settings.json for the run: the
# run_commands tool is not offered (greenloop runs the verifier), no self-update, no telemetry.
CLINE_SETTINGS = Path(__file__).with_name("cline-global-settings.json")
_CLINE = 'cline --json "$(cat {prompt_file})"'

CLINE = Preset(
    name="cline",
    executable="cline",
    first=_CLINE,
    later=_CLINE,
    env=(
        ("CLINE_GLOBAL_SETTINGS_PATH", str(CLINE_SETTINGS)),
        # in-process sessions: no detached hub daemon outlives the iteration
        ("CLINE_SESSION_BACKEND_MODE", "local"),
        ("CLINE_NO_AUTO_UPDATE", "1"),
    ),
    doc=(
        "Cline CLI non-interactive (`--json`: act mode, tools auto-approved, one JSON event per "
        "line), the prompt as its argument (it reads no prompt from stdin in this mode). Its "
        "global settings for the run are greenloop's (`disabledTools: [run_commands]`: file "
        "edits go through, shell commands are not offered; no auto-update, no telemetry). "
        "Provider, model and key come from its own `~/.cline/data/settings/providers.json` "
        "(`cline auth`). Every iteration is a fresh session: `--id` resumes only in its "
        "interactive TUI, so the prompt (task, digest, rules) carries the context."
    ),
)
register(CLINE)
