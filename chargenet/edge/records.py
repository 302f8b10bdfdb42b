"""What the edge reads and writes in the store. Every state change that raises an event publishes it through
the outbox in the same transaction, so an event exists exactly when its cause was committed."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Insert, Table, bindparam, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.events import (
    AuthorizationStatus,
    AuthorizePayload,
    StartTransactionPayload,
    StopTransactionPayload,
)
from chargenet.domain.generations import GENERATIONS, UPSTREAM_DEFAULT, parse_upstream_versions, parse_versions
from chargenet.domain.security_profiles import Expectations
from chargenet.domain.tenants import ConnectorAddress, StationLayout
from chargenet.domain.upstream_profiles import UpstreamTls, parse_upstream_profile
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import starts, transaction_events
from chargenet.edge.core import transactions as tx
from chargenet.edge.core.messages import (
    ConnectorRef,
    IdToken,
    MeterReport,
    StationBooted,
    TransactionEnded,
    TransactionReport,
    TransactionStarted,
)
from chargenet.edge.ocpp16 import relaying
from chargenet.edge.ocpp16.frames import Payload, dump_payload
from chargenet.edge.remote_starts import link_request
from chargenet.outbox import Outbox
from chargenet.store.models import (
    AuthCacheEntry,
    Company,
    EdgeTransaction,
    LocalAuthEntry,
    Site,
    Station,
    StationNotice,
    StationPresence,
    UnknownStop,
    UnstartedTransaction,
    UpstreamMessage,
)
from chargenet.store.sequences import next_transaction_id


@dataclass(frozen=True, slots=True)
class StationInfo:
    station_id: str
    site_id: str
    password_hash: str | None
    layout: StationLayout
    upstream_url: str | None
    upstream_password: bytes | None  # encrypted; the station's own, else the site's
    security_profile: int
    company_id: str
    serial_number: str | None
    organisation_name: str | None  # the company's
    ocpp_versions: tuple[str, ...] = GENERATIONS  # the generations it may connect with (domain.generations)
    upstream_versions: tuple[str, ...] = UPSTREAM_DEFAULT  # the generations its site's upstream takes
    relays_csrs: bool = False  # its site sends its CSRs to the upstream rather than signing them
    upstream_tls: UpstreamTls | None = None  # its site's TLS towards the upstream (domain.upstream_profiles)

    @property
    def certificate_expectations(self) -> Expectations:
        """What its certificates must name (decisions.md "Security profiles")."""
        return Expectations(common_name=self.serial_number or self.station_id, organisation=self.organisation_name)


_STATION = (
    select(
        Station.id,
        Station.site_id,
        Station.password_hash,
        Station.charge_points,
        Station.connectors_per_charge_point,
        Site.upstream_url,
        func.coalesce(Station.upstream_password, Site.upstream_password),
        Station.ocpp_versions,
        Station.security_profile,
        Site.company_id,
        Station.serial_number,
        Company.organisation_name,
        Site.upstream_ocpp_versions,
        Site.station_csrs,
        Site.upstream_security_profile,
        Site.upstream_client_subject,
        Site.upstream_ca_certificates,
    )
    .join(Site, Site.id == Station.site_id)
    .join(Company, Company.id == Site.company_id)
    .where(Station.id == bindparam("station_id"))
)


def load_station(connection: Connection, station_id: str) -> StationInfo | None:
    """What answering a station's handshake needs, in one statement (run by `Store.read_statement`: a station
    connecting never queues behind the store's writers)."""
    row = connection.execute(_STATION, {"station_id": station_id}).first()
    if row is None:
        return None
    found, site_id, password_hash, charge_points, connectors, upstream_url, upstream_password, versions, *rest = row
    profile, company, serial_number, organisation_name, upstream_versions, station_csrs, *tls = rest
    upstream_profile, client, bundle = tls
    return StationInfo(
        station_id=found,
        site_id=site_id,
        password_hash=password_hash,
        layout=StationLayout(found, charge_points, connectors),
        upstream_url=upstream_url,
        upstream_password=upstream_password,
        ocpp_versions=parse_versions(versions),
        security_profile=profile,
        company_id=company,
        serial_number=serial_number,
        organisation_name=organisation_name,
        upstream_versions=parse_upstream_versions(upstream_versions),
        relays_csrs=station_csrs == "relay" and upstream_url is not None,
        upstream_tls=UpstreamTls(
            parse_upstream_profile(upstream_profile), upstream_url, client is not None, bundle is not None
        ),
    )


# Presence ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Boot:
    """What a BootNotification says of its station, to be written with the group commit's next batch."""

    station_id: str
    vendor: object
    model: object
    firmware_version: object
    at: datetime


def boot_of(station_id: str, booted: StationBooted, now: datetime) -> Boot:
    return Boot(station_id, booted.vendor, booted.model, booted.firmware_version, now)


_BOOT_FIELDS = ("vendor", "model", "firmware_version", "booted_at", "last_seen_at")


@functools.cache
def presence_upsert(dialect: str, names: tuple[str, ...]) -> Insert:
    """The upsert of presence rows that set these fields, built once for each set of fields met: one statement
    for all the rows of a batch (boots, connections) that set the same fields."""
    presence = cast(Table, StationPresence.__table__)
    upsert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(presence)
    newer = None
    if "connected" in names:
        # A station that left this process may be connected to another by the time this process writes that it
        # went away: a departure older than the connection the row has is not news.
        current = presence.c.connected_at
        newer = or_(upsert.excluded.connected, current.is_(None), current <= upsert.excluded.disconnected_at)
    return upsert.on_conflict_do_update(
        index_elements=[presence.c.station_id], set_={name: upsert.excluded[name] for name in names}, where=newer
    )


async def record_boots(session: AsyncSession, boots: list[Boot]) -> None:
    """The boots of a batch in one prebuilt upsert (a statement built per boot cost the event loop more than the
    write during a reconnect storm). Insert-or-update: the message log inserts the same row from its own
    transaction when the station connects, a race a read-then-add could lose. A station that booted twice in the
    batch keeps its last boot (one statement may not change a row twice on PostgreSQL)."""
    last = {boot.station_id: boot for boot in boots}
    rows = [
        {
            "station_id": boot.station_id,
            "vendor": boot.vendor,
            "model": boot.model,
            "firmware_version": boot.firmware_version,
            "booted_at": boot.at,
            "last_seen_at": boot.at,
        }
        for boot in last.values()
    ]
    await session.execute(presence_upsert(session.get_bind().dialect.name, _BOOT_FIELDS), rows)


async def presence(session: AsyncSession, station_id: str) -> StationPresence | None:
    return await session.get(StationPresence, station_id)


# Authorization -----------------------------------------------------------------------------------------------


async def local_entry(session: AsyncSession, site_id: str, id_tag: str) -> auth.LocalAuthEntry | None:
    row = await session.get(LocalAuthEntry, (site_id, id_tag))
    if row is None:
        return None
    return auth.LocalAuthEntry(row.id_tag, AuthorizationStatus(row.status), row.expires_at, row.parent_id_tag)


async def cached_authorization(session: AsyncSession, site_id: str, id_tag: str) -> auth.CachedAuthorization | None:
    row = await session.get(AuthCacheEntry, (site_id, id_tag))
    if row is None:
        return None
    return auth.CachedAuthorization(
        row.id_tag, AuthorizationStatus(row.status), row.valid_until, row.parent_id_tag, row.expires_at
    )


async def cache_authorization(session: AsyncSession, site_id: str, entry: auth.CachedAuthorization) -> None:
    row = await session.get(AuthCacheEntry, (site_id, entry.id_tag))
    if row is None:
        row = AuthCacheEntry(site_id=site_id, id_tag=entry.id_tag)
        session.add(row)
    row.status, row.valid_until, row.parent_id_tag = entry.status.value, entry.valid_until, entry.parent_id_tag
    row.expires_at = entry.expires_at


# Built once: these run for every start and every 2.0.1 TransactionEvent that is not a running one's Updated, and
# building them cost more than running them.
_ACTIVE_OF_TAG = (
    select(EdgeTransaction.id)
    .where(
        EdgeTransaction.site_id == bindparam("site_id"),
        EdgeTransaction.id_tag == bindparam("id_tag"),
        EdgeTransaction.stopped_at.is_(None),
    )
    .limit(1)
)
_STATION_TRANSACTION = (
    select(EdgeTransaction)
    .where(
        EdgeTransaction.station_id == bindparam("station_id"),
        EdgeTransaction.station_transaction_id == bindparam("station_transaction_id"),
    )
    .with_for_update()
)


async def has_active_transaction(session: AsyncSession, site_id: str, id_tag: str) -> bool:
    """Whether the tag has an open transaction at the site (authorize Rule 5; a site judges its own stations)."""
    found = await session.scalar(_ACTIVE_OF_TAG, {"site_id": site_id, "id_tag": id_tag})
    return found is not None


async def publish_authorize(
    session: AsyncSession,
    outbox: Outbox,
    station: StationInfo,
    id_tag: str,
    decision: auth.AuthDecision,
    *,
    address: ConnectorAddress | None = None,
    id_token_type: str | None = None,
) -> None:
    """The post-authorize hook: one Authorize event per decision (decisions.md §3)."""
    extra: dict[str, Any] = {}
    if address is not None:
        extra = {"chargePointId": address.charge_point_id, "connectorId": address.connector_id}
    if id_token_type is not None:
        extra["idTokenType"] = id_token_type
    payload = AuthorizePayload(stationId=station.station_id, idTag=id_tag, status=decision.status, **extra)
    await outbox.publish(session, site_id=station.site_id, payload=payload)


# Transactions ------------------------------------------------------------------------------------------------


def _record(row: EdgeTransaction) -> tx.TransactionRecord:
    key = tx.StartKey(row.station_id, row.ocpp_connector_id, row.id_tag, row.started_at, row.meter_start)
    return tx.TransactionRecord(row.id, key, stopped=row.stopped_at is not None, upstream_id=row.upstream_id)


async def _find_start(session: AsyncSession, key: tx.StartKey) -> EdgeTransaction | None:
    result: EdgeTransaction | None = await session.scalar(
        select(EdgeTransaction).where(
            EdgeTransaction.station_id == key.station_id,
            EdgeTransaction.ocpp_connector_id == key.connector_id,
            EdgeTransaction.id_tag == key.id_tag,
            EdgeTransaction.started_at == key.timestamp,
            EdgeTransaction.meter_start == key.meter_start,
            EdgeTransaction.station_transaction_id.is_(None),  # a 1.6 start (and the partial unique index)
        )
    )
    return result


async def start_facts(session: AsyncSession, station: StationInfo, key: tx.StartKey) -> starts.StartFacts:
    """What `starts.plan_start` needs. The connector's open transactions are locked: the unit that reads them
    is the one that closes them."""
    existing = await _find_start(session, key)
    if existing is not None:
        status = AuthorizationStatus(existing.auth_status or AuthorizationStatus.ACCEPTED)
        return starts.StartFacts(starts.RepeatedStart(existing.id, status), None, None, (), ())
    on_connector = await session.scalars(
        select(EdgeTransaction)
        .where(
            EdgeTransaction.station_id == station.station_id,
            EdgeTransaction.ocpp_connector_id == key.connector_id,
            EdgeTransaction.stopped_at.is_(None),
        )
        .with_for_update()
    )
    open_on_connector = [_record(row) for row in on_connector]
    of_token = await session.scalars(
        select(EdgeTransaction).where(
            EdgeTransaction.site_id == station.site_id,
            EdgeTransaction.id_tag == key.id_tag,
            EdgeTransaction.stopped_at.is_(None),
        )
    )
    return starts.StartFacts(
        repeat=None,
        local_entry=await local_entry(session, station.site_id, key.id_tag),
        cached=await cached_authorization(session, station.site_id, key.id_tag),
        open_of_token=[_record(row) for row in of_token],
        open_on_connector=open_on_connector,
    )


@dataclass(frozen=True, slots=True)
class QueuedCall:
    """A station message to queue for the upstream as it was sent (the queue replays it in its own words)."""

    action: str
    payload: Payload


@dataclass(frozen=True, slots=True)
class StartWritten:
    transaction_id: int
    closed: list[int]  # the transactions the start ended (Rule 4a)
    sequence: int | None  # its place in the upstream queue, when queued


async def record_start(
    session: AsyncSession,
    outbox: Outbox,
    station: StationInfo,
    started: TransactionStarted,
    plan: starts.NewStart,
    now: datetime,
    *,
    publish_authorize_now: bool,
    queue: QueuedCall | None,
) -> StartWritten:
    """A new start (transactions Rules 2 and 4a) in the caller's unit: the open transactions it ends are closed with
    their StopTransaction events, the start is stored with its StartTransaction event, and, when the station's
    answer is the edge's own, its Authorize event is published and the start queued for the upstream. A start that
    follows a session request of the API is linked to it, and its event names it (`remote_starts`).
    A concurrent identical start makes the insert fail on its unique constraint (`is_duplicate_start`)."""
    closed = []
    for ending in plan.closes:
        row = await session.get(EdgeTransaction, ending.transaction_id)  # locked and loaded by `start_facts`
        assert row is not None
        row.stopped_at, row.meter_stop, row.stop_reason = ending.stopped_at, ending.meter_stop, ending.reason.value
        stop = StopTransactionPayload(
            stationId=station.station_id,
            chargePointId=row.charge_point_id,
            connectorId=row.connector_id,
            idTag=row.id_tag,
            meterStart=wh_to_kwh(row.meter_start),
            meterStop=wh_to_kwh(ending.meter_stop),
            transactionId=row.id,
            reason=ending.reason,
        )
        await outbox.publish(session, site_id=station.site_id, payload=stop)
        closed.append(row.id)
    address = started.connector.address
    row = EdgeTransaction(
        # One sequence for OCPP and meter transactions, so ids are unique across the service.
        id=await next_transaction_id(session),
        station_id=station.station_id,
        site_id=station.site_id,
        charge_point_id=address.charge_point_id,
        connector_id=address.connector_id,
        ocpp_connector_id=started.connector.station_number,
        id_tag=started.token.value,
        started_at=started.timestamp,
        meter_start=started.meter_start_wh,
        reservation_id=started.reservation_id,
        auth_status=plan.decision.status.value,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    transaction_id = tx.check_transaction_id(row.id)
    request_id = await link_request(
        session,
        station_id=station.station_id,
        ocpp_connector_id=started.connector.station_number,
        id_tag=started.token.value,
        transaction_id=transaction_id,
        now=now,
    )
    event = StartTransactionPayload(
        stationId=station.station_id,
        chargePointId=address.charge_point_id,
        connectorId=address.connector_id,
        idTag=started.token.value,
        meterStart=wh_to_kwh(started.meter_start_wh),
        transactionId=transaction_id,
        **({"reservationId": started.reservation_id} if started.reservation_id is not None else {}),
        **({"requestId": request_id} if request_id is not None else {}),
    )
    await outbox.publish(session, site_id=station.site_id, payload=event)
    sequence = None
    if queue is not None:
        sequence = await enqueue(session, station.station_id, queue.action, queue.payload, transaction_id, now)
    if publish_authorize_now:
        await publish_authorize(session, outbox, station, started.token.value, plan.decision, address=address)
    return StartWritten(transaction_id, closed, sequence)


def is_duplicate_start(exc: IntegrityError) -> bool:
    """A concurrent identical start won the unique constraint; the caller retries and finds it."""
    return "uq_edge_tx_start" in str(exc.orig) or "edge_transactions" in str(exc.orig)


@dataclass(frozen=True, slots=True)
class StopWritten:
    outcome: tx.StopOutcome
    ids: tx.IdMap  # the stopped transaction's upstream id, for a stop going up
    sequence: int | None  # its place in the upstream queue, when queued


async def stop_transaction(
    session: AsyncSession,
    outbox: Outbox,
    station: StationInfo,
    ended: TransactionEnded,
    now: datetime,
    *,
    as_sent: Payload,
    forward: bool,
    queue: QueuedCall | None,
) -> StopWritten:
    """Rule 3 of `transactions`: always acknowledged; one event for the first stop of the station's own, which is
    then queued for the upstream (`queue`: the upstream is away or older messages wait) or, when it is to be
    `forward`ed, queued only while its start has no upstream id yet (Rule 5). `as_sent` is kept for a stop of a
    transaction the station does not own."""
    row = await session.get(EdgeTransaction, ended.transaction_id, with_for_update=True)
    outcome = tx.decide_stop(_record(row) if row else None, station.station_id)
    ids = tx.IdMap()
    if outcome is tx.StopOutcome.UNKNOWN:
        session.add(
            UnknownStop(
                station_id=station.station_id,
                transaction_id=ended.transaction_id,
                payload=json.dumps(as_sent, default=str),
                received_at=now,
            )
        )
        return StopWritten(outcome, ids, None)
    assert row is not None
    ids = _ids_of(row)
    if outcome is tx.StopOutcome.REPEATED:
        return StopWritten(outcome, ids, None)
    row.stopped_at = ended.timestamp
    row.meter_stop = ended.meter_stop_wh
    row.stop_reason = ended.reason.value
    event = StopTransactionPayload(
        stationId=station.station_id,
        chargePointId=row.charge_point_id,
        connectorId=row.connector_id,
        idTag=ended.token.value if ended.token is not None else row.id_tag,
        meterStart=wh_to_kwh(row.meter_start),
        meterStop=wh_to_kwh(ended.meter_stop_wh),
        transactionId=row.id,
        reason=ended.reason,
    )
    await outbox.publish(session, site_id=station.site_id, payload=event)
    sequence = await _queue_if(session, station.station_id, queue, forward, row.id, ids, now)
    return StopWritten(outcome, ids, sequence)


@dataclass(frozen=True, slots=True)
class ReadingsWritten:
    owned: bool  # the readings' transaction is the station's own, or they belong to none
    ids: tx.IdMap
    sequence: int | None


async def meter_readings(
    session: AsyncSession,
    station_id: str,
    report: MeterReport,
    now: datetime,
    *,
    forward: bool,
    queue: QueuedCall | None,
) -> ReadingsWritten:
    """Readings going up: queued like a stop (`stop_transaction`); those of a transaction the station does not
    own stay with the edge."""
    ids = tx.IdMap()
    if report.transaction_id is not None:
        row = await session.get(EdgeTransaction, report.transaction_id)
        if row is None or row.station_id != station_id:
            return ReadingsWritten(False, ids, None)
        ids = _ids_of(row)
    sequence = await _queue_if(session, station_id, queue, forward, report.transaction_id, ids, now)
    return ReadingsWritten(True, ids, sequence)


def _ids_of(row: EdgeTransaction) -> tx.IdMap:
    ids = tx.IdMap()
    if row.upstream_id is not None:
        ids.link(row.id, row.upstream_id)
    if row.upstream_refused:
        ids.refuse(row.id)
    return ids


async def _queue_if(
    session: AsyncSession,
    station_id: str,
    queue: QueuedCall | None,
    forward: bool,
    transaction_id: int | None,
    ids: tx.IdMap,
    now: datetime,
) -> int | None:
    if queue is None:
        return None
    if forward and tx.delivery(transaction_id, ids) is not tx.Delivery.QUEUE:
        return None
    return await enqueue(session, station_id, queue.action, queue.payload, transaction_id, now)


# Upstream ids and queue ---------------------------------------------------------------------------------------


async def id_map_for(
    session: AsyncSession, station_id: str, *, edge_id: int | None = None, upstream_id: int | None = None
) -> tx.IdMap:
    """The mapping rows needed to rewrite one message of `station_id`."""
    query = select(EdgeTransaction.id, EdgeTransaction.upstream_id, EdgeTransaction.upstream_refused).where(
        EdgeTransaction.station_id == station_id
    )
    if edge_id is not None:
        query = query.where(EdgeTransaction.id == edge_id)
    if upstream_id is not None:
        query = query.where(EdgeTransaction.upstream_id == upstream_id)
    ids = tx.IdMap()
    for found_edge, found_upstream, refused in await session.execute(query):
        if found_upstream is not None:
            ids.link(found_edge, found_upstream)
        if refused:
            ids.refuse(found_edge)
    return ids


async def link_upstream(
    session: AsyncSession, edge_id: int, upstream_id: int, *, auth_status: str | None = None
) -> None:
    """Record the upstream's answer to a start: its id (whatever the idTagInfo status: transactions Rule 5)."""
    row = await session.get(EdgeTransaction, edge_id)
    if row is not None:
        row.upstream_id = upstream_id
        if auth_status is not None:
            row.auth_status = auth_status


async def refuse_upstream(session: AsyncSession, edge_id: int) -> None:
    """The upstream refused a start without giving it an id (a CALLERROR)."""
    row = await session.get(EdgeTransaction, edge_id)
    if row is not None:
        row.upstream_refused = True


async def enqueue(
    session: AsyncSession, station_id: str, action: str, payload: Payload, transaction_id: int | None, now: datetime
) -> int:
    """Queue a message for the upstream; returns its place in the queue (`QueuedMessage.sequence`)."""
    row = UpstreamMessage(
        station_id=station_id,
        action=action,
        payload=json.dumps(payload, default=str),
        transaction_id=transaction_id,
        enqueued_at=now,
    )
    session.add(row)
    await session.flush()
    return row.id


async def queue_head(session: AsyncSession, station_id: str) -> relaying.QueuedMessage | None:
    row = await session.scalar(
        select(UpstreamMessage).where(UpstreamMessage.station_id == station_id).order_by(UpstreamMessage.id).limit(1)
    )
    if row is None:
        return None
    return relaying.QueuedMessage(row.id, row.action, json.loads(row.payload), row.transaction_id)


async def queue_length(session: AsyncSession, station_id: str) -> int:
    count = await session.scalar(select(func.count()).where(UpstreamMessage.station_id == station_id))
    return int(count or 0)


async def dequeue(session: AsyncSession, sequence: int) -> None:
    await session.execute(delete(UpstreamMessage).where(UpstreamMessage.id == sequence))


# Transactions the station names (2.0.1) ------------------------------------------------------------------------


async def station_transaction(
    session: AsyncSession, station_id: str, station_transaction_id: str
) -> EdgeTransaction | None:
    """The edge's transaction for the station's own id, locked for the unit that plans on it."""
    params = {"station_id": station_id, "station_transaction_id": station_transaction_id}
    found = await session.scalars(_STATION_TRANSACTION, params)
    return found.first()


def transaction_open_on(connection: Connection, station_id: str, address: ConnectorAddress) -> bool:
    """Whether a transaction the station named (2.0.1) is still open on the connector."""
    found = connection.execute(
        select(EdgeTransaction.id)
        .where(
            EdgeTransaction.station_id == station_id,
            EdgeTransaction.charge_point_id == address.charge_point_id,
            EdgeTransaction.connector_id == address.connector_id,
            EdgeTransaction.stopped_at.is_(None),
            EdgeTransaction.station_transaction_id.is_not(None),
        )
        .limit(1)
    ).first()
    return found is not None


def known_transaction(row: EdgeTransaction) -> transaction_events.KnownTransaction:
    return transaction_events.KnownTransaction(
        row.id, row.seq_no or 0, row.stopped_at is not None, row.meter_start, row.meter_last
    )


MAX_UNSTARTED = 64  # transactions a station may have unstarted at once (it runs one per EVSE): the oldest go


async def unstarted_transaction(
    session: AsyncSession, station_id: str, station_transaction_id: str
) -> UnstartedTransaction | None:
    """What earlier events said of a transaction the edge has not started, locked for the unit that plans on it."""
    return await session.get(UnstartedTransaction, (station_id, station_transaction_id), with_for_update=True)


def unstarted_of(row: UnstartedTransaction) -> transaction_events.Unstarted:
    token = IdToken(row.id_tag, row.id_token_type) if row.id_tag is not None else None
    connector = None
    if row.charge_point_id is not None and row.connector_id is not None and row.ocpp_connector_id is not None:
        connector = ConnectorRef(ConnectorAddress(row.charge_point_id, row.connector_id), row.ocpp_connector_id)
    return transaction_events.Unstarted(row.began_at, token, connector, row.meter_begin, row.meter_first)


async def remember_unstarted(
    session: AsyncSession,
    station_id: str,
    station_transaction_id: str,
    row: UnstartedTransaction | None,
    unstarted: transaction_events.Unstarted,
    now: datetime,
) -> None:
    """Rule 6 of `core.transaction_events`, in the caller's unit: kept for the transaction's later events; a
    station's oldest beyond `MAX_UNSTARTED` (transactions it never started nor ended) are dropped."""
    if row is None:
        stale = (
            select(UnstartedTransaction.station_transaction_id)
            .where(UnstartedTransaction.station_id == station_id)
            .order_by(UnstartedTransaction.updated_at.desc())
            .offset(MAX_UNSTARTED - 1)
        )
        await session.execute(
            delete(UnstartedTransaction).where(
                UnstartedTransaction.station_id == station_id,
                UnstartedTransaction.station_transaction_id.in_(stale.scalar_subquery()),
            )
        )
        row = UnstartedTransaction(station_id=station_id, station_transaction_id=station_transaction_id)
        session.add(row)
    row.began_at = unstarted.began_at
    address = unstarted.connector.address if unstarted.connector is not None else None
    row.charge_point_id = address.charge_point_id if address is not None else None
    row.connector_id = address.connector_id if address is not None else None
    row.ocpp_connector_id = unstarted.connector.station_number if unstarted.connector is not None else None
    row.id_tag = unstarted.token.value if unstarted.token is not None else None
    row.id_token_type = unstarted.token.type if unstarted.token is not None else None
    row.meter_begin = unstarted.meter_begin_wh
    row.meter_first = unstarted.meter_first_wh
    row.updated_at = now


async def forget_unstarted(session: AsyncSession, row: UnstartedTransaction) -> None:
    """The transaction started or ended: nothing more to remember of it."""
    await session.delete(row)


def _stop_payload(station: StationInfo, row: EdgeTransaction, stop: transaction_events.Stop) -> StopTransactionPayload:
    return StopTransactionPayload(
        stationId=station.station_id,
        chargePointId=row.charge_point_id,
        connectorId=row.connector_id,
        idTag=row.id_tag,
        meterStart=wh_to_kwh(row.meter_start),
        meterStop=wh_to_kwh(stop.meter_stop_wh),
        transactionId=row.id,
        reason=stop.reason,
        stationTransactionId=row.station_transaction_id,
        **({"idTokenType": row.id_token_type} if row.id_token_type else {}),
        **({"stationReason": stop.station_reason} if stop.station_reason else {}),
    )


async def start_station_transaction(
    session: AsyncSession,
    outbox: Outbox,
    station: StationInfo,
    report: TransactionReport,
    start: transaction_events.Start,
    auth_status: AuthorizationStatus,
    now: datetime,
) -> int:
    """Rule 1 of `core.transaction_events`: the transaction stored with its StartTransaction event (and, for an
    Ended that starts it, its stop and StopTransaction event), in the caller's unit. A start that names the
    `remoteStartId` of a session request of the API is linked to that request alone, and its event names it."""
    assert report.connector is not None and report.token is not None  # the plan says so
    address = report.connector.address
    row = EdgeTransaction(
        id=await next_transaction_id(session),
        station_id=station.station_id,
        site_id=station.site_id,
        charge_point_id=address.charge_point_id,
        connector_id=address.connector_id,
        ocpp_connector_id=report.connector.station_number,
        id_tag=report.token.value,
        id_token_type=report.token.type,
        started_at=report.began_at or report.timestamp,
        meter_start=start.meter_start_wh,
        meter_last=report.meter_last_wh,
        reservation_id=report.reservation_id,
        auth_status=auth_status.value,
        station_transaction_id=report.station_transaction_id,
        seq_no=report.seq_no,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    transaction_id = tx.check_transaction_id(row.id)
    request_id = None
    if report.remote_start_id is not None:
        request_id = await link_request(
            session,
            station_id=station.station_id,
            ocpp_connector_id=report.connector.station_number,
            id_tag=report.token.value,
            transaction_id=transaction_id,
            now=now,
            remote_start_id=report.remote_start_id,
        )
    event = StartTransactionPayload(
        stationId=station.station_id,
        chargePointId=address.charge_point_id,
        connectorId=address.connector_id,
        idTag=report.token.value,
        meterStart=wh_to_kwh(start.meter_start_wh),
        transactionId=transaction_id,
        stationTransactionId=report.station_transaction_id,
        **({"idTokenType": report.token.type} if report.token.type else {}),
        **({"reservationId": report.reservation_id} if report.reservation_id is not None else {}),
        **({"requestId": request_id} if request_id is not None else {}),
    )
    await outbox.publish(session, site_id=station.site_id, payload=event)
    if start.stop is not None:
        await stop_station_transaction(session, outbox, station, row, report, start.stop)
    return transaction_id


@dataclass(frozen=True, slots=True)
class Progress:
    """A running 2.0.1 transaction's latest seqNo and reading, written behind its answers (`write_progress`)."""

    transaction_id: int
    seq_no: int
    meter_last_wh: int | None


_transactions = cast(Table, EdgeTransaction.__table__)
# Built once, on the table: built per Updated event and run through the ORM's bulk update, the same statement cost
# the event loop more than everything else a 2.0.1 transaction adds to a 1.6 one.
_PROGRESS = (
    update(_transactions)
    .where(
        _transactions.c.id == bindparam("b_id"),
        _transactions.c.stopped_at.is_(None),
        func.coalesce(_transactions.c.seq_no, -1) < bindparam("b_seq_no"),
    )
    .values(
        seq_no=bindparam("b_seq_no"),
        meter_last=func.coalesce(
            bindparam("b_meter_last", type_=_transactions.c.meter_last.type), _transactions.c.meter_last
        ),
    )
)


async def write_progress(session: AsyncSession, items: list[Progress]) -> None:
    """The progress of a batch in one statement, in the order noted: never back over a later seqNo or a stop,
    whichever commits first; a reading left out keeps the one before."""
    rows = [{"b_id": p.transaction_id, "b_seq_no": p.seq_no, "b_meter_last": p.meter_last_wh} for p in items]
    await session.execute(_PROGRESS, rows)


def update_station_transaction(row: EdgeTransaction, report: TransactionReport) -> None:
    row.seq_no = report.seq_no
    if report.meter_last_wh is not None:
        row.meter_last = report.meter_last_wh


async def stop_station_transaction(
    session: AsyncSession,
    outbox: Outbox,
    station: StationInfo,
    row: EdgeTransaction,
    report: TransactionReport,
    stop: transaction_events.Stop,
) -> None:
    """Rule 3: the transaction closed with its StopTransaction event, in the caller's unit."""
    row.seq_no = report.seq_no
    row.stopped_at = report.timestamp
    row.meter_stop = stop.meter_stop_wh
    row.meter_last = stop.meter_stop_wh
    row.stop_reason = stop.reason.value
    await outbox.publish(session, site_id=station.site_id, payload=_stop_payload(station, row, stop))


# What a 2.0.1 station reports of itself ------------------------------------------------------------------------


async def record_notice(session: AsyncSession, station_id: str, action: str, payload: Payload, now: datetime) -> None:
    """NotifyEvent, NotifyReport, SecurityEventNotification and the status notifications, kept as received."""
    session.add(StationNotice(station_id=station_id, action=action, payload=dump_payload(payload), received_at=now))
