"""The Meters pages: the list (paged, filtered by site, station and state) with each meter's last reading and
detector state, adding a meter, editing it, enabling and disabling it; each change protected, role-checked,
audited, refused as stale when the meter moved on, and escaped."""

from __future__ import annotations

import re

from sqlalchemy import insert

from chargenet.services import meters
from chargenet.services.callers import OPERATOR
from chargenet.store.models import MeterState
from tests.integration.console.conftest import (
    ORIGIN,
    ConsoleHarness,
    make_meter,
    make_station,
    post,
    records,
    site_with_station,
    token_of,
)

HOSTILE = "<script>alert(1)</script>"


def new_meter(site_id: str, **changes: str) -> dict[str, str]:
    return {
        "site_id": site_id,
        "station_id": "CS-M",
        "connector_id": "2",
        "profile": "sdm630",
        "unit_id": "5",
        "transport": "tcp",
        "tcp": "192.0.2.9:1502",
        **changes,
    }


async def test_meter_pages_need_a_signed_in_operator(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    anonymous = harness.client()
    for path in ("/console/meters", "/console/meters/new", f"/console/meters/{meter_id}"):
        response = await anonymous.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/console/login?next="), path


async def test_the_list_shows_state_and_last_reading_and_pages_and_filters(harness: ConsoleHarness) -> None:
    mine = await site_with_station(harness, harness.team.company_id, "CS-M", connectors=16)
    other = await site_with_station(harness, harness.team.company_id, "CS-N", connectors=16)
    ids = [await make_meter(harness, mine, "CS-M", unit, connector_id=unit) for unit in range(1, 16)]
    ids += [await make_meter(harness, other, "CS-N", unit, connector_id=unit - 40) for unit in range(41, 56)]
    ids += [await make_meter(harness, other, "CS-N", 99, connector_id=16)]
    async with harness.store.transaction() as session:
        await session.execute(
            insert(MeterState).values(
                meter_id=ids[0],
                energy_wh=1_234_567,
                read_at=harness.clock.now(),
                max_current_a=15.5,
                power_w=7_200.0,
                phase="charging",
            )
        )
        await meters.update_meter(session, OPERATOR, ids[1], now=harness.clock.now(), enabled=False)
    viewer = await harness.signed_in("viewer@acme.test")
    listing = await viewer.get("/console/meters")
    assert listing.status_code == 200 and listing.text.count('href="/console/meters/meter_') == 31
    assert "1234.567 kWh, 7200 W, 15.5 A" in listing.text and ">charging<" in listing.text
    assert ">disabled<" in listing.text and "tcp 192.0.2.7:502" in listing.text
    assert "Add a meter" not in listing.text  # a viewer only reads
    by_site = await viewer.get("/console/meters", params={"site": mine})
    assert by_site.text.count('href="/console/meters/meter_') == 15 and f'value="{mine}"' in by_site.text
    by_station = await viewer.get("/console/meters", params={"station": "CS-N"})
    assert by_station.text.count('href="/console/meters/meter_') == 16
    disabled = await viewer.get("/console/meters", params={"state": "disabled"})
    assert disabled.text.count('href="/console/meters/meter_') == 1 and ids[1] in disabled.text
    detail = await viewer.get(f"/console/meters/{ids[0]}")
    assert detail.status_code == 200 and "1234.567 kWh" in detail.text and "Save meter" not in detail.text


async def test_the_list_and_a_meters_page_name_its_site_with_its_id_beside_to_copy(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    await make_meter(harness, site_id, "CS-M", 1)
    viewer = await harness.signed_in("viewer@acme.test")
    listing = (await viewer.get("/console/meters")).text
    assert (
        f'site <a href="/console/sites/{site_id}">Depot</a> <code class="hint" title="Site ID">{site_id}</code>'
        in listing
    )
    meter_id = re.findall(r'href="/console/meters/(meter_[^"]+)"', listing)[0]
    detail = (await viewer.get(f"/console/meters/{meter_id}")).text
    assert f'>Meters of site Depot</a> <code class="hint" title="Site ID">{site_id}</code>' in detail


async def test_a_long_list_is_paged_by_keyset(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M", connectors=16)
    for n in range(2, 7):
        await make_station(harness, site_id, f"CS-M{n}", connectors=16)
    unit = 1
    for station in ("CS-M", *(f"CS-M{n}" for n in range(2, 7))):
        for connector in range(1, 11):
            await make_meter(harness, site_id, station, unit, connector_id=connector)
            unit += 1
    viewer = await harness.signed_in("viewer@acme.test")
    first = await viewer.get("/console/meters", params={"site": site_id})
    assert first.text.count('href="/console/meters/meter_') == 50
    next_url = re.search(r'href="(/console/meters\?[^"]*after=[^"]+)">Next page', first.text)
    assert next_url and f"site={site_id}" in next_url.group(1)
    second = await viewer.get(next_url.group(1).replace("&amp;", "&"))
    assert second.text.count('href="/console/meters/meter_') == 10 and "Next page" not in second.text


async def test_an_admin_adds_a_meter_and_it_is_audited(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    admin = await harness.signed_in("admin@acme.test")
    form = await admin.get("/console/meters/new", params={"site": site_id, "station": "CS-M"})
    assert form.status_code == 200 and f'value="{site_id}"' in form.text and 'value="CS-M"' in form.text
    created = await post(admin, "/console/meters", new_meter(site_id, id_tag="FLEET-1", start_current="4.5"))
    assert created.status_code == 303
    meter_path = created.headers["location"]
    page = await admin.get(meter_path)
    assert page.status_code == 200 and "no reading yet" in page.text and "tcp 192.0.2.9:1502" in page.text
    assert 'value="4.5"' in page.text and "<code>FLEET-1</code>" in page.text
    [entry] = await records(harness, action="meter.create")
    assert entry.object_id == meter_path.rsplit("/", 1)[1] and entry.face == "console"
    assert entry.detail["connector"] == "2" and entry.detail["bus"] == "tcp://192.0.2.9:1502"
    rtu = await post(
        admin,
        "/console/meters",
        new_meter(site_id, connector_id="3", transport="rtu", tcp="", rtu="/dev/ttyUSB0", baud="19200", parity="E"),
    )
    assert rtu.status_code == 303 and "rtu /dev/ttyUSB0 19200 E1" in (await admin.get(rtu.headers["location"])).text


async def test_a_bad_meter_form_is_422_naming_the_field_and_keeping_what_was_typed(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    await make_meter(harness, site_id, "CS-M", 9, connector_id=1)
    foreign = await site_with_station(harness, harness.team.other_company_id, "CS-THEIRS")
    admin = await harness.signed_in("admin@acme.test")
    cases = [
        (new_meter(site_id, unit_id="300"), "unit_id"),
        (new_meter(site_id, unit_id="x"), "unit_id"),
        (new_meter(site_id, profile="nope"), "profile"),
        (new_meter(site_id, tcp="host:99999"), "tcp"),
        (new_meter(site_id, tcp=""), "tcp"),
        (new_meter(site_id, transport="rtu", rtu=""), "rtu"),
        (new_meter(site_id, connector_id="9"), "connector_id"),
        (new_meter(site_id, connector_id="1"), "connector_id"),  # measured already
        (new_meter(site_id, tcp="192.0.2.7:502", unit_id="9"), "unit_id"),  # the bus address is taken
        (new_meter(site_id, station_id="CS-NONE"), "station_id"),
        (new_meter(foreign, station_id="CS-THEIRS"), "site_id"),
        (new_meter(site_id, start_current="lots"), "start_current"),
        (new_meter(site_id, stop_current="9"), "stop_current"),  # above the start current
        (new_meter(site_id, poll_interval="0"), "poll_interval"),
        (new_meter(site_id, id_tag=HOSTILE * 20), "id_tag"),
    ]
    for data, field in cases:
        response = await post(admin, "/console/meters", data)
        assert response.status_code == 422, data
        assert f'id="{field}-error"' in response.text, (field, re.findall(r'id="(\w+)-error"', response.text))
        assert "The meter was not added" in response.text
        assert f'value="{data["tcp"]}"' in response.text and f'value="{data["unit_id"]}"' in response.text
    assert HOSTILE not in response.text
    assert len(await records(harness, action="meter.create")) == 1  # the fixture's own


async def test_an_admin_edits_enables_and_disables_a_meter_and_a_stale_edit_is_409(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    path = f"/console/meters/{meter_id}"
    admin = await harness.signed_in("admin@acme.test")
    owner = await harness.signed_in("owner@acme.test")
    settings = {
        "id_tag": HOSTILE,
        "poll_interval": "10",
        "start_current": "6",
        "stop_current": "2",
        "start_power": "500",
        "stop_power": "200",
        "stop_grace": "180",
        "outage_close": "900",
    }
    edited = await post(admin, path, {**settings, "version": "1"})
    assert edited.status_code == 303
    page = (await admin.get(path)).text
    assert HOSTILE not in page and "&lt;script&gt;" in page and 'value="10"' in page and 'value="6"' in page
    [entry] = await records(harness, action="meter.update")
    assert entry.detail == {"changed": "idTag, poll interval, start current, stop current"}
    unchanged = await post(admin, path, {**settings, "version": "2"})
    assert unchanged.status_code == 303 and len(await records(harness, action="meter.update")) == 1

    assert (await post(owner, f"{path}/disable", {"version": "2"})).status_code == 303
    assert ">disabled<" in (await admin.get(path)).text
    stale = await post(admin, path, {**settings, "stop_grace": "60", "version": "2"})
    assert stale.status_code == 409 and "changed by someone else meanwhile" in stale.text
    assert 'value="60"' in stale.text  # kept as typed
    stale_state = await post(admin, f"{path}/enable", {"version": "2"})
    assert stale_state.status_code == 409 and "changed by someone else meanwhile" in stale_state.text
    assert (await post(admin, f"{path}/enable", {"version": "3"})).status_code == 303
    assert [e.action for e in reversed(await records(harness, object_type="meter"))] == [
        "meter.create",
        "meter.update",
        "meter.disable",
        "meter.enable",
    ]
    invalid = await post(admin, path, {**settings, "outage_close": "-1", "version": "4"})
    assert invalid.status_code == 422 and 'id="outage_close-error"' in invalid.text and 'value="-1"' in invalid.text


async def test_a_viewer_is_refused_every_meter_change_and_csrf_and_origin_are_checked(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    changes = [
        ("/console/meters", new_meter(site_id)),
        (f"/console/meters/{meter_id}", {"id_tag": "X", "version": "1"}),
        (f"/console/meters/{meter_id}/disable", {"version": "1"}),
        (f"/console/meters/{meter_id}/enable", {"version": "1"}),
        (f"/console/meters/{meter_id}/delete", {}),
    ]
    viewer = await harness.signed_in("viewer@acme.test")
    assert (await viewer.get("/console/meters/new")).status_code == 403
    for path, data in changes:
        assert (await post(viewer, path, data)).status_code == 403, path
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    for path, data in changes:
        assert (await admin.post(path, data=data, headers=ORIGIN)).status_code == 403, path
        assert (await admin.post(path, data={**data, "csrf_token": "x"}, headers=ORIGIN)).status_code == 403, path
        evil = {"Origin": "https://evil.example"}
        assert (await admin.post(path, data={**data, "csrf_token": token}, headers=evil)).status_code == 403, path
    assert [e.action for e in await records(harness, object_type="meter")] == ["meter.create"]


async def test_another_companys_meters_are_not_found(harness: ConsoleHarness) -> None:
    theirs = await site_with_station(harness, harness.team.other_company_id, "CS-THEIRS")
    meter_id = await make_meter(harness, theirs, "CS-THEIRS", 1)
    admin = await harness.signed_in("admin@acme.test")
    assert (await admin.get(f"/console/meters/{meter_id}")).status_code == 404
    for path, data in (
        (f"/console/meters/{meter_id}", {"id_tag": "X", "version": "1"}),
        (f"/console/meters/{meter_id}/disable", {"version": "1"}),
        (f"/console/meters/{meter_id}/delete", {}),
    ):
        assert (await post(admin, path, data)).status_code == 404, path
    assert meter_id not in (await admin.get("/console/meters")).text
    assert meter_id not in (await admin.get("/console/meters", params={"site": theirs})).text


async def test_an_admin_deletes_a_meter_and_it_is_audited(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get(f"/console/meters/{meter_id}")).text
    assert f'action="/console/meters/{meter_id}/delete"' in page
    deleted = await post(admin, f"/console/meters/{meter_id}/delete")
    assert deleted.status_code == 303 and deleted.headers["location"] == "/console/meters"
    assert (await admin.get(f"/console/meters/{meter_id}")).status_code == 404
    assert [e.action for e in await records(harness, object_type="meter")] == ["meter.delete", "meter.create"]
