"""Errors the user must fix: one clear line, no traceback, exit 2."""

from __future__ import annotations


class FatalError(Exception):
    """A precondition or configuration problem, with the fix in the message."""


class NotStarted(Exception):
    """The user declined at the pre-flight prompt: nothing was run, touched or recorded."""
