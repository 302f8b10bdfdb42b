"""Security profiles of a station's connection (decisions.md "Security profiles", OCPP Security Whitepaper).

Profile 0: no password (OCPP 1.6 only). Profile 1: HTTP Basic over ws or wss. Profile 2: HTTP Basic over TLS.
Profile 3: TLS with a client certificate and no password: the certificate is issued by the company's station CA,
its subject CN is the station id (or the station record's serial number when it has one), its O is the company's
organisation name when the company has one set, and it is valid now.

`decide` answers a handshake from facts gathered elsewhere (scheme, credentials, the certificate's facts); it reads
nothing and is the one place these rules are written. A profile may be raised at any time; lowering it
(`is_lowering`) is an owner's act, and the station must then be reconfigured on site.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum, IntEnum

from chargenet.errors import InvalidInput


class SecurityProfile(IntEnum):
    NO_PASSWORD = 0
    BASIC = 1
    BASIC_OVER_TLS = 2
    CLIENT_CERTIFICATE = 3


DEFAULT_PROFILE = SecurityProfile.BASIC


def parse_profile(value: int | str) -> SecurityProfile:
    try:
        return SecurityProfile(int(value))
    except (TypeError, ValueError):
        raise InvalidInput(f"{value!r} is not a security profile (0, 1, 2 or 3)", field="security-profile") from None


def is_lowering(current: SecurityProfile, wanted: SecurityProfile) -> bool:
    return wanted < current


class Credentials(Enum):
    """What the handshake's `Authorization` header proved."""

    ABSENT = "absent"
    VALID = "valid"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class CertificateFacts:
    """What a client certificate says, as read by whoever parsed it (the edge; nothing here parses)."""

    issued_by_station_ca: bool  # its signature verifies with the company's station CA's key
    common_name: str | None
    organisation: str | None
    not_before: datetime
    not_after: datetime


@dataclass(frozen=True, slots=True)
class Expectations:
    """What a profile 3 certificate must name: `common_name` is the station id, or the record's serial number."""

    common_name: str
    organisation: str | None  # None: the company has no organisation name set, so O is not checked


class Refusal(Enum):
    """Why a handshake is refused; the value is the metrics label and the word shown on the station page."""

    PLAIN_WS = "plain_ws"  # profile 2 or 3 over ws://
    BAD_CREDENTIALS = "bad_credentials"  # profile 1 or 2 without the right password
    PASSWORD_INSTEAD_OF_CERTIFICATE = "password_instead_of_certificate"  # noqa: S105 - profile 3, a password, no certificate
    NO_CERTIFICATE = "no_certificate"  # profile 3, neither
    UNKNOWN_CA = "unknown_ca"  # not issued by the company's station CA (or the company has none)
    WRONG_COMMON_NAME = "wrong_common_name"
    WRONG_ORGANISATION = "wrong_organisation"
    EXPIRED = "expired"  # outside its validity period, not yet valid included

    @property
    def status(self) -> int:
        """The HTTP status the handshake is answered with: 401 asks for a password, 403 refuses what was shown."""
        return 401 if self is Refusal.BAD_CREDENTIALS else 403

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Refusal.PLAIN_WS: "the station's security profile needs TLS (wss://)",
    Refusal.BAD_CREDENTIALS: "missing or wrong password",
    Refusal.PASSWORD_INSTEAD_OF_CERTIFICATE: "a password where a client certificate is required",
    Refusal.NO_CERTIFICATE: "no client certificate",
    Refusal.UNKNOWN_CA: "the client certificate is not issued by the company's station CA",
    Refusal.WRONG_COMMON_NAME: "the client certificate's CN is not the station's",
    Refusal.WRONG_ORGANISATION: "the client certificate's O is not the company's organisation name",
    Refusal.EXPIRED: "the client certificate is expired or not yet valid",
}


def decide(
    profile: SecurityProfile,
    *,
    tls: bool,
    credentials: Credentials,
    certificate: CertificateFacts | None,
    expected: Expectations,
    now: datetime,
) -> Refusal | None:
    """None: accept the handshake; else why it is refused. A certificate shown at profile 1 or 2 is not looked at,
    and a password shown with a good certificate at profile 3 is not either: it never stands in for one."""
    if profile is SecurityProfile.NO_PASSWORD:
        return None
    if profile >= SecurityProfile.BASIC_OVER_TLS and not tls:
        return Refusal.PLAIN_WS
    if profile in (SecurityProfile.BASIC, SecurityProfile.BASIC_OVER_TLS):
        return None if credentials is Credentials.VALID else Refusal.BAD_CREDENTIALS
    if certificate is None:
        return Refusal.NO_CERTIFICATE if credentials is Credentials.ABSENT else Refusal.PASSWORD_INSTEAD_OF_CERTIFICATE
    if not certificate.issued_by_station_ca:
        return Refusal.UNKNOWN_CA
    if not certificate.not_before <= now <= certificate.not_after:
        return Refusal.EXPIRED
    if certificate.common_name != expected.common_name:
        return Refusal.WRONG_COMMON_NAME
    if expected.organisation is not None and certificate.organisation != expected.organisation:
        return Refusal.WRONG_ORGANISATION
    return None
