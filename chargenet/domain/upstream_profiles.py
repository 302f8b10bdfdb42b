"""Security profiles of a site's link to its upstream, the edge being the client (OCPP Security Whitepaper).

Rule 1: profile 1 (the default): HTTP Basic with the station's upstream password, over `ws://` or `wss://`; a
        `wss://` server certificate is checked against the site's CA bundle when it has one, else the system's.
Rule 2: profile 2: the same over TLS only: the upstream URL must be `wss://`.
Rule 3: profile 3: TLS with the site's client certificate; the password is sent only when one is set (an upstream
        may ask for both). The URL must be `wss://` and the site must hold a client certificate and its key.
Rule 4: the rules hold at every change: a change of URL, of profile or of certificate that would break them is
        refused, and the site stays as it was.

`LinkFailure` names why a link attempt failed, as the link's state shows it; `describe` of the edge's link maps an
exception to one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from urllib.parse import urlsplit

from chargenet.errors import InvalidInput


class UpstreamProfile(IntEnum):
    BASIC = 1
    BASIC_OVER_TLS = 2
    CLIENT_CERTIFICATE = 3


DEFAULT = UpstreamProfile.BASIC


def parse_upstream_profile(value: int | str | None) -> UpstreamProfile:
    """A profile as given (None: the default, as the store holds it)."""
    if value is None:
        return DEFAULT
    try:
        return UpstreamProfile(int(value))
    except (TypeError, ValueError):
        raise InvalidInput(f"{value!r} is not an upstream security profile (1, 2 or 3)", field="profile") from None


@dataclass(frozen=True, slots=True)
class UpstreamTls:
    """What a site's upstream link is to be, as far as these rules care."""

    profile: UpstreamProfile
    url: str | None  # None: no upstream (yet): the settings wait for one
    client_certificate: bool  # the site holds a client certificate and its key
    ca_bundle: bool  # the site holds its own CA bundle for the upstream's server certificate


def is_secure(url: str) -> bool:
    return urlsplit(url).scheme == "wss"


def check(settings: UpstreamTls) -> None:
    """Refuse (`InvalidInput`) settings that break Rules 2 and 3."""
    secure = settings.url is None or is_secure(settings.url)
    if settings.profile >= UpstreamProfile.BASIC_OVER_TLS and not secure:
        raise InvalidInput(
            f"profile {int(settings.profile)} needs a wss:// upstream URL; the site's is ws://", field="upstream-url"
        )
    if settings.profile is UpstreamProfile.CLIENT_CERTIFICATE and not settings.client_certificate:
        raise InvalidInput("profile 3 needs the site's client certificate and its key", field="client-cert")


def sends_client_certificate(settings: UpstreamTls) -> bool:
    """A client certificate is shown to any `wss://` upstream that asks for one, whatever the profile."""
    return settings.client_certificate and settings.url is not None and is_secure(settings.url)


class LinkFailure(Enum):
    """Why the latest attempt to open a link failed, as its state shows it."""

    UNREACHABLE = "the upstream cannot be reached"
    SERVER_CERTIFICATE = "the upstream's server certificate is not trusted"
    CLIENT_CERTIFICATE_REFUSED = "the upstream refused the edge's TLS client certificate"
    CREDENTIALS_REFUSED = "the upstream refused the edge's credentials"
    TLS_SETTINGS = "the site's TLS files cannot be used"
