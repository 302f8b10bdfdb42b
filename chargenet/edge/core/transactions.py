"""Transactions at the edge: ids, repeats, the mapping to an upstream's ids, and the offline queue.

Theory of operation. Stations always get the edge's own transaction ids (decisions.md §4). When a site has an
upstream central system, that system mints ids of its own; the edge keeps both and rewrites the id in every
message that crosses: edge -> upstream in MeterValues and StopTransaction, upstream -> edge in
RemoteStopTransaction and in a SetChargingProfile's TxProfile. While the upstream is away, transaction messages
wait in a durable queue, in order, and are replayed when it returns.

Rules:
- Rule 1: edge transaction ids are positive and unique across the service (they come from one database
  sequence, which the shell passes in as `mint`), and fit a signed 32-bit integer because station firmware
  stores them so.
- Rule 2: a StartTransaction is identified by (station, connector, idTag, timestamp, meterStart). A repeat of
  a known start gets the same id and raises no event; a new one gets a fresh id and raises one (`starts`).
- Rule 3: a StopTransaction is always acknowledged. The first stop of a transaction of this station raises
  one event; a repeat raises none; a stop for a transaction the station does not own (unknown, or another
  station's) is recorded and raises none.
- Rule 4: a missing stop reason is `Local` (decisions.md §3).
- Rule 4a: a connector runs one transaction at a time. A new StartTransaction on a connector whose transaction
  is still open means its StopTransaction was lost: the open one is closed as ended by the new start (stopped
  at the start's timestamp, with its meterStart as meterStop, reason `Other`) and raises its StopTransaction
  event, so a lost stop does not hold its tag ConcurrentTx forever. A start older than the open transaction
  (a late message of an earlier one) closes nothing. The lost stop arriving after all is a repeat (Rule 3).
- Rule 5: a message going up whose transaction has no upstream id yet waits behind the start that will give
  it one. A start the upstream answered has its id, whatever the idTagInfo status: in OCPP 1.6 a start whose
  tag is not accepted is still a transaction of the central system, which the station ends with a
  StopTransaction (reason DeAuthorized), so its later messages go up like any other's. The upstream refused a
  start only when it answered it with a CALLERROR (it gave no id at all); the later messages of a refused
  transaction are not sent up, and dropped from the queue (recorded, never sent). Refusal is recorded apart
  from the id: every integer the upstream gives, 0 included, is an id.
- Rule 6: an upstream id that maps to no edge transaction is never relayed to a station (it could collide
  with an edge id of another transaction); the edge answers the upstream `Rejected` itself.
- Rule 7: the queue is replayed in order, head first, one at a time, at most `ReplayPolicy.rate` messages per
  second. The head leaves the queue when the upstream answers it: CALLRESULT (done) or CALLERROR (the upstream
  will not take it; recorded as failed), even when that answer is late (proxy Rule 4a). A head the upstream
  can no longer answer (the connection lost, or the late answer's wait over) is sent again with a new
  message id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chargenet.domain.events import StopReason
from chargenet.errors import ChargenetError

MAX_TRANSACTION_ID = 2**31 - 1


class TransactionRuleError(ChargenetError):
    """A transaction id that breaks a rule here: one the edge was about to hand out (Rule 1, our bug), or one that
    cannot cross between the edge and an upstream (Rules 5-6)."""


@dataclass(frozen=True, slots=True)
class StartKey:
    station_id: str
    connector_id: int
    id_tag: str
    timestamp: datetime
    meter_start: int


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    transaction_id: int
    key: StartKey
    stopped: bool = False
    upstream_id: int | None = None


def check_transaction_id(value: int) -> int:
    """Rule 1 for an id we are about to hand out; anything else is our bug."""
    if not 1 <= value <= MAX_TRANSACTION_ID:
        raise TransactionRuleError(f"transaction id {value} is outside 1..{MAX_TRANSACTION_ID}")
    return value


class StopOutcome(StrEnum):
    STOPPED = "stopped"
    REPEATED = "repeated"
    UNKNOWN = "unknown"

    @property
    def raises_event(self) -> bool:
        return self is StopOutcome.STOPPED


def decide_stop(record: TransactionRecord | None, station_id: str) -> StopOutcome:
    """Rule 3. `record` is the transaction stored under the reported id, whichever station owns it."""
    if record is None or record.key.station_id != station_id:
        return StopOutcome.UNKNOWN
    return StopOutcome.REPEATED if record.stopped else StopOutcome.STOPPED


def stop_reason(reported: str | None) -> StopReason:
    """Rule 4."""
    return StopReason(reported) if reported else StopReason.LOCAL


@dataclass(frozen=True, slots=True)
class Superseded:
    """How a transaction closed by a newer start on its connector ends (Rule 4a)."""

    transaction_id: int
    stopped_at: datetime
    meter_stop: int
    reason: StopReason = StopReason.OTHER


def supersede(open_record: TransactionRecord, start: StartKey) -> Superseded | None:
    """Rule 4a: how `start` closes `open_record`, or None when it does not."""
    old = open_record.key
    if open_record.stopped or (old.station_id, old.connector_id) != (start.station_id, start.connector_id):
        return None
    if old == start or start.timestamp < old.timestamp:
        return None
    # A meter that went backwards was reset or replaced: the energy is unknown, so none is counted.
    return Superseded(open_record.transaction_id, start.timestamp, max(start.meter_start, old.meter_start))


# Id mapping -------------------------------------------------------------------------------------------------


class UpstreamIdPending(TransactionRuleError):
    """Rule 5: the transaction's start has not been answered by the upstream yet."""

    def __init__(self, transaction_id: int) -> None:
        super().__init__(f"transaction {transaction_id} has no upstream id yet")
        self.transaction_id = transaction_id


class UpstreamIdRefused(TransactionRuleError):
    """Rule 5: the upstream refused the transaction's start, so it has no id there."""

    def __init__(self, transaction_id: int) -> None:
        super().__init__(f"the upstream refused to start transaction {transaction_id}")
        self.transaction_id = transaction_id


class UnknownUpstreamId(TransactionRuleError):
    """Rule 6: the upstream named a transaction id the edge never mapped."""

    def __init__(self, upstream_id: int) -> None:
        super().__init__(f"upstream transaction id {upstream_id} maps to no edge transaction")
        self.upstream_id = upstream_id


@dataclass(slots=True)
class IdMap:
    """Edge ids <-> upstream ids for one station's transactions, both ways."""

    _up: dict[int, int]
    _down: dict[int, int]
    _refused: set[int]

    def __init__(self, pairs: Mapping[int, int] | None = None) -> None:
        self._up, self._down, self._refused = {}, {}, set()
        for edge_id, upstream_id in (pairs or {}).items():
            self.link(edge_id, upstream_id)

    def link(self, edge_id: int, upstream_id: int) -> None:
        self._up[edge_id] = upstream_id
        self._down[upstream_id] = edge_id

    def refuse(self, edge_id: int) -> None:
        """The upstream refused this start (Rule 5), whether or not it gave it an id (`link`)."""
        self._refused.add(edge_id)

    def upstream_of(self, edge_id: int) -> int:
        """Raises `UpstreamIdPending` or `UpstreamIdRefused` (Rule 5)."""
        if edge_id in self._refused:
            raise UpstreamIdRefused(edge_id)
        upstream_id = self._up.get(edge_id)
        if upstream_id is None:
            raise UpstreamIdPending(edge_id)
        return upstream_id

    def edge_of(self, upstream_id: int) -> int:
        """Raises `UnknownUpstreamId` (Rule 6)."""
        edge_id = self._down.get(upstream_id)
        if edge_id is None:
            raise UnknownUpstreamId(upstream_id)
        return edge_id


class Delivery(StrEnum):
    """What becomes of a transaction message the relay rules send up now (Rule 5)."""

    SEND = "send"  # up now, under the upstream's id
    QUEUE = "queue"  # behind its start, which has no upstream id yet
    KEEP = "keep"  # answered by the edge and sent nowhere: the upstream refused its start


def delivery(transaction_id: int | None, ids: IdMap) -> Delivery:
    """Rule 5 for a message of `transaction_id` (None: readings outside a transaction, which need no id)."""
    if transaction_id is None:
        return Delivery.SEND
    try:
        ids.upstream_of(transaction_id)
    except UpstreamIdRefused:
        return Delivery.KEEP
    except UpstreamIdPending:
        return Delivery.QUEUE
    return Delivery.SEND
