"""What the station page says of who answers a station on a site with an upstream."""

from __future__ import annotations

import pytest

from chargenet.services.charge_points import StationStateView


def state(version: str | None, upstream_versions: list[str], *, has_upstream: bool = True) -> StationStateView:
    return StationStateView(
        station_id="CS-1",
        site_id="site_1",
        connection="connected",
        connected_at=None,
        disconnected_at=None,
        last_heartbeat=None,
        last_seen=None,
        vendor=None,
        model=None,
        firmware_version=None,
        booted_at=None,
        site_has_upstream=has_upstream,
        site_upstream_versions=upstream_versions,
        ocpp_version=version,
    )


@pytest.mark.parametrize(
    ("version", "upstream_versions", "answered_by_edge"),
    [
        ("ocpp2.0.1", ["ocpp1.6"], True),
        ("ocpp1.6", ["ocpp2.0.1"], True),
        ("ocpp2.0.1", ["ocpp1.6", "ocpp2.0.1"], False),
        ("ocpp1.6", ["ocpp1.6"], False),
        (None, ["ocpp1.6"], False),  # never connected: no generation to judge yet
    ],
)
def test_a_station_whose_generation_the_upstream_does_not_take_is_answered_by_the_edge(
    version: str | None, upstream_versions: list[str], answered_by_edge: bool
) -> None:
    assert state(version, upstream_versions).answered_by_edge is answered_by_edge


def test_without_an_upstream_the_edge_is_every_stations_central_system_and_says_nothing_of_it() -> None:
    assert not state("ocpp2.0.1", ["ocpp1.6"], has_upstream=False).answered_by_edge
