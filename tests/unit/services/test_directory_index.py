"""The charge point directory's index, without a store: which charge points a page selects, and what a read of
what changed does to them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.auth.permissions import Reach
from chargenet.domain.live import ConnectorState, StationLink
from chargenet.services.charge_points import ChargePointRows
from chargenet.services.directory import SWEEP_PART_MAX, DirectoryIndex, sweep_part

AT = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
# (charge point, site, station, company): company co_a holds sites s1 and s2, co_b holds s3.
POINTS = [
    ("CP-1", "s1", "ST-1", "co_a"),
    ("CP-2", "s3", "ST-2", "co_b"),
    ("CP-3", "s2", "ST-3", "co_a"),
    ("CP-4", "s3", "ST-4", "co_b"),
    ("CP-5", "s1", "ST-5", "co_a"),
    ("CP-5B", "s1", "ST-5", "co_a"),
]


def connector(charge_point_id: str, connector_id: int, status: str | None) -> ConnectorState:
    station = charge_point_id.removesuffix("B").replace("CP", "ST")
    return ConnectorState("co_a", "s1", station, charge_point_id, connector_id, status, None, None, AT, AT)


def index() -> DirectoryIndex:
    points = [
        ChargePointRows(cp, site, station, False, None, [(c, None, None, None, None) for c in (1, 2)], [])
        for cp, site, station, _ in POINTS
    ]
    return DirectoryIndex.load(7, points, {site: company for _, site, _, company in POINTS})


def page(reach: Reach, *, site_id: str | None = None, after: str | None = None, fetch: int = 10) -> list[str]:
    return [point.id for point in index().page(reach, site_id, after, fetch) or []]


def test_companies_and_sites_reached_are_merged_in_id_order_each_once() -> None:
    reach = Reach(frozenset({"co_a"}), frozenset({"s1", "s3"}))
    assert page(reach) == ["CP-1", "CP-2", "CP-3", "CP-4", "CP-5", "CP-5B"]


def test_a_page_starts_after_its_cursor_and_stops_at_its_size() -> None:
    assert page(Reach(frozenset({"co_a", "co_b"}), frozenset()), after="CP-2", fetch=2) == ["CP-3", "CP-4"]


def test_a_site_grant_reaches_that_site_only() -> None:
    assert page(Reach(frozenset(), frozenset({"s2"}))) == ["CP-3"]


def test_a_site_filter_outside_the_reach_selects_nothing() -> None:
    assert page(Reach(frozenset({"co_a"}), frozenset()), site_id="s3") == []
    assert page(Reach(frozenset({"co_a"}), frozenset()), site_id="s1") == ["CP-1", "CP-5", "CP-5B"]


def test_everything_is_every_charge_point_and_an_unknown_site_nothing() -> None:
    everything = Reach(frozenset(), frozenset(), everything=True)
    assert page(everything, fetch=3) == ["CP-1", "CP-2", "CP-3"]
    assert page(everything, site_id="s9") == []


def test_a_charge_point_whose_site_is_unknown_is_left_out() -> None:
    point = ChargePointRows("CP-9", "s9", "ST-9", False, None, [], [])
    assert list(DirectoryIndex.load(7, [point], {"s1": "co_a"}).points) == []


def test_a_status_read_later_changes_its_connector_only() -> None:
    kept = index()
    kept.absorb([connector("CP-1", 2, "Charging"), connector("CP-UNKNOWN", 1, "Faulted")], [])
    assert [c[1] for c in kept.points["CP-1"].connectors] == [None, "Charging"]
    assert "CP-UNKNOWN" not in kept.points  # left for the whole read its structure's version brings


def test_a_station_link_shows_on_each_of_its_charge_points() -> None:
    kept = index()
    kept.absorb([], [StationLink("ST-5", True, AT, None, AT)])
    assert [(p.present, p.last_heartbeat) for p in (kept.points["CP-5"], kept.points["CP-5B"])] == [(True, AT)] * 2
    assert (kept.points["CP-1"].present, kept.points["CP-1"].last_heartbeat) == (False, None)


def test_the_order_is_the_stores_not_pythons() -> None:
    # PostgreSQL under en_US puts "ST-10" before "ST-1-2"; code points would not.
    points = [ChargePointRows(cp, "s1", cp, False, None, [], []) for cp in ("ST-10", "ST-1-2", "ST-2")]
    kept = DirectoryIndex.load(7, points, {"s1": "co_a"})
    everything = Reach(frozenset(), frozenset(), everything=True)
    assert [p.id for p in kept.page(everything, None, None, 10) or []] == ["ST-10", "ST-1-2", "ST-2"]
    assert [p.id for p in kept.page(everything, None, "ST-10", 10) or []] == ["ST-1-2", "ST-2"]


def test_a_cursor_after_an_id_it_does_not_hold_is_left_to_the_store() -> None:
    assert index().page(Reach(frozenset({"co_a"}), frozenset()), None, "CP-0-GONE", 10) is None


def test_meters_read_again_replace_those_known_and_a_meter_gone_leaves() -> None:
    kept = index()
    meter = ("meter_1", 1, True, None, 1500, None, None, AT)
    kept.take_meters([("ST-1", "CP-1", meter)])
    assert kept.points["CP-1"].meters == [meter]
    kept.take_meters([])
    assert kept.points["CP-1"].meters == []


def test_one_charge_point_is_found_where_its_company_or_site_is_reached() -> None:
    found = index().one(Reach(frozenset(), frozenset({"s3"})), "CP-4")
    assert found is not None and found.id == "CP-4"
    assert index().one(Reach(frozenset(), frozenset(), everything=True), "CP-3") is not None


def test_one_charge_point_outside_the_reach_is_not_found_like_one_that_does_not_exist() -> None:
    assert index().one(Reach(frozenset({"co_a"}), frozenset()), "CP-2") is None
    assert index().one(Reach(frozenset({"co_a"}), frozenset()), "CP-404") is None


def test_charge_points_read_again_whole_take_their_links_and_connectors_as_read() -> None:
    loaded = index()
    read = ChargePointRows("CP-3", "s2", "ST-3", True, AT, [(1, "Faulted", "GroundFailure", None, AT)], [], "2.0.1")
    loaded.renew([read, ChargePointRows("CP-9", "s1", "ST-9", True, AT, [], [])])
    point = loaded.points["CP-3"]
    assert (point.present, point.last_heartbeat, point.ocpp_version) == (True, AT, "2.0.1")
    assert point.connectors == [(1, "Faulted", "GroundFailure", None, AT)]
    assert "CP-9" not in loaded.points  # not of this version: left for the whole read its version brings


MINUTE = timedelta(minutes=1)


def test_the_sweep_reads_its_share_of_the_charge_points_for_the_time_since_its_last_part() -> None:
    assert sweep_part(10_000, timedelta(seconds=0.5), MINUTE) == 84  # rounded up: round within the minute
    assert sweep_part(10_000, timedelta(seconds=2), MINUTE) == 334


def test_a_sweep_part_is_at_most_its_bound_and_nothing_without_time_or_charge_points() -> None:
    assert sweep_part(10_000, timedelta(seconds=30), MINUTE) == SWEEP_PART_MAX
    assert sweep_part(3, 2 * MINUTE, MINUTE) == 3
    assert sweep_part(10_000, timedelta(0), MINUTE) == 0
    assert sweep_part(0, MINUTE, MINUTE) == 0
