"""Which addresses a webhook may connect to (decisions.md §4, "Private webhook targets").

Pure policy over `ipaddress` values. The sender applies it to every address a name resolves to, at connect
time, so a name that resolves to a public address when the webhook is created and to a private one later
(DNS rebinding) is still refused. Refused unless the operator allows private targets
(`CHARGENET_WEBHOOK_ALLOW_PRIVATE=1`): loopback, private, link-local, multicast, unspecified and reserved
ranges, including IPv4 addresses carried inside IPv6 (mapped, 6to4, Teredo) and the shared address space
of carrier-grade NAT. Multicast and the unspecified address are refused even when private ones are allowed,
since no HTTP server can be reached there.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
_BENCHMARKING = ipaddress.IPv4Network("198.18.0.0/15")


class AddressClass(StrEnum):
    PUBLIC = "public"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    LINK_LOCAL = "link-local"
    MULTICAST = "multicast"
    UNSPECIFIED = "unspecified"
    RESERVED = "reserved"


_NEVER_ALLOWED = frozenset({AddressClass.MULTICAST, AddressClass.UNSPECIFIED})


@dataclass(frozen=True, slots=True)
class AddressDecision:
    address: IPAddress
    address_class: AddressClass
    allowed: bool

    @property
    def reason(self) -> str:
        if self.allowed:
            return f"{self.address} is allowed"
        if self.address_class in _NEVER_ALLOWED:
            return f"{self.address} is a {self.address_class.value} address"
        return (
            f"{self.address} is a {self.address_class.value} address; "
            "private webhook targets need CHARGENET_WEBHOOK_ALLOW_PRIVATE=1"
        )


def classify(address: IPAddress) -> AddressClass:
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return classify(embedded)
    if address.is_unspecified:
        return AddressClass.UNSPECIFIED
    if address.is_loopback:
        return AddressClass.LOOPBACK
    if address.is_multicast:
        return AddressClass.MULTICAST
    if address.is_link_local:
        return AddressClass.LINK_LOCAL
    if isinstance(address, ipaddress.IPv4Address) and (address in _SHARED_ADDRESS_SPACE or address in _BENCHMARKING):
        return AddressClass.RESERVED
    if address.is_reserved:
        return AddressClass.RESERVED
    if address.is_private:
        return AddressClass.PRIVATE
    if not address.is_global:
        return AddressClass.RESERVED
    return AddressClass.PUBLIC


def check_address(address: IPAddress | str, *, allow_private: bool) -> AddressDecision:
    """Whether a webhook may connect to `address`. Raises ValueError for a string that is not an IP address."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    address_class = classify(ip)
    if address_class is AddressClass.PUBLIC:
        allowed = True
    elif address_class in _NEVER_ALLOWED:
        allowed = False
    else:
        allowed = allow_private
    return AddressDecision(ip, address_class, allowed)


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None
