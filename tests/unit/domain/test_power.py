"""The site power allocator's rules (decisions.md "Site power"), one behaviour a test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.circuits import PHASES
from chargenet.domain.power import (
    Circuit,
    PauseReason,
    Session,
    Station,
    allocate,
    safe_defaults,
    water_fill,
)

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
LONG_AGO = T0 - timedelta(hours=1)
GRID = "grid"


def grid(limit: float, margin: float = 0.0, other: float | None = None, metered: bool = False) -> Circuit:
    load = None if other is None else dict.fromkeys(PHASES, other)
    return Circuit(GRID, None, limit, margin, metered=metered or other is not None, other_load_a=load)


def stations(count: int, circuit: str = GRID, priority: int = 0, phases: str = "L1") -> list[Station]:
    chosen = PHASES if phases == "L1L2L3" else (phases,)
    return [Station(f"s{i}", circuit, chosen, priority=priority) for i in range(count)]  # type: ignore[arg-type]


def session(
    station: str,
    started_minutes: int = 0,
    max_a: float = 32.0,
    draw: float | None = None,
    allowance: float | None = None,
    sent_seconds_ago: float | None = None,
    paused_minutes: int | None = None,
) -> Session:
    return Session(
        id=f"tx-{station}",
        station_id=station,
        connector_id=1,
        started_at=T0 + timedelta(minutes=started_minutes - 60),
        max_current_a=max_a,
        draw_a=draw,
        allowance_a=allowance,
        sent_at=None if sent_seconds_ago is None else T0 - timedelta(seconds=sent_seconds_ago),
        paused_since=None if paused_minutes is None else T0 - timedelta(minutes=paused_minutes),
    )


def amps(round_: object) -> dict[str, float]:
    return {a.session_id: a.amps for a in round_.allowances}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("limit", "demands", "expected"),
    [
        (60, [32, 32], [30, 30]),
        (60, [10, 32, 32], [10, 25, 25]),
        (100, [10, 20, 32], [10, 20, 32]),
        (40, [32, 32, 32], [13.3, 13.3, 13.3]),
    ],
)
def test_one_circuit_is_shared_max_min_fair_over_the_demands(
    limit: float, demands: list[float], expected: list[float]
) -> None:
    fleet = stations(len(demands))
    sessions = [session(s.id, max_a=d) for s, d in zip(fleet, demands, strict=True)]
    result = allocate([grid(limit)], fleet, sessions, T0)
    assert [a.amps for a in result.allowances] == expected


def test_water_filling_stops_the_users_of_a_full_resource_and_raises_the_others() -> None:
    # Resource 0 (a feeder) holds users 0 and 1; resource 1 (the root) everyone.
    shares = water_fill([50, 50, 50], [[0, 1], [0, 1], [1]], [20, 60])
    assert shares == [10, 10, 40]


def test_every_circuit_on_the_path_to_the_root_constrains_a_session() -> None:
    circuits = [grid(100), Circuit("feeder", GRID, 20)]
    fleet = [*stations(2, circuit="feeder"), Station("s9", GRID, ("L1",))]
    sessions = [session("s0"), session("s1"), session("s9")]
    assert amps(allocate(circuits, fleet, sessions, T0)) == {"tx-s0": 10, "tx-s1": 10, "tx-s9": 32}


def test_a_three_phase_session_takes_its_allowance_on_each_phase() -> None:
    fleet = [Station("s0", GRID, PHASES), Station("s1", GRID, ("L2",))]
    result = allocate([grid(40)], fleet, [session("s0"), session("s1")], T0)
    assert amps(result) == {"tx-s0": 20, "tx-s1": 20}
    assert result.circuits[0].allocated_a == {"L1": 20, "L2": 40, "L3": 20}


def test_the_other_load_the_meter_measures_is_taken_off_the_limit() -> None:
    result = allocate([grid(60, other=20)], stations(2), [session("s0"), session("s1")], T0)
    assert amps(result) == {"tx-s0": 20, "tx-s1": 20}


def test_the_margin_is_kept_free() -> None:
    assert amps(allocate([grid(60, margin=10)], stations(1), [session("s0")], T0)) == {"tx-s0": 32}
    assert amps(allocate([grid(40, margin=10)], stations(1), [session("s0")], T0)) == {"tx-s0": 30}


def test_a_silent_meter_falls_back_to_the_limit_and_says_so() -> None:
    result = allocate([grid(40, metered=True)], stations(1), [session("s0")], T0)
    assert amps(result) == {"tx-s0": 32}
    assert result.circuits[0].meter_silent


def test_a_session_that_cannot_get_the_minimum_is_paused() -> None:
    fleet = stations(3)
    sessions = [session("s0", started_minutes=0), session("s1", started_minutes=1), session("s2", started_minutes=2)]
    result = allocate([grid(15)], fleet, sessions, T0)
    assert amps(result) == {"tx-s0": 7.5, "tx-s1": 7.5, "tx-s2": 0}
    assert result.allowances[2].paused is PauseReason.NO_ROOM
    assert result.allowances[2].paused_since == T0


def test_the_latest_started_is_paused_first() -> None:
    fleet = stations(2)
    sessions = [session("s0", started_minutes=5, allowance=8), session("s1", started_minutes=1, allowance=8)]
    result = allocate([grid(10)], fleet, sessions, T0)
    assert amps(result) == {"tx-s0": 0, "tx-s1": 10}


def test_the_lowest_priority_is_paused_first() -> None:
    fleet = [Station("s0", GRID, ("L1",), priority=1), Station("s1", GRID, ("L1",), priority=0)]
    sessions = [session("s0", started_minutes=5, allowance=8), session("s1", started_minutes=1, allowance=8)]
    assert amps(allocate([grid(10)], fleet, sessions, T0)) == {"tx-s0": 10, "tx-s1": 0}


def test_the_longest_paused_resumes_first() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", started_minutes=1, allowance=0, paused_minutes=2, sent_seconds_ago=120),
        session("s1", started_minutes=9, allowance=0, paused_minutes=8, sent_seconds_ago=480),
    ]
    assert amps(allocate([grid(10)], fleet, sessions, T0)) == {"tx-s0": 0, "tx-s1": 10}


def test_a_new_session_waits_behind_the_paused_ones() -> None:
    fleet = stations(2)
    sessions = [session("s0", started_minutes=59), session("s1", allowance=0, paused_minutes=1, sent_seconds_ago=60)]
    assert amps(allocate([grid(10)], fleet, sessions, T0)) == {"tx-s0": 0, "tx-s1": 10}


def test_paused_sessions_take_turns_with_those_that_charged_a_turn() -> None:
    fleet = stations(2)
    charging = Session(
        "tx-s0", "s0", 1, LONG_AGO, 32.0, allowance_a=10, sent_at=LONG_AGO, charging_since=T0 - timedelta(minutes=15)
    )
    waiting = session("s1", started_minutes=30, allowance=0, paused_minutes=15, sent_seconds_ago=900)
    assert amps(allocate([grid(10)], fleet, [charging, waiting], T0)) == {"tx-s0": 0, "tx-s1": 10}


def test_a_session_charging_less_than_a_turn_keeps_its_place() -> None:
    fleet = stations(2)
    charging = Session(
        "tx-s0", "s0", 1, LONG_AGO, 32.0, allowance_a=10, sent_at=LONG_AGO, charging_since=T0 - timedelta(minutes=14)
    )
    waiting = session("s1", started_minutes=30, allowance=0, paused_minutes=15, sent_seconds_ago=900)
    result = allocate([grid(10)], fleet, [charging, waiting], T0)
    assert amps(result) == {"tx-s0": 10, "tx-s1": 0}
    assert result.allowances[0].charging_since == T0 - timedelta(minutes=14)


def test_higher_priorities_are_served_first_above_every_sessions_minimum() -> None:
    fleet = [Station("s0", GRID, ("L1",), priority=2), *stations(2)[1:], Station("s2", GRID, ("L1",))]
    sessions = [session("s0"), session("s1"), session("s2")]
    assert amps(allocate([grid(50)], fleet, sessions, T0)) == {"tx-s0": 32, "tx-s1": 9, "tx-s2": 9}


def test_headroom_a_vehicle_does_not_use_goes_to_the_others() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", draw=8, allowance=20, sent_seconds_ago=60),
        session("s1", draw=20, allowance=20, sent_seconds_ago=60),
    ]
    assert amps(allocate([grid(40)], fleet, sessions, T0)) == {"tx-s0": 10, "tx-s1": 30}


def test_a_vehicle_drawing_under_the_minimum_keeps_it_and_lends_the_rest_under_a_live_meter() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", draw=1, allowance=6, sent_seconds_ago=60),  # asks for its draw and the slack: 3 A
        session("s1", draw=29, allowance=29, sent_seconds_ago=60),
    ]
    metered = grid(40, margin=5, other=0)
    assert amps(allocate([metered], fleet, sessions, T0)) == {"tx-s0": 6, "tx-s1": 32}


def test_nothing_is_lent_without_a_live_meter() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", draw=1, allowance=6, sent_seconds_ago=60),
        session("s1", draw=29, allowance=29, sent_seconds_ago=60),
    ]
    unmetered = grid(40, margin=5)
    silent = Circuit(GRID, None, 40, 5, metered=True, other_load_a=None)
    for circuit in (unmetered, silent):
        assert amps(allocate([circuit], fleet, sessions, T0)) == {"tx-s0": 6, "tx-s1": 29}


def test_what_is_lent_never_exceeds_the_circuits_margin() -> None:
    fleet = stations(3)
    sessions = [
        session("s0", draw=0, allowance=6, sent_seconds_ago=60),  # lends 4 A of its minimum
        session("s1", draw=0, allowance=6, sent_seconds_ago=60),  # lends the 1 A of the margin left
        session("s2", draw=20, allowance=20, sent_seconds_ago=60),
    ]
    result = allocate([grid(40, margin=5, other=0)], fleet, sessions, T0)
    assert amps(result) == {"tx-s0": 6, "tx-s1": 6, "tx-s2": 28}
    assert result.circuits[0].allocated_a["L1"] == 40  # the limit: the margin is what was lent


def test_a_vehicle_drawing_close_to_its_allowance_is_taken_to_want_more() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", draw=9.2, allowance=10, sent_seconds_ago=60),
        session("s1", draw=20, allowance=20, sent_seconds_ago=60),
    ]
    assert amps(allocate([grid(40)], fleet, sessions, T0)) == {"tx-s0": 20, "tx-s1": 20}


def test_what_a_held_increase_leaves_unused_goes_to_the_others() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", allowance=10, sent_seconds_ago=5),  # its station was just sent a limit: it stays at 10 A
        session("s1", allowance=10, sent_seconds_ago=60),
    ]
    assert amps(allocate([grid(40)], fleet, sessions, T0)) == {"tx-s0": 10, "tx-s1": 30}


def test_a_draw_is_not_trusted_before_the_vehicle_had_time_to_follow_its_allowance() -> None:
    fleet = stations(2)
    sessions = [
        session("s0", draw=0, allowance=20, sent_seconds_ago=3),
        session("s1", draw=20, allowance=20, sent_seconds_ago=60),
    ]
    assert amps(allocate([grid(40)], fleet, sessions, T0)) == {"tx-s0": 20, "tx-s1": 20}


@pytest.mark.parametrize(
    ("last", "sent_seconds_ago", "limit", "expected", "send"),
    [
        (20, 1, 30, 15, True),  # a decrease is sent at once
        (10, 10, 60, 10, False),  # an increase waits 30 s after the station was last sent a limit
        (10, 31, 60, 30, True),  # then it is sent
        (29.5, 60, 60, 29.5, False),  # an increase under 1 A is not worth a profile
        (None, None, 60, 30, True),  # a new session is sent its first allowance at once
    ],
)
def test_changes_are_smoothed_but_decreases_are_never_delayed(
    last: float | None, sent_seconds_ago: float | None, limit: float, expected: float, send: bool
) -> None:
    fleet = stations(2)
    sessions = [
        session("s0", allowance=last, sent_seconds_ago=sent_seconds_ago),
        session("s1", allowance=last, sent_seconds_ago=sent_seconds_ago),
    ]
    result = allocate([grid(limit)], fleet, sessions, T0)
    assert (result.allowances[0].amps, result.allowances[0].send) == (expected, send)
    assert result.stations_to_send == (frozenset({"s0", "s1"}) if send else frozenset())


def test_a_paused_session_that_fits_again_waits_for_its_station_to_be_free_to_increase() -> None:
    sessions = [session("s0", allowance=0, paused_minutes=1, sent_seconds_ago=5)]
    allowance = allocate([grid(40)], stations(1), sessions, T0).allowances[0]
    assert (allowance.amps, allowance.target_a, allowance.paused) == (0, 32, PauseReason.WAITING_TO_RESUME)
    assert allowance.paused_since == T0 - timedelta(minutes=1)


def test_an_offline_station_keeps_its_last_allowance_for_five_minutes() -> None:
    fleet = [Station("s0", GRID, ("L1",), offline_since=T0 - timedelta(minutes=4)), *stations(2)[1:]]
    sessions = [session("s0", allowance=25, sent_seconds_ago=600), session("s1")]
    result = allocate([grid(40)], fleet, sessions, T0)
    assert amps(result) == {"tx-s0": 25, "tx-s1": 15}
    assert result.stations_to_send == frozenset({"s1"})


def test_an_offline_station_falls_back_to_its_safe_default_after_five_minutes() -> None:
    fleet = [Station("s0", GRID, ("L1",), offline_since=T0 - timedelta(minutes=5)), *stations(2)[1:]]
    sessions = [session("s0", allowance=25, sent_seconds_ago=600), session("s1")]
    assert amps(allocate([grid(40)], fleet, sessions, T0)) == {"tx-s0": 6, "tx-s1": 32}


def test_safe_defaults_give_the_minimum_to_as_many_connectors_as_fit_in_order() -> None:
    circuits = [grid(29), Circuit("feeder", GRID, 11)]
    fleet = [
        Station("a", "feeder", PHASES, connectors=2),
        Station("b", GRID, ("L1",), connectors=2),
        Station("c", GRID, ("L1",), connectors=2),
        Station("d", GRID, ("L2",), connectors=1),
    ]
    assert safe_defaults(circuits, fleet) == {
        ("a", 1): 6,
        ("a", 2): 0,
        ("b", 1): 6,
        ("b", 2): 6,
        ("c", 1): 6,
        ("c", 2): 0,
        ("d", 1): 6,
    }


def test_a_station_that_takes_no_profiles_is_counted_at_its_full_rating_first() -> None:
    unlimited = Station("s0", GRID, ("L1",), unlimited=True)
    result = allocate([grid(40)], [unlimited, Station("s1", GRID, ("L1",))], [session("s0"), session("s1")], T0)
    assert amps(result) == {"tx-s0": 32.0, "tx-s1": 8.0}
    assert result.stations_to_send == {"s1"}
