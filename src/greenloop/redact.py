"""Secret redaction: the digest goes to a third-party model, logs to disk."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PASSWD|CREDENTIAL|AUTH|^AWS_|PRIVATE", re.I)
# Values too short or too common to be worth hiding (and hiding them would mangle the text).
_MIN_SECRET_LEN = 6
_BORING = frozenset({"true", "false", "none", "null", "1", "0", "yes", "no"})
TOKEN_SHAPES = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bAIza[0-9A-Za-z_-]{35}",
    re.S,
)


def secret_values(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Values of environment variables whose names look secret, longest first."""
    values = {
        v
        for k, v in environ.items()
        if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN and v.lower() not in _BORING
    }
    return tuple(sorted(values, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """Replace secret values and well-known token shapes with ``[REDACTED]``."""
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return TOKEN_SHAPES.sub(REDACTED, text)
