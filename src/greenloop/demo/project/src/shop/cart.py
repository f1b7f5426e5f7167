"""A tiny shopping cart (greenloop's demo project: it has two real bugs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shop.pricing import apply_discount


@dataclass
class Cart:
    items: dict[str, tuple[int, int]] = field(default_factory=dict)
    """sku -> (unit price in cents, quantity)"""

    def add(self, sku: str, price_cents: int, quantity: int = 1) -> None:
        self.items[sku] = (price_cents, quantity)

    def subtotal(self) -> int:
        return sum(price * qty for price, qty in self.items.values())

    def total(self, code: str | None = None) -> int:
        return apply_discount(self.subtotal(), code)
