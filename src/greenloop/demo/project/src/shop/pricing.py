"""Discount codes."""

from __future__ import annotations

DISCOUNTS = {"TEN": 10, "HALF": 50}


def apply_discount(amount_cents: int, code: str | None) -> int:
    if code is None:
        return amount_cents
    percent = DISCOUNTS[code]
    return amount_cents - amount_cents * percent // 10
