"""Which OCPP generation a connection speaks (domain.generations)."""

from __future__ import annotations

import pytest

from chargenet.domain.generations import (
    GENERATIONS,
    OCPP16,
    OCPP201,
    negotiate,
    parse_upstream_versions,
    parse_versions,
    stored_upstream_versions,
    stored_versions,
)
from chargenet.errors import InvalidInput


@pytest.mark.parametrize(
    ("offered", "allowed", "chosen"),
    [
        ([OCPP201, OCPP16], GENERATIONS, OCPP201),
        ([OCPP16, OCPP201], GENERATIONS, OCPP16),
        ([OCPP201, OCPP16], (OCPP16,), OCPP16),
        ([OCPP201], (OCPP16,), None),
        (["ocpp2.0", "ocpp2.0.1"], GENERATIONS, OCPP201),
        ([], GENERATIONS, None),
    ],
)
def test_the_first_offered_subprotocol_the_station_may_use_wins(
    offered: list[str], allowed: tuple[str, ...], chosen: str | None
) -> None:
    assert negotiate(offered, allowed, security_profile=1) == chosen


def test_a_station_at_security_profile_0_speaks_1_6_only() -> None:
    assert negotiate([OCPP201, OCPP16], GENERATIONS, security_profile=0) == OCPP16
    assert negotiate([OCPP201], GENERATIONS, security_profile=0) is None


@pytest.mark.parametrize("profile", [1, 2, 3])
def test_a_station_with_a_password_or_a_certificate_may_speak_2_0_1(profile: int) -> None:
    assert negotiate([OCPP201, OCPP16], GENERATIONS, security_profile=profile) == OCPP201


def test_versions_are_read_as_written_and_stored_only_when_pinned() -> None:
    assert parse_versions(None) == GENERATIONS
    assert parse_versions("ocpp1.6, ocpp1.6") == (OCPP16,)
    assert stored_versions([OCPP16, OCPP201]) is None
    assert stored_versions([OCPP201]) == OCPP201


@pytest.mark.parametrize("text", ["ocpp2.0", "1.6", ","])
def test_an_unknown_version_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        parse_versions(text)


def test_an_upstream_takes_1_6_only_unless_its_site_says_otherwise() -> None:
    assert parse_upstream_versions(None) == (OCPP16,)
    assert parse_upstream_versions("ocpp2.0.1, ocpp1.6") == (OCPP201, OCPP16)
    assert stored_upstream_versions([OCPP16]) is None  # the default, as sites stored before it
    assert stored_upstream_versions([OCPP16, OCPP201]) == "ocpp1.6,ocpp2.0.1"


def test_an_upstream_version_the_edge_does_not_speak_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_upstream_versions("ocpp2.1")
    assert refused.value.field == "upstreamOcppVersions"
