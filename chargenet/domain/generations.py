"""Which OCPP generation a station's connection speaks (decisions.md §5, "Generations").

Rule 1: the edge speaks `ocpp2.0.1` and `ocpp1.6`. A station record may pin the ones it may use; by default both.
Rule 2: the first subprotocol of the station's offer that the record allows wins (the client's preference order,
        RFC 6455 §4.2.2).
Rule 3: a station at security profile 0 (no password, no certificate) may use 1.6 only: 2.0.1 has no profile 0.
Rule 4: a site's upstream takes the generations its record names; by default 1.6 only. A station's link to the
        upstream speaks the station's generation, and only when the upstream takes it (decisions.md §4).
"""

from __future__ import annotations

from collections.abc import Sequence

from chargenet.errors import InvalidInput

OCPP16 = "ocpp1.6"
OCPP201 = "ocpp2.0.1"
GENERATIONS = (OCPP201, OCPP16)


def parse_versions(text: str | None) -> tuple[str, ...]:
    """`ocpp1.6,ocpp2.0.1` as written for a station (the API, the CLI, the store); None or empty is both."""
    if not text:
        return GENERATIONS
    versions = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [version for version in versions if version not in GENERATIONS]
    if unknown or not versions:
        raise InvalidInput(
            f"{', '.join(unknown) or text!r} is not an OCPP version; use {OCPP16}, {OCPP201} or both", "ocppVersions"
        )
    return versions


UPSTREAM_DEFAULT = (OCPP16,)


def parse_upstream_versions(text: str | None) -> tuple[str, ...]:
    """Rule 4: what a site's record says its upstream takes; None or empty is 1.6 only."""
    if not text:
        return UPSTREAM_DEFAULT
    try:
        return parse_versions(text)
    except InvalidInput as exc:
        raise InvalidInput(exc.detail, "upstreamOcppVersions") from None


def stored_upstream_versions(versions: Sequence[str]) -> str | None:
    """What the store keeps of an upstream's generations: None for 1.6 only."""
    checked = parse_upstream_versions(",".join(versions))
    return None if checked == UPSTREAM_DEFAULT else ",".join(checked)


def stored_versions(versions: Sequence[str] | None) -> str | None:
    """What the store keeps: None when the station may use both."""
    if versions is None:
        return None
    checked = parse_versions(",".join(versions))
    return None if set(checked) == set(GENERATIONS) else ",".join(checked)


def usable_versions(allowed: Sequence[str], *, security_profile: int) -> list[str]:
    """Rule 3 over the versions the station's record allows."""
    return [version for version in allowed if security_profile > 0 or version == OCPP16]


def negotiate(offered: Sequence[str], allowed: Sequence[str], *, security_profile: int) -> str | None:
    """Rules 2 and 3: the subprotocol of the connection, or None when nothing offered may be used."""
    usable = usable_versions(allowed, security_profile=security_profile)
    return next((protocol for protocol in offered if protocol in usable), None)
