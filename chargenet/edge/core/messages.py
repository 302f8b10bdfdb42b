"""What stations tell the edge, as typed records that do not depend on the protocol generation.

A face (`edge/ocpp16/`, one day `edge/ocpp201/`) reads each station CALL it has validated into one of these, the
edge decides on them, and the face renders the decision back in its generation's words. The names are the
event model's (`domain.events`), never one generation's: a connector is the service's `ConnectorAddress` plus the
number the station's own messages use for it; a driver's token is an `IdToken` (1.6 sends only the value, an
`idTag`; 2.0.1 adds a type); a transaction is the edge's own id, which the service's events and every store row
use, with the station's own name for it beside it when the generation lets stations name transactions (2.0.1's
string `transactionId`; a 1.6 station uses the edge's id).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import StopReason
from chargenet.domain.evse import ChargingState, MappedStopReason
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge.core.transactions import StartKey


@dataclass(frozen=True, slots=True)
class IdToken:
    value: str  # what events carry as `idTag`
    type: str | None = None  # 2.0.1's idToken type; a 1.6 idTag has none


@dataclass(frozen=True, slots=True)
class ConnectorRef:
    address: ConnectorAddress  # where the connector sits in the service's tree
    station_number: int  # how the station's messages number it (1.6 connectorId; 0 is the whole charge point)


@dataclass(frozen=True, slots=True)
class StationBooted:
    """What a station says of itself when it boots (1.6 BootNotification). The values are kept as the station
    sent them: a station's vendor and model are its own business."""

    vendor: object
    model: object
    firmware_version: object


@dataclass(frozen=True, slots=True)
class StatusReport:
    """A connector's status as the station reported it (1.6 StatusNotification)."""

    connector: ConnectorRef
    status: KnownStatus


@dataclass(frozen=True, slots=True)
class TokenPresented:
    """A driver's token the station asks about before charging (1.6 Authorize)."""

    token: IdToken


@dataclass(frozen=True, slots=True)
class TransactionStarted:
    """A transaction the station started (1.6 StartTransaction)."""

    connector: ConnectorRef
    token: IdToken
    timestamp: datetime
    meter_start_wh: int
    reservation_id: int | None = None
    station_transaction_id: str | None = None  # a 2.0.1 station names its transactions; a 1.6 one takes ours

    def key(self, station_id: str) -> StartKey:
        """What identifies this start among the station's resent messages (transactions Rule 2)."""
        return StartKey(
            station_id, self.connector.station_number, self.token.value, self.timestamp, self.meter_start_wh
        )


@dataclass(frozen=True, slots=True)
class TransactionEnded:
    """A transaction the station ended (1.6 StopTransaction)."""

    transaction_id: int  # the edge's id
    timestamp: datetime
    meter_stop_wh: int
    reason: StopReason  # what the station said, or the rule's default (transactions Rule 4)
    token: IdToken | None = None  # the token that ended it, when the station names one


@dataclass(frozen=True, slots=True)
class MeterReport:
    """Meter readings the station sent during a transaction or outside one (1.6 MeterValues)."""

    connector: ConnectorRef
    transaction_id: int | None  # the edge's id, when the readings belong to a transaction


class TransactionEventKind(StrEnum):
    STARTED = "Started"
    UPDATED = "Updated"
    ENDED = "Ended"


@dataclass(frozen=True, slots=True)
class TransactionReport:
    """One event of a transaction the station names itself (2.0.1 TransactionEvent): the station's id for it, its
    place in the transaction's messages (`seq_no`), and what it says of the connector, the token and the meter."""

    kind: TransactionEventKind
    station_transaction_id: str
    seq_no: int
    timestamp: datetime
    trigger: str
    offline: bool
    connector: ConnectorRef | None  # where it runs, when the event says
    token: IdToken | None
    charging: ChargingState | None
    stopped: MappedStopReason | None  # Ended only
    meter_begin_wh: int | None  # the energy register read with context Transaction.Begin
    meter_end_wh: int | None  # ... with context Transaction.End
    meter_first_wh: int | None  # the earliest and latest energy register readings of any context
    meter_last_wh: int | None
    reservation_id: int | None = None
    began_at: datetime | None = None  # when the transaction's earliest event was sent, when an earlier one was
    remote_start_id: int | None = None  # the RequestStartTransaction it follows, when the station says
