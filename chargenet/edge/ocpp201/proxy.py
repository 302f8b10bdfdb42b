"""Which 2.0.1 messages the edge forwards to a 2.0.1 upstream, answers itself, or queues: the relay rules of
`ocpp16.proxy`, as 2.0.1's table.

Rules (decisions.md §4 "Upstream", §5):
- Rule 1: `STATION_ROUTES` gives, per station action, the handling with the upstream connected, away, and absent
  (absent also when the site's upstream does not take 2.0.1: the edge is then the central system).
- Rule 2: TransactionEvent is the transaction message: answered by the edge and queued while the upstream is away,
  and also while older ones still wait, so the upstream sees them in the order the station sent them. The
  station's transaction ids are strings it chose itself, so nothing is rewritten on the way up or down.
- Rule 3: Authorize is decided by the authorization chain, which asks the upstream only for tokens that neither
  the local list nor a plugin decided.
- Rule 4: when a forwarded call fails upstream, `fallback` says what the station gets instead, as for 1.6.
- Rule 5: a CALL from the upstream is relayed to the station when it is a central-system action of 2.0.1; a
  station's action coming from the upstream is NotSupported.
- Rule 6: the messages whose handling the edge leaves to a central system (ISO 15118 certificates, charging
  limits and the rest of `render.NOT_SUPPORTED`) go to a connected upstream and are NotSupported otherwise.
- Rule 7: a SignCertificate is signed by the edge (`edge.certificates`), as for 1.6 (`ocpp16.proxy` Rule 8),
  unless the site relays its stations' CSRs to its upstream or the CSR is for a V2G certificate: then it is
  forwarded while the upstream is connected and answered Rejected otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from chargenet.edge.core.authorize import UpstreamState
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.proxy import Fallback, Handling, Route, UpstreamFailure
from chargenet.edge.ocpp201.frames import CENTRAL_ACTIONS, STATION_ACTIONS
from chargenet.edge.ocpp201.render import NOT_SUPPORTED

QUEUED_ACTIONS = frozenset({"TransactionEvent"})

_F, _L, _Q, _D, _U = Handling.FORWARD, Handling.LOCAL, Handling.QUEUE, Handling.DECIDE, Handling.UNSUPPORTED

# Rule 1.
STATION_ROUTES: Mapping[str, Route] = {
    "BootNotification": Route(_F, _L, _L),
    "Heartbeat": Route(_F, _L, _L),
    "StatusNotification": Route(_F, _L, _L),
    "Authorize": Route(_D, _D, _D),  # Rule 3
    "TransactionEvent": Route(_F, _Q, _L),  # Rule 2
    # Readings outside a transaction name none: there is nothing to keep them in order with.
    "MeterValues": Route(_F, _L, _L),
    "DataTransfer": Route(_F, _L, _L),
    "NotifyEvent": Route(_F, _L, _L),
    "NotifyReport": Route(_F, _L, _L),
    "SecurityEventNotification": Route(_F, _L, _L),
    "FirmwareStatusNotification": Route(_F, _L, _L),
    "LogStatusNotification": Route(_F, _L, _L),
    "ReservationStatusUpdate": Route(_F, _L, _L),
    "SignCertificate": Route(_D, _D, _D),  # Rule 7
    **{action: Route(_F, _U, _U) for action in NOT_SUPPORTED},  # Rule 6
}
assert set(STATION_ROUTES) == STATION_ACTIONS


def is_queued(action: str, upstream_connected: bool, queue_empty: bool) -> bool:
    """Rule 2."""
    return action in QUEUED_ACTIONS and (not upstream_connected or not queue_empty)


def route_station_call(action: str, upstream: UpstreamState, queue_empty: bool) -> Handling:
    """Rules 1-3 and 6 for a station CALL whose action the 2.0.1 face knows."""
    route = STATION_ROUTES.get(action)
    if route is None:
        return Handling.UNSUPPORTED
    if route.connected is Handling.FORWARD and is_queued(action, upstream is UpstreamState.CONNECTED, queue_empty):
        return Handling.QUEUE if upstream is not UpstreamState.NONE else Handling.LOCAL
    if upstream is UpstreamState.CONNECTED:
        return route.connected
    return route.away if upstream is UpstreamState.AWAY else route.absent


def check_upstream_may_send(action: str, unique_id: str) -> None:
    """Raises `UnsupportedAction` for an action a CSMS may not send (Rule 5)."""
    if action not in CENTRAL_ACTIONS:
        raise UnsupportedAction(action, unique_id=unique_id)


def fallback(action: str, failure: UpstreamFailure) -> Fallback:
    """Rule 4: a TransactionEvent the upstream did not answer in time is answered by the edge and queued; one it
    refused with a CALLERROR is answered by the edge (sent again, it would be refused the same way). The rest get
    the edge's answer on a timeout and the upstream's CALLERROR as it came."""
    if action in QUEUED_ACTIONS:
        return Fallback.ANSWER_AND_QUEUE if failure is UpstreamFailure.TIMEOUT else Fallback.ANSWER_LOCALLY
    if failure is UpstreamFailure.CALL_ERROR or STATION_ROUTES[action].away is Handling.UNSUPPORTED:
        return Fallback.RELAY_ERROR
    return Fallback.ANSWER_LOCALLY
