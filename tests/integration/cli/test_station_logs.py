"""`chargenet admin station request-log|logs|download-log`, as an operator types them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from chargenet.store.db import Store
from chargenet.store.models import LogUploadSlot, StationLog
from tests.integration.cli.helpers import Cli, company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


async def _received(database_url: str, data_dir: Path, content: bytes) -> int:
    """A log ST-1 uploaded, as the upload endpoint keeps it."""
    relative = "station-logs/ST-1/1-diagnostics.log"
    (data_dir / relative).parent.mkdir(parents=True)
    (data_dir / relative).write_bytes(content)
    store = Store(database_url)
    try:
        async with store.transaction() as session:
            slot = LogUploadSlot(
                station_id="ST-1", token_hash="ab", requested_at=AT, expires_at=AT, max_bytes=1024, used_at=AT
            )
            session.add(slot)
            await session.flush()
            row = StationLog(
                station_id="ST-1",
                request_id=slot.id,
                file_name="diagnostics.log",
                size=len(content),
                sha256="cd",
                received_at=AT,
                path=relative,
            )
            session.add(row)
            await session.flush()
            return row.id
    finally:
        await store.dispose()


async def test_a_stations_logs_are_asked_listed_and_downloaded(cli: Cli, database_url: str, tmp_path: Path) -> None:
    _, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-1")
    asked = await cli("admin", "station", "request-log", "ST-1")
    assert asked.code == 1 and "not connected" in asked.err
    assert (await cli("admin", "station", "logs", "ST-1", "--json")).json() == {"items": []}

    log_id = await _received(database_url, tmp_path / "data", b"all connectors nominal\n")
    listed = (await cli("admin", "station", "logs", "ST-1", "--json")).json()["items"]
    assert [(item["id"], item["fileName"], item["size"]) for item in listed] == [(log_id, "diagnostics.log", 23)]
    output = tmp_path / "copy.log"
    copied = await cli("admin", "station", "download-log", "ST-1", str(log_id), "--output", str(output))
    assert copied.code == 0, copied.err
    assert output.read_bytes() == b"all connectors nominal\n"
    missing = await cli("admin", "station", "download-log", "ST-1", "999", "--output", str(output))
    assert missing.code == 4 and "not found" in missing.err
