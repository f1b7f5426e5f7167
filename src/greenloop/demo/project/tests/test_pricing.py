import pytest
from shop.pricing import apply_discount


def test_ten_percent_off() -> None:
    assert apply_discount(1000, "TEN") == 900


def test_half_price() -> None:
    assert apply_discount(1000, "HALF") == 500


def test_no_code_no_discount() -> None:
    assert apply_discount(1000, None) == 1000


def test_unknown_code_is_rejected() -> None:
    with pytest.raises(KeyError):
        apply_discount(1000, "FREE")
