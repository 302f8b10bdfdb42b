"""Which messages the edge forwards, answers itself, or queues: the relay rules as tables.

Theory of operation. Every station CALL is first processed by the edge (status recorded, transactions
stored, events published; the hooks run before anything goes upstream). Then its answer comes from one of:
the upstream (FORWARD), the edge (LOCAL), the edge now and the upstream later (QUEUE), or the authorization
chain, which may itself ask the upstream (DECIDE). Without an upstream, the edge is the central system.

Rules (decisions.md §1 "Administration", §4 "Upstream"):
- Rule 1: `STATION_ROUTES` gives, per station action, the handling with the upstream connected, away, and
  absent. Actions a station may not send (a central system's action) are NotSupported.
- Rule 2: Start/Stop/MeterValues queue while the upstream is away and also while older ones still wait
  (`is_queued`), so the upstream sees them in the order the station sent them.
- Rule 3: Authorize is decided by the authorization chain (`authorize`), which forwards only tags that are
  neither in the local list nor decided by a plugin.
- Rule 4: when a forwarded call fails upstream, `fallback` says what the station gets instead: the station
  keeps charging, so transaction messages fall back to the edge's own answer (queued again on a timeout, so
  the upstream gets them later; given up on a CALLERROR, since a resend would be refused the same way) and
  the rest get the edge's answer on a timeout and the upstream's CALLERROR relayed as it came.
- Rule 4a: a transaction message sent upstream (forwarded or replayed) that times out was still sent: the
  upstream may have acted on it and answer late. Its answer is listened for `LATE_ANSWER_WAIT` longer, and
  whatever comes settles it (a StartTransaction's upstream id is mapped from it). Only when no answer can come
  any more (the link dropped, or the wait ran out) is it sent again, so a slow upstream does not get it twice.
- Rule 5: a CALL from the upstream is relayed to the station when it is a central-system action of 1.6;
  a station's action coming from the upstream is NotSupported. If the station does not answer, neither does
  the edge: the upstream sees the same silence it would see talking to the station directly.
- Rule 6: the commands the edge itself sends (API, CLI, console) are `COMMAND_ACTIONS`.
- Rule 7: a station is idle after two heartbeat intervals and a minute without a frame (decisions.md §4), counted
  with the interval it was last given, whoever gave it (`interval_given`): the BootNotification answer, the
  edge's or the upstream's, and a ChangeConfiguration of HeartbeatInterval the station accepted.
- Rule 8: a SignCertificate is signed by the edge (`edge.certificates`) unless the station's site relays CSRs
  to its upstream: then it is forwarded while the upstream is connected, and answered Rejected while it is away
  or does not answer in time (the station asks again later), its CALLERROR relayed as it came.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.edge.core.authorize import UpstreamState
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.frames import CENTRAL_ACTIONS, STATION_ACTIONS, Payload

# Rule 5 applies to these when the upstream is away; everything else a station sends is answered by the edge.
QUEUED_ACTIONS = frozenset({"StartTransaction", "StopTransaction", "MeterValues"})


def is_queued(action: str, upstream_connected: bool, queue_empty: bool) -> bool:
    """Rule 5 and Rule 7 together: a transaction message queues while the upstream is away, and also while older
    ones still wait, so that order holds across a reconnect."""
    return action in QUEUED_ACTIONS and (not upstream_connected or not queue_empty)


class Handling(StrEnum):
    FORWARD = "forward"
    LOCAL = "local"
    QUEUE = "queue"
    DECIDE = "decide"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True, slots=True)
class Route:
    connected: Handling
    away: Handling
    absent: Handling


_F, _L, _Q, _D, _U = Handling.FORWARD, Handling.LOCAL, Handling.QUEUE, Handling.DECIDE, Handling.UNSUPPORTED

# Rule 1.
STATION_ROUTES: Mapping[str, Route] = {
    "BootNotification": Route(_F, _L, _L),
    "Heartbeat": Route(_F, _L, _L),
    "StatusNotification": Route(_F, _L, _L),
    "Authorize": Route(_D, _D, _D),  # Rule 3
    "StartTransaction": Route(_F, _Q, _L),  # Rule 2
    "StopTransaction": Route(_F, _Q, _L),
    "MeterValues": Route(_F, _Q, _L),
    "DataTransfer": Route(_F, _L, _L),
    "DiagnosticsStatusNotification": Route(_F, _L, _L),
    "FirmwareStatusNotification": Route(_F, _L, _L),
    # The Security Whitepaper's messages: the edge keeps a station's security events and signs its CSRs with the
    # company's station CA, unless its site relays CSRs to the upstream (Rule 8); logs and signed firmware are the
    # upstream's business alone.
    "LogStatusNotification": Route(_F, _U, _U),
    "SecurityEventNotification": Route(_F, _L, _L),
    "SignCertificate": Route(_D, _D, _D),
    "SignedFirmwareStatusNotification": Route(_F, _U, _U),
}
assert set(STATION_ROUTES) == STATION_ACTIONS

# Rule 6.
COMMAND_ACTIONS = frozenset(
    {
        "RemoteStartTransaction",
        "RemoteStopTransaction",
        "Reset",
        "UnlockConnector",
        "ChangeAvailability",
        "GetConfiguration",
        "ChangeConfiguration",
        "ClearCache",
        "TriggerMessage",
        "SendLocalList",
        "GetLocalListVersion",
        "ReserveNow",
        "CancelReservation",
        "DataTransfer",
        "GetDiagnostics",  # its file uploaded to the edge's one-time location (services.station_logs)
        # Certificates (the Security Whitepaper's), sent by the edge that signs its stations' CSRs.
        "CertificateSigned",
        "InstallCertificate",
        "DeleteCertificate",
        "GetInstalledCertificateIds",
        "ExtendedTriggerMessage",
    }
)


def route_station_call(action: str, upstream: UpstreamState, queue_empty: bool) -> Handling:
    """Rules 1-3 for a station CALL whose action `frames.check_call` already knows."""
    route = STATION_ROUTES.get(action)
    if route is None:
        return Handling.UNSUPPORTED
    if route.connected is Handling.FORWARD and is_queued(action, upstream is UpstreamState.CONNECTED, queue_empty):
        return Handling.QUEUE if upstream is not UpstreamState.NONE else Handling.LOCAL
    if upstream is UpstreamState.CONNECTED:
        return route.connected
    return route.away if upstream is UpstreamState.AWAY else route.absent


def check_station_may_send(action: str, unique_id: str) -> None:
    """Raises `UnsupportedAction` for an action a station may not send (Rule 1)."""
    if action not in STATION_ACTIONS:
        raise UnsupportedAction(action, unique_id=unique_id)


def check_upstream_may_send(action: str, unique_id: str) -> None:
    """Raises `UnsupportedAction` for an action a central system may not send (Rule 5)."""
    if action not in CENTRAL_ACTIONS:
        raise UnsupportedAction(action, unique_id=unique_id)


class UpstreamFailure(StrEnum):
    TIMEOUT = "timeout"  # no answer in time, or the connection dropped before one came
    CALL_ERROR = "call_error"


class Fallback(StrEnum):
    ANSWER_LOCALLY = "answer_locally"
    ANSWER_AND_QUEUE = "answer_and_queue"
    RELAY_ERROR = "relay_error"


LATE_ANSWER_WAIT = timedelta(minutes=2)  # Rule 4a: how long after its timeout an answer is still taken


def fallback(action: str, failure: UpstreamFailure) -> Fallback:
    """Rule 4."""
    if action in QUEUED_ACTIONS:
        return Fallback.ANSWER_AND_QUEUE if failure is UpstreamFailure.TIMEOUT else Fallback.ANSWER_LOCALLY
    if failure is UpstreamFailure.CALL_ERROR or STATION_ROUTES[action].away is Handling.UNSUPPORTED:
        return Fallback.RELAY_ERROR
    return Fallback.ANSWER_LOCALLY


# The edge's own answers ---------------------------------------------------------------------------------------

HEARTBEAT_INTERVAL = 300  # seconds (decisions.md §4)
EMPTY: Payload = {}


def idle_limit(heartbeat_interval: int) -> timedelta:
    """Rule 7: how long a station given `heartbeat_interval` may stay silent before its connection is closed."""
    return timedelta(seconds=2 * heartbeat_interval + 60)


def interval_given(action: str, payload: Payload, answer: Payload, current: int) -> int:
    """Rule 7: the heartbeat interval a station has after the CALL `action` (`payload`) was answered `answer`,
    given it had `current`. A station that accepts a new interval but applies it only after a reboot keeps
    heartbeating at the old one until then, so it is held to the longer of the two."""
    if action == "BootNotification":
        interval = answer.get("interval")
        return interval if isinstance(interval, int) and interval > 0 else current
    if action == "ChangeConfiguration" and payload.get("key") == "HeartbeatInterval":
        try:
            interval = int(str(payload.get("value")).strip())
        except ValueError:
            return current
        if interval <= 0:
            return current
        status = answer.get("status")
        if status == "Accepted":
            return interval
        if status == "RebootRequired":
            return max(current, interval)
    return current


def ocpp_time(now: datetime) -> str:
    """UTC with a Z and milliseconds, the form stations parse most reliably."""
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def local_answer(action: str, now: datetime) -> Payload:
    """The edge's answer to a station CALL it answers itself, except StartTransaction and Authorize, whose
    answers carry a decision (see `transactions` and `authorize`)."""
    if action == "BootNotification":
        return {"status": "Accepted", "currentTime": ocpp_time(now), "interval": HEARTBEAT_INTERVAL}
    if action == "Heartbeat":
        return {"currentTime": ocpp_time(now)}
    if action == "DataTransfer":
        # No vendor extension lives in the edge.
        return {"status": "UnknownVendorId"}
    return {}


# Reconnecting to the upstream ---------------------------------------------------------------------------------

RECONNECT_BASE = 1.0  # seconds
RECONNECT_CAP = 30.0  # decisions.md §4: at most 30 s apart


def reconnect_delay(attempt: int, jitter: float) -> float:
    """Seconds to wait before reconnect attempt `attempt` (0-based), given `jitter` drawn uniformly from [0, 1).

    Exponential up to the cap, then scaled into [50%, 100%) so that stations cut off together (an upstream
    restart) do not all come back in the same instant."""
    ceiling = min(RECONNECT_CAP, RECONNECT_BASE * float(1 << min(attempt, 16)))
    return ceiling * (0.5 + 0.5 * jitter)
