from __future__ import annotations

from chargenet.services import localauth
from chargenet.services.callers import OPERATOR
from chargenet.simulators.scenario import run_fleet
from tests.integration.edge.conftest import PASSWORD, Served


async def test_demo_fleet_produces_every_event_type(served: Served) -> None:
    async with served.context.store.transaction() as session:
        await localauth.add_entry(
            session, OPERATOR, site_id=served.tenant.site_id, id_tag="DEMO", now=served.context.clock.now()
        )
    result = await run_fleet(served.ocpp_url, ["CS-1"], PASSWORD, "DEMO", cycles=2, pause=0)
    assert len(result["CS-1"]) == 2
    types = {event["eventType"] for event in await served.events()}
    assert types == {"Authorize", "ChargePointStatus", "StartTransaction", "StopTransaction"}
