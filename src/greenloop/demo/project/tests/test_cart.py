from shop.cart import Cart


def test_adding_the_same_item_twice_adds_up_the_quantity() -> None:
    cart = Cart()
    cart.add("apple", 50)
    cart.add("apple", 50, quantity=2)
    assert cart.subtotal() == 150


def test_empty_cart_costs_nothing() -> None:
    assert Cart().total() == 0


def test_total_without_a_code_is_the_subtotal() -> None:
    cart = Cart()
    cart.add("pear", 120, quantity=2)
    assert cart.total() == 240


def test_a_discount_code_applies_to_the_whole_cart() -> None:
    cart = Cart()
    cart.add("pear", 120, quantity=2)
    assert cart.total("HALF") == 120
