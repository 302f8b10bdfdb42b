"""Invariants of the allocator over arbitrary circuit trees, stations and sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from chargenet.domain.circuits import PHASES, Phase
from chargenet.domain.power import Circuit, Round, Session, Station, allocate, water_fill

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
PHASE_SETS: list[tuple[Phase, ...]] = [("L1",), ("L2",), ("L3",), PHASES]


@st.composite
def sites(draw: st.DrawFn) -> tuple[list[Circuit], list[Station], list[Session]]:
    count = draw(st.integers(min_value=1, max_value=5))
    circuits = []
    for k in range(count):
        parent = None if k == 0 else f"c{draw(st.integers(min_value=0, max_value=k - 1))}"
        other = draw(st.none() | st.floats(min_value=0, max_value=80))
        circuits.append(
            Circuit(
                f"c{k}",
                parent,
                draw(st.floats(min_value=6, max_value=120)),
                draw(st.sampled_from([0.0, 2.0])),
                metered=other is not None or draw(st.booleans()),
                other_load_a=None if other is None else dict.fromkeys(PHASES, other),
            )
        )
    stations = [
        Station(
            f"s{i}",
            f"c{draw(st.integers(min_value=0, max_value=count - 1))}",
            draw(st.sampled_from(PHASE_SETS)),
            priority=draw(st.sampled_from([0, 0, 1])),
        )
        for i in range(draw(st.integers(min_value=1, max_value=12)))
    ]
    sessions = []
    for station in stations:
        last = draw(st.none() | st.just(0.0) | st.floats(min_value=6, max_value=32))
        sessions.append(
            Session(
                f"tx-{station.id}",
                station.id,
                1,
                T0 - timedelta(minutes=draw(st.integers(min_value=0, max_value=600))),
                draw(st.floats(min_value=6, max_value=32)),
                draw_a=draw(st.none() | st.floats(min_value=0, max_value=32)),
                allowance_a=last,
                sent_at=None if last is None else T0 - timedelta(seconds=draw(st.integers(min_value=0, max_value=90))),
                paused_since=T0 - timedelta(minutes=5) if last == 0 else None,
            )
        )
    return circuits, stations, sessions


def below(circuits: list[Circuit], circuit_id: str) -> set[str]:
    found = {circuit_id}
    while True:
        more = {c.id for c in circuits if c.parent_id in found} - found
        if not more:
            return found
        found |= more


@settings(max_examples=100, deadline=None)
@given(sites())
def test_no_circuit_is_shared_beyond_its_limit_less_margin_and_other_load_but_what_it_lends(
    site: tuple[list[Circuit], list[Station], list[Session]],
) -> None:
    """A circuit with a live meter lends at most its margin (to vehicles drawing less than the minimum): its
    allowances reach its limit less the other load at most."""
    circuits, stations, sessions = site
    result: Round = allocate(circuits, stations, sessions, T0)
    circuit_of = {s.id: s.circuit_id for s in stations}
    for circuit in circuits:
        inside = below(circuits, circuit.id)
        for phase in circuit.phases:
            other = 0.0 if circuit.other_load_a is None else circuit.other_load_a[phase]
            lendable = circuit.margin_a if circuit.metered and circuit.other_load_a is not None else 0.0
            available = circuit.limit_a - circuit.margin_a - other + lendable
            drawn = sum(a.amps for a in result.allowances if circuit_of[a.station_id] in inside and phase in a.phases)
            assert drawn <= max(available, 0.0) + 1e-6


@settings(max_examples=100, deadline=None)
@given(sites())
def test_no_allowance_is_between_nothing_and_the_minimum(
    site: tuple[list[Circuit], list[Station], list[Session]],
) -> None:
    result = allocate(*site, T0)
    assert all(a.amps == 0 or a.amps >= 6 for a in result.allowances)
    assert all((a.amps == 0) == (a.paused is not None) for a in result.allowances)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=50), st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True)
        ),
        min_size=1,
        max_size=10,
    ),
    st.lists(st.floats(min_value=0, max_value=100), min_size=4, max_size=4),
)
def test_water_filling_gives_each_user_its_demand_or_a_full_resource_where_it_has_the_largest_share(
    users: list[tuple[float, list[int]]], capacity: list[float]
) -> None:
    demands = [d for d, _ in users]
    uses = [u for _, u in users]
    shares = water_fill(demands, uses, capacity)
    used = [sum(s for s, u in zip(shares, uses, strict=True) if r in u) for r in range(4)]
    assert all(used[r] <= capacity[r] + 1e-6 for r in range(4))
    for i, share in enumerate(shares):
        if share < demands[i] - 1e-6:
            assert any(
                used[r] >= capacity[r] - 1e-6
                and all(shares[j] <= share + 1e-6 for j in range(len(shares)) if r in uses[j])
                for r in uses[i]
            )
