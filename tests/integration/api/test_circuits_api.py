"""A site's circuits over the API: set up, refused with a problem naming the value (nothing stored), audited, and
the site's power as the allocator shares it among the sessions in progress."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import select

from chargenet.app import create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.services import audit, sites
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.models import Circuit, EdgeTransaction, StationPresence
from tests.factories import make_tenant, partner_token
from tests.support.templates import prepare_data_dir


async def test_circuits_are_set_up_checked_audited_and_share_the_sites_power(
    tmp_path: Path, clock: ManualClock
) -> None:
    prepare_data_dir(tmp_path / "data")
    settings = load_settings({"data_dir": str(tmp_path / "data")}, environ={})
    context = await open_context(settings, clock=clock)
    try:
        tenant = await make_tenant(context.store, context.keys, clock.now(), station_id="ST-1")
        async with context.store.transaction() as session:
            other_site = await sites.create_site(
                session,
                OPERATOR,
                context.keys.credential_cipher(),
                company_id=tenant.company_id,
                name="Far",
                now=clock.now(),
            )
        token = await partner_token(
            context, tenant.company_id, ["sites:write", "sites:read", "meters:write", "meters:read"]
        )
        transport = httpx.ASGITransport(app=create_app(context))
        headers = {"Authorization": f"Bearer {token}"}
        site = tenant.site_id
        async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1", headers=headers) as api:
            meter = await api.post(
                f"/sites/{site}/grid-meters",
                json={"profile": "sdm630", "unitId": 3, "transport": {"type": "tcp", "host": "192.0.2.7"}},
            )
            assert meter.status_code == 201, meter.text
            meter_id = meter.json()["id"]
            grid = await api.post(
                f"/sites/{site}/circuits",
                json={"name": "Grid", "limitAmps": 40, "marginAmps": 4, "meterId": meter_id},
            )
            assert grid.status_code == 201, grid.text
            grid_id = grid.json()["id"]
            feeder = await api.post(
                f"/sites/{site}/circuits",
                json={"name": "Feeder L1", "limitAmps": 16, "parentId": grid_id, "phases": "L1"},
            )
            feeder_id = feeder.json()["id"]
            far = await api.post(f"/sites/{other_site.id}/circuits", json={"name": "Far grid", "limitAmps": 63})
            far_id = far.json()["id"]

            refused = {
                "limit": await api.post(
                    f"/sites/{site}/circuits", json={"name": "Tiny", "limitAmps": 10, "marginAmps": 5}
                ),
                "schema limit": await api.post(f"/sites/{site}/circuits", json={"name": "Tiny", "limitAmps": 5}),
                "cycle": await api.patch(f"/sites/{site}/circuits/{grid_id}", json={"parentId": feeder_id}),
                "other site": await api.put(
                    f"/sites/{site}/stations/ST-1/circuit", json={"circuitId": far_id, "phases": "L1"}
                ),
                "phases": await api.put(
                    f"/sites/{site}/stations/ST-1/circuit", json={"circuitId": feeder_id, "phases": "L1L2L3"}
                ),
            }
            assert {name: answer.status_code for name, answer in refused.items()} == dict.fromkeys(refused, 422)
            assert {name: answer.headers["content-type"] for name, answer in refused.items()} == dict.fromkeys(
                refused, "application/problem+json"
            )
            assert (
                "10 A less the margin of 5 A is below one session's minimum of 6 A" in refused["limit"].json()["detail"]
            )
            assert refused["limit"].json()["field"] == "limitAmps"
            assert refused["schema limit"].json()["field"] == "limitAmps"
            assert f"{feeder_id!r} would make a cycle" in refused["cycle"].json()["detail"]
            assert far_id in refused["other site"].json()["detail"]
            assert f"circuit {feeder_id!r} has no L2, L3" in refused["phases"].json()["detail"]

            placed = await api.put(
                f"/sites/{site}/stations/ST-1/circuit", json={"circuitId": feeder_id, "phases": "L1"}
            )
            assert placed.json() == {"stationId": "ST-1", "circuitId": feeder_id, "phases": "L1", "priority": 0}
            listed = (await api.get(f"/sites/{site}/circuits")).json()["items"]
            assert {(c["name"], c["parentId"], c["limitAmps"]) for c in listed} == {
                ("Grid", None, 40.0),
                ("Feeder L1", grid_id, 16.0),
            }
            assert (await api.get(f"/sites/{other_site.id}/circuits/{grid_id}")).status_code == 404
            assert (await api.delete(f"/sites/{site}/circuits/{feeder_id}")).status_code == 409
            assert (await api.delete(f"/sites/{site}/grid-meters/{meter_id}")).status_code == 409
            listed_meters = (await api.get(f"/sites/{site}/grid-meters")).json()["items"]
            assert [(m["id"], m["role"], m["circuitId"]) for m in listed_meters] == [(meter_id, "grid", grid_id)]

            async with context.store.transaction() as session:
                session.add(StationPresence(station_id="ST-1", connected=True, connected_at=clock.now()))
                for number in (1, 2, 3):
                    session.add(
                        EdgeTransaction(
                            id=number,
                            station_id="ST-1",
                            site_id=site,
                            charge_point_id="ST-1",
                            connector_id=1,
                            ocpp_connector_id=number,
                            id_tag=f"TAG-{number}",
                            started_at=clock.now() - timedelta(minutes=10 - number),
                            meter_start=0,
                            created_at=clock.now(),
                        )
                    )
            power = (await api.get(f"/sites/{site}/power")).json()
        async with context.store.read() as session:
            stored = set(await session.scalars(select(Circuit.name)))
            found = await audit.list_records(session, OPERATOR, PageRequest(50), company_id=tenant.company_id)
    finally:
        await context.close()
    assert stored == {"Grid", "Feeder L1", "Far grid"}
    circuits = {c["name"]: c for c in power["circuits"]}
    # The feeder's 16 A on L1 carries two sessions at the 6 A minimum; the third, started last, is paused.
    assert circuits["Feeder L1"]["allocated"] == {"L1": 16.0}
    assert circuits["Grid"]["available"] == {"L1": 36.0, "L2": 36.0, "L3": 36.0}
    assert (circuits["Grid"]["meterId"], circuits["Grid"]["meterSilent"], circuits["Grid"]["measured"]) == (
        meter_id,
        True,
        None,
    )
    assert [(s["transactionId"], s["allowanceAmps"], s["paused"]) for s in power["sessions"]] == [
        (1, 8.0, False),
        (2, 8.0, False),
        (3, 0.0, True),
    ]
    assert power["sessions"][2]["pausedReason"] == "no-room"
    mine = [(entry.action, entry.object_id) for entry in reversed(found.items) if entry.face == "api"]
    assert {entry.object_name for entry in found.items if entry.action == "circuit.create"} == {
        "Grid",
        "Feeder L1",
        "Far grid",
    }
    assert mine == [
        ("meter.create", meter_id),
        ("circuit.create", grid_id),
        ("circuit.create", feeder_id),
        ("circuit.create", far_id),
        ("station.circuit", "ST-1"),
    ]
