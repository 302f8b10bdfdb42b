"""Charging sessions and station commands over the API (decisions.md §1 "Sessions over the API").

Each function finds the station behind a charge point or transaction (checking the caller's reach through the
`allowed` callback, which answers for a (company, site) pair), sends the command through the edge, and turns
the station's answer into a result or an error: `StationNotConnected` (503), `StationDidNotAnswer` (504),
`StationAnswerFailed` (502: a CALLERROR or an answer that breaks its schema), `StationRejected` (409 for
sessions), `NotFound` (404, also for what the caller may not see).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.tenants import (
    ConnectorAddress,
    StationLayout,
    charge_point_connector_ids,
    ocpp_connector_id,
)
from chargenet.domain.text import INT32_MAX, INT32_MIN
from chargenet.edge.hub import Edge
from chargenet.edge.protocol.frames import Payload
from chargenet.errors import Conflict, InvalidInput, NotFound, StationRejected
from chargenet.services.localauth import validate_id_tag
from chargenet.services.stations import layout_of
from chargenet.store.db import Store
from chargenet.store.models import ChargePoint, EdgeTransaction, MeterSession, Site, Station

Allowed = Callable[[str, str], bool]  # (company_id, site_id) -> may the caller act there


@dataclass(frozen=True, slots=True)
class Target:
    station_id: str
    ocpp_connector_id: int
    layout: StationLayout
    address: ConnectorAddress


async def _site_company(session: AsyncSession, site_id: str) -> str:
    company = await session.scalar(select(Site.company_id).where(Site.id == site_id))
    assert company is not None
    return company


async def _target(session: AsyncSession, charge_point_id: str, connector_id: int, allowed: Allowed) -> Target:
    point = await session.get(ChargePoint, charge_point_id)
    if point is None or not allowed(await _site_company(session, point.site_id), point.site_id):
        raise NotFound("charge point", charge_point_id)
    station = await session.get(Station, point.station_id)
    assert station is not None
    layout = layout_of(station)
    per = layout.connectors_per_charge_point
    if connector_id < 0 or (per is not None and connector_id > per):
        raise InvalidInput(f"{charge_point_id} has no connector {connector_id}", field="connectorId")
    address = ConnectorAddress(charge_point_id, connector_id)
    return Target(station.id, ocpp_connector_id(layout, address), layout, address)


async def _command(edge: Edge, target: Target, action: str, payload: Payload) -> Payload:
    return await edge.command(target.station_id, action, payload)


def _accepted(station_id: str, action: str, answer: Payload) -> dict[str, str]:
    status = str(answer.get("status"))
    if status != "Accepted":
        raise StationRejected(station_id, action, status)
    return {"status": status}


async def start_session(
    store: Store, edge: Edge, allowed: Allowed, *, charge_point_id: str, connector_id: int, id_tag: str
) -> dict[str, str]:
    """RemoteStartTransaction; `{"status": "Accepted"}` once the station accepted it."""
    validate_id_tag(id_tag)
    if connector_id < 1:
        raise InvalidInput("a session starts on a connector numbered from 1", field="connectorId")
    async with store.transaction() as session:
        target = await _target(session, charge_point_id, connector_id, allowed)
    payload = {"connectorId": target.ocpp_connector_id, "idTag": id_tag}
    answer = await _command(edge, target, "RemoteStartTransaction", payload)
    return _accepted(target.station_id, "RemoteStartTransaction", answer)


async def stop_session(store: Store, edge: Edge, allowed: Allowed, *, transaction_id: int) -> dict[str, str]:
    """RemoteStopTransaction, sent to the transaction's own station only."""
    async with store.transaction() as session:
        row = await session.get(EdgeTransaction, transaction_id)
        if row is None:
            metered = await session.get(MeterSession, transaction_id)
            if metered is not None and allowed(await _site_company(session, metered.site_id), metered.site_id):
                raise Conflict(
                    f"transaction {transaction_id} was detected from a meter; it cannot be stopped remotely "
                    "and ends when the meter sees the charging stop"
                )
            raise NotFound("transaction", str(transaction_id))
        if not allowed(await _site_company(session, row.site_id), row.site_id):
            raise NotFound("transaction", str(transaction_id))
        if row.stopped_at is not None:
            raise StationRejected(row.station_id, "RemoteStopTransaction", "AlreadyStopped")
        station_id = row.station_id
    answer = await edge.command(station_id, "RemoteStopTransaction", {"transactionId": transaction_id})
    return _accepted(station_id, "RemoteStopTransaction", answer)


async def charge_point_command(
    store: Store,
    edge: Edge,
    allowed: Allowed,
    *,
    charge_point_id: str,
    action: str,
    payload: Payload,
    connector_id: int = 0,
) -> dict[str, str]:
    """Reset, UnlockConnector, ChangeAvailability, TriggerMessage: the station's answer, whatever it is."""
    async with store.transaction() as session:
        target = await _target(session, charge_point_id, connector_id, allowed)
    if "connectorId" in payload:
        payload = {**payload, "connectorId": target.ocpp_connector_id}
    answer = await _command(edge, target, action, payload)
    return {"status": str(answer.get("status"))}


# The least favourable answer of several stands for them all: a charge point is only as available as its
# least available connector.
_AVAILABILITY_ANSWERS = ("Rejected", "Scheduled", "Accepted")


async def change_availability(
    store: Store, edge: Edge, allowed: Allowed, *, charge_point_id: str, connector_id: int, availability: str
) -> dict[str, Any]:
    """ChangeAvailability of one connector of a charge point, or with connector 0 of the whole charge point.

    On a station with several charge points OCPP's connector 0 is the whole station, so a charge point's own
    availability goes to each of its connectors, one command each; the answer is then the least favourable
    status (Rejected, Scheduled, Accepted) with each connector's own under `connectors`."""
    async with store.transaction() as session:
        target = await _target(session, charge_point_id, connector_id, allowed)
    ids = charge_point_connector_ids(target.layout, target.address)
    statuses = []
    for ocpp_id in ids:  # in turn: the station takes one command at a time anyway
        answer = await _command(edge, target, "ChangeAvailability", {"connectorId": ocpp_id, "type": availability})
        statuses.append(str(answer.get("status")))
    if len(ids) == 1:
        return {"status": statuses[0]}
    worst = next((s for s in _AVAILABILITY_ANSWERS if s in statuses), statuses[0])
    per_connector = [{"connectorId": j, "status": s} for j, s in enumerate(statuses, start=1)]
    return {"status": worst, "connectors": per_connector}


@dataclass(frozen=True, slots=True)
class TransactionView:
    """One transaction, from an OCPP station or detected from a meter (`source`)."""

    transaction_id: int
    source: str
    site_id: str
    station_id: str
    charge_point_id: str
    connector_id: int
    id_tag: str
    started_at: datetime
    meter_start_wh: int
    stopped_at: datetime | None
    meter_stop_wh: int | None
    reason: str | None

    @classmethod
    def of_edge(cls, row: EdgeTransaction) -> TransactionView:
        return cls(
            row.id, "ocpp", row.site_id, row.station_id, row.charge_point_id, row.connector_id, row.id_tag,
            row.started_at, row.meter_start, row.stopped_at, row.meter_stop, row.stop_reason,
        )  # fmt: skip

    @classmethod
    def of_meter(cls, row: MeterSession) -> TransactionView:
        return cls(
            row.transaction_id, "meter", row.site_id, row.station_id, row.charge_point_id, row.connector_id,
            row.id_tag, row.started_at, row.meter_start_wh, row.stopped_at, row.meter_stop_wh, row.reason,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "transactionId": self.transaction_id,
            "source": self.source,
            "siteId": self.site_id,
            "stationId": self.station_id,
            "chargePointId": self.charge_point_id,
            "connectorId": self.connector_id,
            "idTag": self.id_tag,
            "startedAt": self.started_at.isoformat(),
            "meterStart": wh_to_kwh(self.meter_start_wh),
            "active": self.stopped_at is None,
        }
        if self.stopped_at is not None and self.meter_stop_wh is not None:
            data.update(
                stoppedAt=self.stopped_at.isoformat(), meterStop=wh_to_kwh(self.meter_stop_wh), reason=self.reason
            )
        return data


def encode_cursor(transaction_id: int) -> str:
    return base64.urlsafe_b64encode(str(transaction_id).encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> int:
    try:
        after = int(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
    except ValueError:
        after = None
    if after is None or not INT32_MIN <= after <= INT32_MAX:  # transaction ids are 32-bit (decisions)
        raise InvalidInput("not a cursor from a previous page", field="cursor")
    return after


async def list_transactions(
    session: AsyncSession,
    allowed: Allowed,
    *,
    limit: int,
    after: int | None = None,
    site_id: str | None = None,
    charge_point_id: str | None = None,
    active: bool | None = None,
) -> tuple[list[TransactionView], int | None]:
    """A page of transactions (OCPP and meter sessions, one id sequence) in id order, only on sites the caller
    reaches; returns the page and the last id when more may follow."""
    sites = [s for s, company in (await session.execute(select(Site.id, Site.company_id))).all() if allowed(company, s)]
    edge = select(EdgeTransaction).where(EdgeTransaction.site_id.in_(sites)).order_by(EdgeTransaction.id).limit(limit)
    metered = (
        select(MeterSession).where(MeterSession.site_id.in_(sites)).order_by(MeterSession.transaction_id).limit(limit)
    )
    if after is not None:
        edge = edge.where(EdgeTransaction.id > after)
        metered = metered.where(MeterSession.transaction_id > after)
    if site_id is not None:
        edge = edge.where(EdgeTransaction.site_id == site_id)
        metered = metered.where(MeterSession.site_id == site_id)
    if charge_point_id is not None:
        edge = edge.where(EdgeTransaction.charge_point_id == charge_point_id)
        metered = metered.where(MeterSession.charge_point_id == charge_point_id)
    if active is not None:
        edge = edge.where(EdgeTransaction.stopped_at.is_(None) if active else EdgeTransaction.stopped_at.is_not(None))
        metered = metered.where(MeterSession.stopped_at.is_(None) if active else MeterSession.stopped_at.is_not(None))
    views = [TransactionView.of_edge(r) for r in await session.scalars(edge)]
    views += [TransactionView.of_meter(r) for r in await session.scalars(metered)]
    page = sorted(views, key=lambda v: v.transaction_id)[:limit]
    return page, (page[-1].transaction_id if len(page) == limit else None)


async def station_presence_json(session: AsyncSession, edge: Edge, station_id: str) -> dict[str, Any]:
    """Connection state and last heartbeat, for the charge point's status in the API."""
    from chargenet.edge import records

    row = await records.presence(session, station_id)

    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value else None

    return {
        "connection": "connected" if edge.is_connected(station_id) else "disconnected",
        "lastHeartbeat": iso(row.last_heartbeat_at) if row else None,
        "lastSeen": iso(row.last_seen_at) if row else None,
    }
