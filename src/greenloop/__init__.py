"""greenloop: wrap any code-editing agent in a bounded, honest verify -> fix loop."""

from __future__ import annotations

__version__ = "0.1.0"
