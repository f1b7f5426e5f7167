"""A tiny shopping cart with two real bugs, for trying greenloop."""

from __future__ import annotations

from dataclasses import dataclass, field

from shop.pricing import apply_discount


@dataclass
class Cart:
    items: dict[str, tuple[int, int]] = field(default_factory=dict)
    """sku -> (unit price in cents, quantity)"""

    def add(self, sku: str, price_cents: int, quantity: int = 1) -> None:
        _, held = self.items.get(sku, (price_cents, 0))
        self.items[sku] = (price_cents, quantity)  # bug: forgets what was already held

    def subtotal(self) -> int:
        return sum(price * qty for price, qty in self.items.values())

    def total(self, code: str | None = None) -> int:
        return apply_discount(self.subtotal(), code)
