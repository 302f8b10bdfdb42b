"""The partner SDK follows a session against a real chargenet and a simulated station: started by its request,
followed to the transaction the station started, read to its stop with its energy and samples."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from chargenet_partner import AsyncSessionsClient, AsyncTokenClient, ChargenetApiError

from chargenet.services import applications, groups
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_charging import add_tag


async def partner_tokens(served: Served) -> AsyncTokenClient:
    """A token client of a new application granted `sessions:write` and `transactions:read` over the company."""
    context, company_id, now = served.context, served.tenant.company_id, served.context.clock.now()
    async with context.store.transaction() as session:
        credentials = await applications.create_application(
            session, OPERATOR, context.keys.secret_hasher(), company_id=company_id, name="Fleet app", now=now
        )
        group = await groups.create_group(
            session,
            OPERATOR,
            company_id=company_id,
            name="Sessions",
            scopes=["sessions:write", "transactions:read"],
            now=now,
        )
        await groups.add_app(session, OPERATOR, group.id, credentials.client_id, now=now)
    token_url = f"{served.http_url}/auth/oauth2/token"
    return AsyncTokenClient(token_url, credentials.client_id, credentials.client_secret)


async def test_the_sdk_starts_a_session_and_follows_it_to_its_stop_with_its_energy_and_samples(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    async with await partner_tokens(served) as tokens, AsyncSessionsClient(f"{served.http_url}/api/v1", tokens) as api:
        request_id = await api.start_session("CS-1", 1, "TAG1")
        followed = asyncio.create_task(api.follow_session(request_id, every=0.02, stop_every=0.02))

        sampled_at = (served.context.clock.now() - timedelta(minutes=1)).isoformat()
        transaction_id = (await station.start(1, "TAG1", 1000))["transactionId"]
        await station.meter_values(1, transaction_id, 2500, timestamp=sampled_at, power_w=11000)
        await served.edge.message_log.run_once()  # the sample is stored before the stop is seen
        await station.stop(transaction_id, 4000)
        session = await asyncio.wait_for(followed, timeout=30)

        assert (session.request.request_id, session.transaction.transaction_id) == (request_id, transaction_id)
        assert (session.transaction.active, session.transaction.energy) == (False, 3.0)
        assert [(s.energy, s.delivered, s.power) for s in session.samples] == [(2.5, 1.5, 11000.0)]

        station.answers["RemoteStartTransaction"] = lambda _: {"status": "Rejected"}
        with pytest.raises(ChargenetApiError) as refused:
            await api.start_session("CS-1", 1, "TAG1")
        assert refused.value.status == 409
        assert refused.value.request_id is not None
        assert (await api.session_request(refused.value.request_id)).status == "Rejected"
