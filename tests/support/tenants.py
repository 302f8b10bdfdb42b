"""A company with one site in a real store, whose stations a test creates and whose statuses it records as the edge
does: what the tests of the readers that follow connector statuses (the console's live feed, the charge point
directory) start from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chargenet.clock import ManualClock
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.statuses import record_status
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from tests.factories import add_station


@dataclass
class Tenant:
    store: Store
    clock: ManualClock
    keys: KeyStore
    company_id: str
    site_id: str

    @classmethod
    async def create(cls, store: Store, clock: ManualClock, keys_dir: Path) -> Tenant:
        """Acme and its site Harbour, with keys in `keys_dir`."""
        keys = KeyStore(keys_dir)
        keys.ensure()
        async with store.transaction() as session:
            company = await companies.create_company(session, OPERATOR, name="Acme", now=clock.now())
            site = await sites.create_site(
                session, OPERATOR, keys.credential_cipher(), company_id=company.id, name="Harbour", now=clock.now()
            )
        return cls(store, clock, keys, company.id, site.id)

    async def station(self, station_id: str, *, connectors: int | None = 2) -> None:
        """A station of the site with one charge point of two connectors (or of those its statuses will report,
        with `connectors=None`), as the operator creates it."""
        async with self.store.transaction() as session:
            await add_station(session, self.keys, self.site_id, station_id, self.clock.now(), connectors=connectors)

    async def status(self, status: str, error_code: str = "NoError", *, station_id: str = "ST-1") -> None:
        """A StatusNotification of connector 1, as the edge records it (with its event, in one transaction)."""
        async with self.store.transaction() as session:
            await record_status(
                session,
                Outbox(self.clock),
                station_id=station_id,
                ocpp_connector_id=1,
                status=ConnectorStatus(status),
                error_code=ChargePointErrorCode(error_code),
                timestamp=self.clock.now(),
                now=self.clock.now(),
            )
