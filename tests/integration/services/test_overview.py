"""The overview's figures: each counts the company's own objects only, on both backends."""

from __future__ import annotations

from pathlib import Path

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.services import applications, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.services.overview import CompanyCounts, company_counts
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from chargenet.webhooks.outbound_auth import NoAuth
from tests.factories import make_tenant


async def test_each_figure_counts_the_companys_own_objects(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    ours = await make_tenant(store, keys, clock.now(), station_id="ST-OURS")
    theirs = await make_tenant(store, keys, clock.now(), station_id="ST-THEIRS")
    async with store.transaction() as session:
        for tenant in (ours, theirs):
            await applications.create_application(
                session, OPERATOR, keys.secret_hasher(), company_id=tenant.company_id, name="App", now=clock.now()
            )
            for enabled in (True, False):
                view = await webhooks.create_webhook(
                    session,
                    OPERATOR,
                    keys.credential_cipher(),
                    site_id=tenant.site_id,
                    url="http://127.0.0.1:9/hook",
                    event_types=["Authorize"],
                    auth=NoAuth(),
                    now=clock.now(),
                    allow_private=True,
                )
                if not enabled:
                    await webhooks.set_enabled(session, OPERATOR, view.id, False, now=clock.now())
        session.add(StationPresence(station_id="ST-OURS", connected=True, connected_at=clock.now()))
        session.add(StationPresence(station_id="ST-THEIRS", connected=True, connected_at=clock.now()))
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert counted == CompanyCounts(
        sites=1, stations=1, connected_stations=1, applications=1, webhooks=2, enabled_webhooks=1
    )
