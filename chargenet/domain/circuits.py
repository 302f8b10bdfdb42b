"""A site's circuits as a tree, and what a circuit or a station on it may be set to (decisions.md "Site power").

A circuit's limit is in amperes per phase; the grid connection is the root, feeders hang below it. A station hangs
on one circuit and names the phases its connectors use, which must be phases its circuit has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

Phase = Literal["L1", "L2", "L3"]
PHASES: tuple[Phase, ...] = get_args(Phase)
PHASE_CHOICES = ("L1", "L2", "L3", "L1L2L3")
"""How phases are written: one phase (a single-phase station, rotated over the three) or all three."""

MINIMUM_SESSION_A = 6.0
"""The least current per phase a session may be offered (IEC 61851): below it a vehicle is paused."""


class CircuitRuleBroken(ValueError):
    """A circuit or a station's place in the tree that the rules refuse; `field` names the value at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message


def parse_phases(text: str, field: str = "phases") -> tuple[Phase, ...]:
    if text == "L1L2L3":
        return PHASES
    if text in PHASES:
        return (text,)
    raise CircuitRuleBroken(field, f"{text!r} is not one of {', '.join(PHASE_CHOICES)}")


def phases_text(phases: tuple[Phase, ...]) -> str:
    return "".join(phases)


def check_limit(limit_a: float, margin_a: float) -> None:
    """A circuit must carry at least one session at its minimum once its margin is kept free."""
    if margin_a < 0:
        raise CircuitRuleBroken("marginAmps", f"{margin_a:g} A is negative")
    if limit_a - margin_a < MINIMUM_SESSION_A:
        if margin_a:
            raise CircuitRuleBroken(
                "limitAmps",
                f"{limit_a:g} A less the margin of {margin_a:g} A is below one session's minimum of "
                f"{MINIMUM_SESSION_A:g} A",
            )
        raise CircuitRuleBroken("limitAmps", f"{limit_a:g} A is below one session's minimum of {MINIMUM_SESSION_A:g} A")


def check_parent(circuit_id: str | None, parent_id: str | None, parents: Mapping[str, str | None]) -> None:
    """Refuse a parent that would close a loop: `parents` maps every circuit of the site to its parent."""
    seen: set[str] = set()
    current = parent_id
    while current is not None:
        if current == circuit_id or current in seen:
            raise CircuitRuleBroken("parentId", f"{parent_id!r} would make a cycle in the circuit tree")
        seen.add(current)
        current = parents.get(current)


def check_station_phases(station_phases: tuple[Phase, ...], circuit_phases: tuple[Phase, ...], circuit: str) -> None:
    missing = [phase for phase in station_phases if phase not in circuit_phases]
    if missing:
        raise CircuitRuleBroken(
            "phases", f"circuit {circuit!r} has no {', '.join(missing)} (it has {phases_text(circuit_phases)})"
        )


def path_to_root(circuit_id: str, parents: Mapping[str, str | None]) -> list[str]:
    """The circuit and every circuit above it, the root last; every one of them limits what is below."""
    path = [circuit_id]
    current = parents[circuit_id]
    while current is not None:
        if current in path:
            raise CircuitRuleBroken("parentId", f"circuit {current!r} is in a cycle")
        path.append(current)
        current = parents[current]
    return path
