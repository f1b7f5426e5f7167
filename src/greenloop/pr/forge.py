"""What ``greenloop pr`` needs from a code forge (GitHub, GitLab), and the pull request it runs on.

A forge client is small: find and keep up to date one comment of greenloop's own on the pull
request, open a pull request, and publish a check (a verdict with annotations) on a commit.
``github.py`` implements it over GitHub's REST API, ``gitlab.py`` over GitLab's; the flow
(``flow.py``) only ever sees this Protocol. Every body a client sends has passed ``redact``.

Each client module also has ``client_from_env(environ, *, base, need_token)`` returning
``(PrContext, Forge | None)``: the pull request from the CI job's variables, and a client when
there is a token (``need_token``: a missing one is a ``FatalError``, exit 2). ``greenloop pr
--forge NAME`` imports ``greenloop.pr.NAME`` and calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

COMMENT_MARKER = "<!-- greenloop:pr-comment -->"
"""The hidden line that finds greenloop's one comment again on a later run (edited in place)."""


class ForgeError(Exception):
    """A forge request failed (HTTP status, network); the message is already redacted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrContext:
    """The pull request (GitLab: merge request) a run is about, as the CI event names it."""

    repo: str
    """The base repository: ``owner/name`` (GitLab: the project's path, ``group/project``)."""
    number: int
    """The pull request's number (GitLab: the merge request's iid)."""
    head_ref: str
    """The branch the pull request merges from (``feature``), without ``refs/heads/``."""
    base_ref: str
    """The branch it merges into (``main``)."""
    head_repo: str
    """Where the head branch lives: ``repo`` itself, or a fork's ``owner/name``."""
    head_sha: str = ""
    """The head commit the event names (``""`` when it names none)."""
    fork: bool = False
    """The head is in another repository (a fork): the job's token cannot push there."""
    url: str = ""
    """The pull request's web page."""
    event: str = ""
    """The event that started the job (``pull_request``, ``check_run``, ``merge_request`` …)."""
    failing_check: str = ""
    """The CI check whose failure started the job (issue 38): a ``check_run``'s name (the job's
    name) or a ``workflow_run``'s workflow file; ``""`` when the event names none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment:
    id: str
    body: str
    url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequest:
    number: int
    url: str
    head_ref: str
    base_ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotation:
    """A failure placed on a repository file (never the standard library's)."""

    path: str
    line: int
    message: str
    title: str = ""
    level: str = "failure"
    """``failure``, ``warning`` or ``notice`` (GitHub's check-run annotation levels)."""


class Forge(Protocol):
    """A forge client bound to one pull request (``context``) and one token."""

    name: str
    """``github`` or ``gitlab``."""
    context: PrContext

    def find_comment(self, marker: str = COMMENT_MARKER) -> Comment | None:
        """Greenloop's comment on the pull request: the first whose body holds ``marker``."""
        ...

    def upsert_comment(self, body: str, marker: str = COMMENT_MARKER) -> Comment:
        """Edit greenloop's comment in place, or create it (``body`` must hold ``marker``)."""
        ...

    def open_pull(self, *, head: str, base: str, title: str, body: str) -> PullRequest:
        """Open a pull request from branch ``head`` (already pushed) into ``base``."""
        ...

    def publish_check(
        self,
        *,
        sha: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: Sequence[Annotation] = (),
    ) -> str:
        """Report the verdict on commit ``sha`` (``success``, ``failure``, ``neutral``), with the
        failures placed on files; the check's URL, ``""`` when the forge or token has none."""
        ...
