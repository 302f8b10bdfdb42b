"""What a circuit, and a station's place in the tree, may be set to."""

from __future__ import annotations

import pytest

from chargenet.domain.circuits import (
    PHASES,
    CircuitRuleBroken,
    check_limit,
    check_parent,
    check_station_phases,
    parse_phases,
    path_to_root,
)

PARENTS: dict[str, str | None] = {"grid": None, "feeder": "grid", "sub": "feeder"}


@pytest.mark.parametrize(("text", "phases"), [("L1", ("L1",)), ("L3", ("L3",)), ("L1L2L3", PHASES)])
def test_phases_are_one_phase_or_all_three(text: str, phases: tuple[str, ...]) -> None:
    assert parse_phases(text) == phases


@pytest.mark.parametrize("text", ["L4", "L1L2", "", "l1"])
def test_other_phases_are_refused_naming_the_value(text: str) -> None:
    with pytest.raises(CircuitRuleBroken, match=repr(text)):
        parse_phases(text)


@pytest.mark.parametrize(("limit", "margin"), [(5.9, 0), (10, 5), (0, 0)])
def test_a_limit_below_one_sessions_minimum_is_refused(limit: float, margin: float) -> None:
    with pytest.raises(CircuitRuleBroken, match="below one session's minimum of 6 A") as caught:
        check_limit(limit, margin)
    assert caught.value.field == "limitAmps"


def test_a_limit_that_carries_one_session_is_accepted() -> None:
    check_limit(6, 0)
    check_limit(16, 10)


def test_a_negative_margin_is_refused() -> None:
    with pytest.raises(CircuitRuleBroken, match="marginAmps"):
        check_limit(32, -1)


@pytest.mark.parametrize(("circuit", "parent"), [("grid", "sub"), ("feeder", "feeder"), ("grid", "grid")])
def test_a_parent_that_would_close_a_loop_is_refused(circuit: str, parent: str) -> None:
    with pytest.raises(CircuitRuleBroken, match="cycle"):
        check_parent(circuit, parent, PARENTS)


def test_a_parent_elsewhere_in_the_tree_is_accepted() -> None:
    check_parent("sub", "grid", PARENTS)
    check_parent(None, "sub", PARENTS)


def test_a_station_may_not_use_a_phase_its_circuit_does_not_have() -> None:
    with pytest.raises(CircuitRuleBroken, match="circuit 'feeder' has no L2, L3 \\(it has L1\\)"):
        check_station_phases(PHASES, ("L1",), "feeder")


def test_the_path_to_the_root_names_every_circuit_above() -> None:
    assert path_to_root("sub", PARENTS) == ["sub", "feeder", "grid"]
