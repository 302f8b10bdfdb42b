"""Time zones in the console: an operator reads every time, types every filter and counts every day in their own
zone, else their company's (Europe/Brussels unless an owner changed it); a filter naming a time the clocks skipped
or showed twice is answered with a choice, never a 500; exports carry offsets; each change is audited."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from html import unescape

from sqlalchemy import insert

from chargenet.domain.timestamps import brussels_timestamp
from chargenet.store.models import EdgeTransaction
from tests.factories import edge_row
from tests.integration.console.conftest import ConsoleHarness, make_site, make_station, post, records
from tests.integration.console.test_sessions_pages import rows_of

AUTUMN_CHANGE = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)  # 03:00 +02:00 becomes 02:00 +01:00 in Brussels


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


async def _sessions_at(harness: ConsoleHarness, *started: datetime) -> None:
    """Acme's site with station CS-1, and an OCPP session of it starting at each of `started` (ids 1, 2, ...)."""
    site = await make_site(harness, harness.team.company_id, "Harbour")
    await make_station(harness, site.id, "CS-1")
    rows = [edge_row(number, site.id, at) for number, at in enumerate(started, start=1)]
    async with harness.store.transaction() as session:
        await session.execute(insert(EdgeTransaction), rows)


def _ids(html: str) -> list[str]:
    return [row[0].split()[0] for row in rows_of(html) if row and row[0][:1].isdigit()]


async def test_an_operator_in_brussels_reads_the_time_a_partners_event_carries(harness: ConsoleHarness) -> None:
    owner = await harness.signed_in("owner@acme.test")
    assert (await post(owner, "/console/account/time-zone", {"time_zone": "Asia/Tokyo"})).status_code == 303
    [change] = await records(harness, action="operator.set-time-zone")
    event_time = brussels_timestamp(change.at)  # what a partner reads for that instant: 2026-07-01T14:00:00.000+02:00
    viewer = await harness.signed_in("viewer@acme.test")
    audit_page = (await viewer.get("/console/audit")).text
    assert event_time[:19].replace("T", " ") in audit_page
    assert "Times in Europe/Brussels" in audit_page


async def test_an_operator_chooses_their_own_zone_audited_and_blank_is_the_companys_again(
    harness: ConsoleHarness,
) -> None:
    viewer = await harness.signed_in("viewer@acme.test")
    page = await viewer.get("/console/account/time-zone")
    assert page.status_code == 200 and "Times in Europe/Brussels" in page.text
    assert "It is now 2026-07-01 14:00:00 there (+02:00 from UTC)" in text_of(page.text)
    saved = await post(viewer, "/console/account/time-zone", {"time_zone": "America/New_York"})
    assert saved.status_code == 303 and saved.headers["location"] == "/console/account/time-zone?done=own"
    shown = text_of((await viewer.get("/console/account/time-zone?done=own")).text)
    assert "It is now 2026-07-01 08:00:00 there (-04:00 from UTC)" in shown
    assert "Your time zone is saved: times are now shown in America/New_York." in shown
    await post(viewer, "/console/account/time-zone", {"time_zone": ""})
    assert "Times in Europe/Brussels" in (await viewer.get("/console/account/time-zone")).text
    changes = await records(harness, action="operator.set-time-zone")
    assert [(entry.detail or {}).get("to") for entry in changes] == ["company's", "America/New_York"]
    assert all(entry.actor == "operator viewer@acme.test" for entry in changes)


async def test_an_unknown_zone_is_the_forms_error_naming_it_and_changes_nothing(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    refused = await post(admin, "/console/account/time-zone", {"time_zone": "Europe/Atlantis"})
    assert refused.status_code == 422
    assert "Time zone: &#39;Europe/Atlantis&#39; is not a time zone of the tz database" in refused.text
    assert 'value="Europe/Atlantis"' in refused.text and 'aria-invalid="true"' in refused.text
    assert "Times in Europe/Brussels" in refused.text
    assert await records(harness, action="operator.set-time-zone") == []


async def test_an_owner_sets_the_companys_zone_for_every_operator_without_their_own(harness: ConsoleHarness) -> None:
    owner = await harness.signed_in("owner@acme.test")
    saved = await post(owner, "/console/account/company-time-zone", {"company_time_zone": "Asia/Tokyo"})
    assert saved.status_code == 303
    viewer = await harness.signed_in("viewer@acme.test")
    assert "Times in Asia/Tokyo" in (await viewer.get("/console/")).text
    stranger = await harness.signed_in("owner@other.test")
    assert "Times in Europe/Brussels" in (await stranger.get("/console/")).text  # another company: its own zone
    [change] = await records(harness, action="company.set-time-zone")
    assert (
        change.detail == {"from": "Europe/Brussels", "to": "Asia/Tokyo"} and change.actor == "operator owner@acme.test"
    )
    bad = await post(owner, "/console/account/company-time-zone", {"company_time_zone": "Tokyo"})
    assert bad.status_code == 422 and "Company time zone: &#39;Tokyo&#39; is not a time zone" in bad.text


async def test_only_an_owner_may_change_the_companys_zone(harness: ConsoleHarness) -> None:
    for email in ("admin@acme.test", "viewer@acme.test"):
        client = await harness.signed_in(email)
        page = (await client.get("/console/account/time-zone")).text
        assert "company_time_zone" not in page and "An owner of the company changes it." in page
        refused = await post(client, "/console/account/company-time-zone", {"company_time_zone": "Asia/Tokyo"})
        assert refused.status_code == 403
    assert await records(harness, action="company.set-time-zone") == []


async def test_a_filter_naming_a_time_the_clocks_skipped_offers_the_times_on_either_side(
    harness: ConsoleHarness,
) -> None:
    await _sessions_at(harness, datetime(2026, 3, 29, 1, 30, tzinfo=UTC))  # 03:30 +02:00
    viewer = await harness.signed_in("viewer@acme.test")
    skipped = await viewer.get("/console/sessions", params={"since": "2026-03-29T02:30"})
    assert skipped.status_code == 422
    said = text_of(skipped.text)
    assert (
        "02:30 does not exist on 2026-03-29 in Europe/Brussels: the clocks went forward from +01:00 to +02:00; "
        "choose 01:59 or 03:00." in said
    )
    links = dict(re.findall(r'<a href="([^"]+)">(Use [^<]+)</a>', skipped.text))
    assert sorted(links.values()) == ["Use 2026-03-29 01:59 +01:00", "Use 2026-03-29 03:00 +02:00"]
    later = next(unescape(url) for url, label in links.items() if "03:00" in label)
    chosen = await viewer.get(later)
    assert chosen.status_code == 200 and _ids(chosen.text) == ["1"]
    assert 'value="2026-03-29T03:00"' in chosen.text


async def test_a_filter_naming_a_time_shown_twice_takes_the_first_says_so_and_links_the_second(
    harness: ConsoleHarness,
) -> None:
    await _sessions_at(
        harness,
        AUTUMN_CHANGE - timedelta(minutes=20),  # 02:40 +02:00, the first 02:40
        AUTUMN_CHANGE + timedelta(minutes=40),  # 02:40 +01:00, the second
    )
    viewer = await harness.signed_in("viewer@acme.test")
    first = await viewer.get("/console/sessions", params={"since": "2026-10-25T02:30"})
    assert first.status_code == 200 and _ids(first.text) == ["2", "1"]
    said = text_of(first.text)
    assert "02:30 happened twice on 2026-10-25 in Europe/Brussels; read as the first, 2026-10-25 02:30 +02:00." in said
    assert "2026-10-25 02:40:00 +02:00" in said and "2026-10-25 02:40:00 +01:00" in said
    [(url, label)] = re.findall(r'<a href="([^"]+)">(Use the other[^<]+)</a>', first.text)
    assert label == "Use the other, 2026-10-25 02:30 +01:00"
    second = await viewer.get(unescape(url))
    assert second.status_code == 200 and _ids(second.text) == ["2"]
    assert "read as the second, 2026-10-25 02:30 +01:00" in text_of(second.text)
    # The choice stays with the form, so filtering again keeps it.
    assert '<input type="hidden" name="since_offset" value="+01:00">' in second.text


async def test_the_audit_logs_day_is_the_readers_day_25_hours_when_the_clocks_go_back(
    harness: ConsoleHarness,
) -> None:
    for instant, zone in (
        (datetime(2026, 10, 24, 21, 59, tzinfo=UTC), "Asia/Tokyo"),  # 23:59 +02:00 on the 24th
        (datetime(2026, 10, 24, 22, 0, tzinfo=UTC), "America/New_York"),  # 00:00 +02:00 on the 25th
        (datetime(2026, 10, 25, 22, 59, tzinfo=UTC), "Europe/Paris"),  # 23:59 +01:00 on the 25th
        (datetime(2026, 10, 25, 23, 0, tzinfo=UTC), "Europe/Lisbon"),  # 00:00 +01:00 on the 26th
    ):
        harness.clock.set(instant)
        owner = await harness.signed_in("owner@acme.test")  # months later: a new session
        await post(owner, "/console/account/time-zone", {"time_zone": zone})
    await post(owner, "/console/account/time-zone", {"time_zone": ""})  # read in the company's, Brussels
    listed = (await owner.get("/console/audit", params={"since": "2026-10-25", "until": "2026-10-25"})).text
    assert "to: America/New_York" in listed and "to: Europe/Paris" in listed
    assert "to: Asia/Tokyo" not in listed and "to: Europe/Lisbon" not in listed
    assert "2026-10-25 00:00:00 +02:00" in listed and "2026-10-25 23:59:00 +01:00" in listed


async def test_exports_carry_the_readers_offset(harness: ConsoleHarness) -> None:
    await _sessions_at(harness, datetime(2026, 7, 1, 7, 0, tzinfo=UTC))
    viewer = await harness.signed_in("viewer@acme.test")
    await post(viewer, "/console/account/time-zone", {"time_zone": "Asia/Tokyo"})
    exported = await viewer.get("/console/sessions.csv")
    header, row = list(csv.reader(io.StringIO(exported.text)))[:2]
    assert dict(zip(header, row, strict=True))["startedAt"] == "2026-07-01T16:00:00+09:00"
    listing = await viewer.get("/console/sessions")
    assert rows_of(listing.text)[0][3].startswith("2026-07-01 16:00:00 to ")  # started, then stopped


async def test_the_overviews_today_starts_at_the_readers_midnight(harness: ConsoleHarness) -> None:
    harness.clock.set(datetime(2026, 7, 1, 22, 30, tzinfo=UTC))  # 00:30 on 2 July in Brussels
    await _sessions_at(
        harness,
        datetime(2026, 7, 1, 21, 30, tzinfo=UTC),  # 23:30 on 1 July in Brussels
        datetime(2026, 7, 1, 22, 5, tzinfo=UTC),  # 00:05 on 2 July in Brussels
    )
    viewer = await harness.signed_in("viewer@acme.test")
    page = unescape((await viewer.get("/console/")).text)
    figures = page.split('<table id="energy-figures">', 1)[1].split("</table>", 1)[0]
    assert re.search(r">2026-07-02</a></th><td>1</td>", figures) and re.search(
        r">2026-07-01</a></th><td>1</td>", figures
    )
