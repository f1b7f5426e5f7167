"""GitLab's ``.gitlab-ci.yml`` -> the verification commands of the jobs that run on a merge request
(issue 38). ``before_script`` is set-up; ``after_script`` runs whatever happened; a job of the
``deploy`` or ``release`` stage, a manual one, a hidden one (``.name``) and one that reads a CI/CD
variable holding a secret are listed as skipped."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from greenloop.detect.ci_yaml import line_of

if TYPE_CHECKING:
    from greenloop.detect.ci import _Found

RESERVED = {
    "stages", "variables", "default", "include", "workflow", "image", "services", "before_script",
    "after_script", "cache", "pages_job", "types",
}  # fmt: skip
SKIPPED_STAGES = ("deploy", "release", "publish", "pages", "upload")
SECRET_WORDS = ("TOKEN", "PASSWORD", "SECRET", "API_KEY", "PRIVATE_KEY", "CREDENTIALS")


def read_gitlab(path: str, doc: Any, found: _Found) -> None:
    if not isinstance(doc, dict):
        return
    env = _variables(doc.get("variables"))
    for name, job in doc.items():
        if name in RESERVED or not isinstance(job, dict):
            continue
        _job(path, name, _extended(job, doc), env, found)


def _extended(job: dict[str, Any], doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The job with what its ``extends:`` templates give it (theirs first, the job's own last)."""
    parents = job.get("extends")
    names = [parents] if isinstance(parents, str) else parents if isinstance(parents, list) else []
    merged: dict[str, Any] = {}
    for parent in names:
        base = doc.get(str(parent))
        if isinstance(base, dict) and depth < 10:
            merged = _deep_merge(merged, _extended(base, doc, depth + 1))
    return _deep_merge(merged, job)


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """GitLab's ``extends``: hashes (``variables``) merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = (
            _deep_merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
        )
    return out


def _job(path: str, name: str, job: dict[str, Any], env: dict[str, str], found: _Found) -> None:
    from greenloop.detect.ci import take_lines

    where = f"{path}:{line_of(name)}"
    stage = str(job.get("stage", "test"))
    reason = _not_run(name, job, stage)
    if reason:
        found.skip(where, f"job {name}", reason)
        return
    script = job.get("script")
    lines = [script] if isinstance(script, str) else script if isinstance(script, list) else []
    job_env = {**env, **_variables(job.get("variables"))}
    for line in lines:
        if not isinstance(line, str):
            continue
        if any(f"${word}" in line or f"${{{word}" in line for word in _secret_names(line)):
            found.skip(f"{path}:{line_of(line)}", line, "reads a secret (a CI/CD variable)")
            continue
        checks = stage if re.search(r"test|check|lint|verify|build", stage) else ""
        take_lines(path, name, _expand(line, job_env), job_env, "", {}, found, checks=checks)


def _not_run(name: str, job: dict[str, Any], stage: str) -> str:
    if name.startswith("."):
        return "a hidden job (a template)"
    if job.get("when") == "manual":
        return "runs only when started by hand"
    if any(word in stage.lower() for word in SKIPPED_STAGES):
        return f"stage {stage}: deploys or publishes"
    if job.get("trigger") is not None:
        return "triggers another pipeline"
    only = job.get("only")
    if isinstance(only, list) and only and not {"merge_requests", "branches", "pushes"} & set(only):
        return f"only: {', '.join(map(str, only))} (not merge requests)"
    tags = " ".join(map(str, job.get("tags") or [])) if isinstance(job.get("tags"), list) else ""
    if re.search(r"win|mac|osx|arm64", tags, re.I):
        return f"runs on runners tagged {tags}: cannot run here"
    rules = job.get("rules")
    if isinstance(rules, list) and rules and not any(_rule_may_run(r) for r in rules):
        return "its rules run it on branch or tag pipelines only, not merge requests"
    return ""


def _rule_may_run(rule: object) -> bool:
    """Whether a ``rules:`` entry can add the job to a merge request pipeline."""
    if not isinstance(rule, dict):
        return True
    if str(rule.get("when", "")) == "never":
        return False
    condition = str(rule.get("if", ""))
    if not condition:
        return True
    if "merge_request" in condition or "CI_PIPELINE_SOURCE" in condition:
        return "!=" not in condition or "merge_request" not in condition
    return not re.search(r"CI_COMMIT_(BRANCH|TAG)|CI_DEFAULT_BRANCH", condition)


def _secret_names(line: str) -> list[str]:
    words = []
    for part in line.replace("{", " ").replace("}", " ").split("$")[1:]:
        name = part.split()[0] if part.split() else ""
        name = "".join(c for c in name if c.isalnum() or c == "_")
        if any(secret in name.upper() for secret in SECRET_WORDS):
            words.append(name)
    return words


def _variables(table: object) -> dict[str, str]:
    if not isinstance(table, dict):
        return {}
    out = {}
    for key, value in table.items():
        text = value.get("value", "") if isinstance(value, dict) else value
        if isinstance(text, str) and "$" not in text and not _secret_names(f"${key}"):
            out[str(key)] = text
    return out


def _expand(line: str, env: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` of the job's variables filled in (``- $PYTHON_CHECK_COMMAND``),
    the line's position kept for its origin."""
    from greenloop.detect.ci_yaml import Text, line_of

    def fill(m: re.Match[str]) -> str:
        return env.get(m.group(1) or m.group(2), m.group(0))

    expanded = re.sub(r"\$\{(\w+)\}|\$(\w+)", fill, line)
    return Text(expanded, line_of(line), block=getattr(line, "block", False))
