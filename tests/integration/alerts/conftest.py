"""A company with one station, an alert rule about it and its SMTP server: a real aiosmtpd server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.alerts.mailer import AlertMailer
from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.services import alert_rules, alerts, mail_settings
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from tests.factories import Tenant, make_tenant
from tests.support.smtp import SmtpServer, smtp_server


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    made = KeyStore(tmp_path / "keys")
    made.ensure()
    return made


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


async def set_presence(store: Store, station_id: str, *, connected: bool, at: datetime) -> None:
    """The station's presence as the edge writes it when the station connects or goes."""
    async with store.transaction() as session:
        row = await session.get(StationPresence, station_id)
        if row is None:
            row = StationPresence(station_id=station_id)
            session.add(row)
        row.connected = connected
        if connected:
            row.connected_at = at
        else:
            row.disconnected_at = at


async def add_rule(
    store: Store, company_id: str, now: datetime, *, kind: str = "station_offline", minutes: int = 10
) -> str:
    async with store.transaction() as session:
        rule = await alert_rules.create_rule(
            session,
            OPERATOR,
            company_id=company_id,
            kind=kind,
            threshold_minutes=minutes,
            recipients="ops@example.org, night@example.org",
            now=now,
        )
    return rule.id


async def set_server(store: Store, keys: KeyStore, company_id: str, now: datetime, *, host: str, port: int) -> None:
    async with store.transaction() as session:
        await mail_settings.set_mail_settings(
            session,
            OPERATOR,
            keys.credential_cipher(),
            company_id=company_id,
            host=host,
            port=port,
            tls="none",
            sender="alerts@chargenet.test",
            now=now,
        )


async def alert_list(store: Store, company_id: str) -> list[alerts.AlertView]:
    async with store.read() as session:
        return (await alerts.list_alerts(session, OPERATOR, PageRequest(50), company_id=company_id)).items


@dataclass
class Alerting:
    store: Store
    keys: KeyStore
    clock: ManualClock
    tenant: Tenant
    rule_id: str
    evaluator: AlertEvaluator
    mailer: AlertMailer

    async def round(self) -> None:
        """One round of each worker, as the process runs them."""
        await self.evaluator.run_once()
        await self.mailer.run_once()

    async def presence(self) -> StationPresence:
        async with self.store.read() as session:
            return (
                await session.scalars(
                    select(StationPresence).where(StationPresence.station_id == self.tenant.station_id)
                )
            ).one()


@pytest.fixture
async def alerting(store: Store, keys: KeyStore, clock: ManualClock, smtp: SmtpServer) -> Alerting:
    tenant = await make_tenant(store, keys, clock.now())
    await set_presence(store, tenant.station_id, connected=True, at=clock.now())
    rule_id = await add_rule(store, tenant.company_id, clock.now())
    await set_server(store, keys, tenant.company_id, clock.now(), host=smtp.host, port=smtp.port)
    return Alerting(
        store,
        keys,
        clock,
        tenant,
        rule_id,
        AlertEvaluator(store, clock),
        AlertMailer(store, clock, keys.credential_cipher(), "process-1", timeout=2.0),
    )
