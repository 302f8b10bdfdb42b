"""Connector status: the OCPP 1.6 transition table, and what a StatusNotification does.

Theory of operation. A StatusNotification is always answered `{}` and always recorded in the connector's
history: the station is the truth about its connectors, and stations legitimately skip states (a minimum
status duration, an offline period). The table below does not refuse anything; it tells which reports were
unexpected, so the shell can log and count them. Whether a report becomes the connector's current status and
raises a ChargePointStatus event is `chargenet.domain.connectors.decide_status`.

Rule 1: the table is OCPP 1.6 §4.9's, with the spec's own labels: the letter is the state left, the digit the
        state entered (A Available, B Preparing, C Charging, D SuspendedEV, E SuspendedEVSE, F Finishing,
        G Reserved, H Unavailable, I Faulted; digits in the same order). "B7" is Preparing -> Reserved.
Rule 2: a connector's first report may only be Available, Unavailable or Faulted.
Rule 3: connector 0 is the whole charge point and only ever Available, Unavailable or Faulted.
Rule 4: a report of the same status is no transition (an errorCode or info update); it is always expected.
Rule 5: an unexpected transition is recorded and sent like any other (decisions.md §3), and counted here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from chargenet.domain.connectors import KnownStatus, StatusDecision, decide_status
from chargenet.domain.events import ConnectorStatus

_S = ConnectorStatus
_LETTERS = "ABCDEFGHI"
_ORDER = (
    _S.AVAILABLE,
    _S.PREPARING,
    _S.CHARGING,
    _S.SUSPENDED_EV,
    _S.SUSPENDED_EVSE,
    _S.FINISHING,
    _S.RESERVED,
    _S.UNAVAILABLE,
    _S.FAULTED,
)

# Rule 1 (connectorId >= 1). Sources: SAP e-mobility simulator OCPP16Constants.ts and EVerest libocpp
# charge_point_state_machine.cpp agree on every cell; the pairs left out are the ones the spec leaves out.
ALLOWED: Mapping[ConnectorStatus | None, frozenset[ConnectorStatus]] = {
    None: frozenset({_S.AVAILABLE, _S.UNAVAILABLE, _S.FAULTED}),  # Rule 2
    _S.AVAILABLE: frozenset(  # A2-A5, A7-A9
        {_S.PREPARING, _S.CHARGING, _S.SUSPENDED_EV, _S.SUSPENDED_EVSE, _S.RESERVED, _S.UNAVAILABLE, _S.FAULTED}
    ),
    _S.PREPARING: frozenset(  # B1, B3-B6, B9
        {_S.AVAILABLE, _S.CHARGING, _S.SUSPENDED_EV, _S.SUSPENDED_EVSE, _S.FINISHING, _S.FAULTED}
    ),
    _S.CHARGING: frozenset(  # C1, C4-C6, C8, C9
        {_S.AVAILABLE, _S.SUSPENDED_EV, _S.SUSPENDED_EVSE, _S.FINISHING, _S.UNAVAILABLE, _S.FAULTED}
    ),
    _S.SUSPENDED_EV: frozenset(  # D1, D3, D5, D6, D8, D9
        {_S.AVAILABLE, _S.CHARGING, _S.SUSPENDED_EVSE, _S.FINISHING, _S.UNAVAILABLE, _S.FAULTED}
    ),
    _S.SUSPENDED_EVSE: frozenset(  # E1, E3, E4, E6, E8, E9
        {_S.AVAILABLE, _S.CHARGING, _S.SUSPENDED_EV, _S.FINISHING, _S.UNAVAILABLE, _S.FAULTED}
    ),
    _S.FINISHING: frozenset({_S.AVAILABLE, _S.PREPARING, _S.UNAVAILABLE, _S.FAULTED}),  # F1, F2, F8, F9
    _S.RESERVED: frozenset({_S.AVAILABLE, _S.PREPARING, _S.UNAVAILABLE, _S.FAULTED}),  # G1, G2, G8, G9
    _S.UNAVAILABLE: frozenset(  # H1-H5, H9
        {_S.AVAILABLE, _S.PREPARING, _S.CHARGING, _S.SUSPENDED_EV, _S.SUSPENDED_EVSE, _S.FAULTED}
    ),
    _S.FAULTED: frozenset(set(_ORDER) - {_S.FAULTED}),  # I1-I8
}

# Rule 3.
ALLOWED_CONNECTOR_0: Mapping[ConnectorStatus | None, frozenset[ConnectorStatus]] = {
    None: frozenset({_S.AVAILABLE, _S.UNAVAILABLE, _S.FAULTED}),
    _S.AVAILABLE: frozenset({_S.UNAVAILABLE, _S.FAULTED}),
    _S.UNAVAILABLE: frozenset({_S.AVAILABLE, _S.FAULTED}),
    _S.FAULTED: frozenset({_S.AVAILABLE, _S.UNAVAILABLE}),
}


def transition_label(previous: ConnectorStatus | None, reported: ConnectorStatus) -> str:
    """The spec's name of a transition, "C6" for Charging -> Finishing; "-1" style for a first report."""
    digit = str(_ORDER.index(reported) + 1)
    return ("-" if previous is None else _LETTERS[_ORDER.index(previous)]) + digit


def is_expected(connector_id: int, previous: ConnectorStatus | None, reported: ConnectorStatus) -> bool:
    if previous == reported:
        return True  # Rule 4
    table = ALLOWED_CONNECTOR_0 if connector_id == 0 else ALLOWED
    return reported in table.get(previous, frozenset())


@dataclass(frozen=True, slots=True)
class StatusAssessment:
    """What one StatusNotification does: `decision` for current status and event, `expected` for the table."""

    decision: StatusDecision
    expected: bool
    transition: str


def assess(connector_id: int, last: KnownStatus | None, reported: KnownStatus) -> StatusAssessment:
    """Judge a report against the last known status of its connector (by the station's timestamp).

    A report older than the last known one is history (`decide_status` Rule 3); it is judged against nothing
    and counts as expected, because the transition it describes happened before what we already know.
    """
    decision = decide_status(last, reported)
    previous = last.status if last is not None else None
    if last is not None and not decision.becomes_current:
        return StatusAssessment(decision, expected=True, transition="history")
    return StatusAssessment(
        decision,
        expected=is_expected(connector_id, previous, reported.status),
        transition=transition_label(previous, reported.status),
    )


@dataclass(slots=True)
class TransitionCounts:
    """Unexpected transitions seen, by label (Rule 5), for logs and metrics."""

    unexpected: Counter[str] = field(default_factory=Counter)

    def record(self, assessment: StatusAssessment) -> None:
        if not assessment.expected:
            self.unexpected[assessment.transition] += 1

    @property
    def total_unexpected(self) -> int:
        return sum(self.unexpected.values())
