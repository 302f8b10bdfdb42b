from __future__ import annotations

import pytest

from chargenet.webhooks.addresses import AddressClass, check_address


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", AddressClass.LOOPBACK),
        ("::1", AddressClass.LOOPBACK),
        ("10.1.2.3", AddressClass.PRIVATE),
        ("172.16.0.1", AddressClass.PRIVATE),
        ("192.168.1.1", AddressClass.PRIVATE),
        ("fd00::1", AddressClass.PRIVATE),
        ("169.254.169.254", AddressClass.LINK_LOCAL),
        ("fe80::1", AddressClass.LINK_LOCAL),
        ("224.0.0.1", AddressClass.MULTICAST),
        ("ff02::1", AddressClass.MULTICAST),
        ("0.0.0.0", AddressClass.UNSPECIFIED),
        ("240.0.0.1", AddressClass.RESERVED),
        ("100.64.0.1", AddressClass.RESERVED),
        ("198.18.0.1", AddressClass.RESERVED),
        ("::ffff:127.0.0.1", AddressClass.LOOPBACK),
        ("2002:0a00:0001::1", AddressClass.PRIVATE),
    ],
)
def test_non_public_address_is_refused_by_default(address: str, expected: AddressClass) -> None:
    decision = check_address(address, allow_private=False)
    assert (decision.address_class, decision.allowed) == (expected, False)


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8"])
def test_public_address_is_allowed(address: str) -> None:
    assert check_address(address, allow_private=False).allowed


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.5", "fe80::1"])
def test_private_address_is_allowed_when_the_operator_allows_it(address: str) -> None:
    assert check_address(address, allow_private=True).allowed


@pytest.mark.parametrize("address", ["0.0.0.0", "239.1.1.1"])
def test_multicast_and_unspecified_stay_refused_when_private_is_allowed(address: str) -> None:
    assert not check_address(address, allow_private=True).allowed


def test_refusal_reason_names_the_address_and_the_setting() -> None:
    reason = check_address("10.0.0.5", allow_private=False).reason
    assert reason == "10.0.0.5 is a private address; private webhook targets need CHARGENET_WEBHOOK_ALLOW_PRIVATE=1"


def test_text_that_is_not_an_address_raises_value_error() -> None:
    with pytest.raises(ValueError):
        check_address("partner.example", allow_private=False)
