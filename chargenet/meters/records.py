"""Meters in the store: a meter's configuration as read back, and its sessions with their StartTransaction and
StopTransaction, published in the same transaction.

A meter session is stored (and flushed) before its StartTransaction is published, both in the caller's
transaction: the event exists iff the session does. Payloads are the ones OCPP sessions use (service.md §6
rule 3); meter sessions are never sent to an upstream (decisions.md §4).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.events import StartTransactionPayload, StopReason, StopTransactionPayload
from chargenet.errors import InvalidInput
from chargenet.meters.bus import Transport
from chargenet.meters.detect import Mark
from chargenet.meters.spec import MeterSpec, ThresholdSettings, build_spec, build_thresholds, parse_transport
from chargenet.outbox import Outbox
from chargenet.store.models import GridMeter, Meter, MeterSession, MeterState
from chargenet.store.sequences import next_transaction_id


async def start_session(
    session: AsyncSession, outbox: Outbox, spec: MeterSpec, *, meter_start_wh: int, started_at: datetime, at: datetime
) -> int:
    """Store a new open session and publish its StartTransaction; returns the transaction id."""
    transaction_id = await next_transaction_id(session)
    session.add(
        MeterSession(
            transaction_id=transaction_id,
            meter_id=spec.meter_id,
            site_id=spec.site_id,
            station_id=spec.station_id,
            charge_point_id=spec.charge_point_id,
            connector_id=spec.connector_id,
            id_tag=spec.id_tag,
            meter_start_wh=meter_start_wh,
            started_at=started_at,
            last_charging_wh=meter_start_wh,
            last_charging_at=at,
        )
    )
    await session.flush()
    await outbox.publish(
        session,
        site_id=spec.site_id,
        payload=StartTransactionPayload(
            stationId=spec.station_id,
            chargePointId=spec.charge_point_id,
            connectorId=spec.connector_id,
            idTag=spec.id_tag,
            meterStart=wh_to_kwh(meter_start_wh),
            transactionId=transaction_id,
        ),
    )
    return transaction_id


async def stop_session(
    session: AsyncSession,
    outbox: Outbox,
    transaction_id: int,
    *,
    meter_stop_wh: int,
    reason: StopReason,
    at: datetime,
) -> bool:
    """Close an open session and publish its StopTransaction; False (and no event) if it was already closed."""
    row = await session.scalar(
        select(MeterSession).where(MeterSession.transaction_id == transaction_id).with_for_update()
    )
    if row is None or row.stopped_at is not None:
        return False
    row.meter_stop_wh = max(meter_stop_wh, row.meter_start_wh)
    row.stopped_at = at
    row.reason = reason.value
    await session.flush()
    await outbox.publish(
        session,
        site_id=row.site_id,
        payload=StopTransactionPayload(
            stationId=row.station_id,
            chargePointId=row.charge_point_id,
            connectorId=row.connector_id,
            idTag=row.id_tag,
            meterStart=wh_to_kwh(row.meter_start_wh),
            meterStop=wh_to_kwh(row.meter_stop_wh),
            transactionId=row.transaction_id,
            reason=reason,
        ),
    )
    return True


async def record_progress(session: AsyncSession, transaction_id: int, last_charging: Mark) -> None:
    """Remember an open session's last charging reading: where it closes if the process dies and never sees more."""
    await session.execute(
        update(MeterSession)
        .where(MeterSession.transaction_id == transaction_id, MeterSession.stopped_at.is_(None))
        .values(last_charging_wh=last_charging.energy_wh, last_charging_at=last_charging.at)
    )


async def open_session_of(session: AsyncSession, meter_id: str) -> MeterSession | None:
    return await session.scalar(
        select(MeterSession).where(MeterSession.meter_id == meter_id, MeterSession.stopped_at.is_(None))
    )


async def save_state(
    session: AsyncSession,
    meter_id: str,
    *,
    baseline: Mark,
    max_current_a: float | None,
    power_w: float | None,
    phase: str,
) -> None:
    row = await session.get(MeterState, meter_id)
    if row is None:
        row = MeterState(meter_id=meter_id)
        session.add(row)
    row.energy_wh, row.read_at = baseline.energy_wh, baseline.at
    row.max_current_a, row.power_w, row.phase = max_current_a, power_w, phase
    await session.flush()


def transport_of(row: Meter | GridMeter) -> Transport:
    """The bus a stored meter is on, a session's or a grid's (both keep it in the same columns)."""
    if row.transport == "tcp":
        return parse_transport(tcp=f"[{row.tcp_host}]:{row.tcp_port}", rtu=None)
    if row.transport == "rtu":
        return parse_transport(
            tcp=None, rtu=row.rtu_device or "", baud=row.baudrate, parity=row.parity, stopbits=row.stopbits
        )
    raise InvalidInput(f"unknown transport {row.transport!r}", field="transport")


def spec_of(row: Meter) -> MeterSpec:
    """The validated configuration of a stored meter; InvalidInput naming the setting when a row is malformed."""
    return build_spec(
        meter_id=row.id,
        site_id=row.site_id,
        station_id=row.station_id,
        charge_point_id=row.charge_point_id,
        connector_id=row.connector_id,
        id_tag=row.id_tag,
        profile=row.profile,
        unit_id=row.unit_id,
        transport=transport_of(row),
        thresholds=build_thresholds(
            ThresholdSettings(
                start_current=row.start_current_a,
                stop_current=row.stop_current_a,
                start_power=row.start_power_w,
                stop_power=row.stop_power_w,
                stop_grace=row.stop_grace_s,
                outage_close=row.outage_close_s,
            )
        ),
        poll_interval_s=row.poll_interval_s,
    )
