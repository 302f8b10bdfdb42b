"""Station logs over real WebSockets and real HTTP, on SQLite and on PostgreSQL: asked over the API, the simulated
station (1.6: GetDiagnostics; 2.0.1: GetLog) uploads its file to the one-time location and reports it; the file is
listed and downloadable; a second upload to the same location is refused (410), as is one past the bound (413),
with nothing stored; and the retention, its clock moved past 30 days, deletes the file and its row."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import select, update

from chargenet.clock import ManualClock
from chargenet.services.station_logs import LOGS_FOLDER, StationLogRetention
from chargenet.simulators.ocpp201.station import SimulatedStation201
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import AuditRecord, LogUploadSlot, StationLog, StationNotice
from tests.factories import partner_token
from tests.integration.edge.conftest import PASSWORD, Served


async def _put(url: str, content: bytes) -> httpx.Response:
    """An upload as a station makes it."""
    async with httpx.AsyncClient(timeout=10) as client:
        return await client.put(url, content=content)


async def _api(served: Served) -> httpx.AsyncClient:
    token = await partner_token(served.context, served.tenant.company_id, ["charge-points:read", "charge-points:write"])
    return httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )


def _stored_files(served: Served) -> list[Path]:
    return sorted(path for path in (served.context.settings.data_dir / LOGS_FOLDER).rglob("*") if path.is_file())


async def _statuses(served: Served, action: str) -> list[str]:
    async with served.context.store.read() as session:
        rows = await session.scalars(select(StationNotice.payload).where(StationNotice.action == action))
        return [payload for payload in rows]


async def _uploaded_and_refused_again(
    served: Served, api: httpx.AsyncClient, station: SimulatedStation | SimulatedStation201
) -> tuple[dict[str, object], str]:
    """Asks CS-1 for a log and waits for its upload; checks the list, the download and a second upload refused.
    Answers the request's answer and the file's content."""
    asked = await api.post("/stations/CS-1/request-log")
    assert asked.status_code == 200, asked.text
    answer = asked.json()
    assert answer["location"].startswith(f"{served.http_url}/uploads/")
    await station.settle()
    assert station.log_uploads == [201]

    listed = (await api.get("/stations/CS-1/logs")).json()["items"]
    assert [(item["requestId"], item["fileName"]) for item in listed] == [(answer["requestId"], answer["fileName"])]
    downloaded = await api.get(f"/stations/CS-1/logs/{listed[0]['id']}")
    assert downloaded.status_code == 200
    assert "attachment" in downloaded.headers["content-disposition"]
    assert "station CS-1" in downloaded.text and listed[0]["size"] == len(downloaded.content)
    assert (await api.get("/stations/CS-1/logs/999999")).status_code == 404

    # The location took its file: a second upload is refused and stores nothing.
    again = await _put(answer["location"] + "other.log", b"again")
    assert again.status_code == 410
    assert again.headers["content-type"] == "application/problem+json"
    assert len(_stored_files(served)) == 1
    unknown = await _put(f"{served.http_url}/uploads/no-such-token/x.log", b"x")
    assert unknown.status_code == 404

    async with served.context.store.read() as session:
        audited = await session.scalars(select(AuditRecord.action).where(AuditRecord.action == "station.request-log"))
        assert list(audited) == ["station.request-log"]
    return answer, downloaded.text


async def _oversize_refused(served: Served, api: httpx.AsyncClient) -> None:
    """A location whose bound is 16 bytes refuses 17 with 413, storing nothing and leaving it unused."""
    asked = (await api.post("/stations/CS-1/request-log")).json()
    async with served.context.store.transaction() as session:
        await session.execute(update(LogUploadSlot).where(LogUploadSlot.id == asked["requestId"]).values(max_bytes=16))
    refused = await _put(asked["location"] + "big.log", b"x" * 17)
    assert refused.status_code == 413
    assert refused.json()["status"] == 413
    assert len(_stored_files(served)) == 1
    async with served.context.store.read() as session:
        slot = await session.get(LogUploadSlot, asked["requestId"])
        assert slot is not None and slot.used_at is None
        assert len((await session.scalars(select(StationLog))).all()) == 1


async def test_a_1_6_station_uploads_its_diagnostics_once_and_they_are_deleted_after_30_days(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.boot()
    async with await _api(served) as api:
        answer, _ = await _uploaded_and_refused_again(served, api, station)
        assert answer["fileName"] == "diagnostics-CS-1.log"
        assert await _statuses(served, "DiagnosticsStatusNotification") == [
            '{"status":"Uploading"}',
            '{"status":"Uploaded"}',
        ]
        station.answers["GetDiagnostics"] = lambda _: {}  # this time it uploads nothing of its own
        await _oversize_refused(served, api)

        # The retention, its clock moved: a day short of 30 keeps the log, past 30 deletes file and row.
        clock = ManualClock(served.context.clock.now() + timedelta(days=29))
        retention = StationLogRetention(served.context.store, clock, served.context.settings.data_dir)
        await retention.run_once()
        assert len((await api.get("/stations/CS-1/logs")).json()["items"]) == 1
        clock.advance(timedelta(days=2).total_seconds())
        await retention.run_once()
        assert (await api.get("/stations/CS-1/logs")).json()["items"] == []
        assert _stored_files(served) == []
    await station.close()


async def test_a_2_0_1_station_uploads_its_log_once_and_reports_it(served: Served) -> None:
    station = SimulatedStation201(served.ocpp_url, "CS-1", PASSWORD)
    await station.connect()
    await station.boot()
    await served.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now
    async with await _api(served) as api:
        answer, _ = await _uploaded_and_refused_again(served, api, station)
        assert answer["status"] == "Accepted"
        request_id = answer["requestId"]
        sent = {"logType": "DiagnosticsLog", "requestId": request_id, "log": {"remoteLocation": answer["location"]}}
        assert ("GetLog", sent) in station.received_calls
        assert await _statuses(served, "LogStatusNotification") == [
            f'{{"status":"Uploading","requestId":{request_id}}}',
            f'{{"status":"Uploaded","requestId":{request_id}}}',
        ]
        station.answers["GetLog"] = lambda _: {"status": "Rejected"}
        await _oversize_refused(served, api)
    await station.close()
