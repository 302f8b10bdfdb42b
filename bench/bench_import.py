"""Bulk provisioning: `chargenet admin station import` of 10,000 stations (target: under 10 s, at least
1,000 stations/s), against a baseline that writes the same rows with bare multi-row inserts and no checks, in the
same run on the same machine. SQLite, then a fresh database on the PostgreSQL server `make bench` starts."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import delete, insert

from bench.common import POSTGRES_SERVER, Result, create_database, drop_database
from chargenet.config import load_settings
from chargenet.context import open_store
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.store.models import ChargePoint, Connector, Station

STATIONS = 10_000
ROOT = Path(__file__).resolve().parents[1]


def _file(folder: str) -> Path:
    path = Path(folder) / "stations.csv"
    lines = ["id,chargePoints,connectors,password"]
    lines += [f"IMP-{n:05d},1,2,{'k' * 16}{n:08d}" for n in range(STATIONS)]
    path.write_text("\n".join(lines) + "\n")
    return path


async def _site(settings_values: dict[str, str]) -> str:
    context = await open_store(load_settings(settings_values, environ={}), migrate=True)
    now = context.clock.now()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench", now=now)
        site = await sites.create_site(
            session, OPERATOR, context.keys.credential_cipher(), company_id=company.id, name="S", now=now
        )
    await context.close()
    return site.id


async def _bare(settings_values: dict[str, str], site_id: str) -> float:
    """The same rows written with no parsing, checks, hashing or audit: what the store alone costs."""
    context = await open_store(load_settings(settings_values, environ={}))
    now = context.clock.now()
    stations = [
        {"id": f"BARE-{n:05d}", "site_id": site_id, "charge_points": 1, "connectors_per_charge_point": 2}
        for n in range(STATIONS)
    ]
    points = [{"id": s["id"], "station_id": s["id"], "site_id": site_id, "ordinal": 1} for s in stations]
    connectors = [{"charge_point_id": s["id"], "connector_id": c} for s in stations for c in (1, 2)]
    start = time.perf_counter()
    async with context.store.transaction() as session:
        await session.execute(insert(Station).values(created_at=now), stations)
        await session.execute(insert(ChargePoint), points)
        await session.execute(insert(Connector), connectors)
    elapsed = time.perf_counter() - start
    async with context.store.transaction() as session:
        await session.execute(delete(Station).where(Station.id.like("BARE-%")))
    await context.close()
    return elapsed


def _measure(label: str, values: dict[str, str], folder: str) -> Result:
    site_id = asyncio.run(_site(values))
    path = _file(folder)
    command = [sys.executable, "-m", "chargenet", "admin", "station", "import", "--site", site_id, str(path)]
    command += [f"--{k.replace('_', '-')}={v}" for k, v in values.items()]
    start = time.perf_counter()
    done = subprocess.run(
        command, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=False
    )
    whole = time.perf_counter() - start
    failure = "" if done.returncode == 0 else f"import failed: {done.stderr.strip()[:200]}"
    if not failure and whole >= 10:
        failure = f"{STATIONS:,} stations took {whole:.1f} s (target under 10 s)"
    bare = asyncio.run(_bare(values, site_id))
    print(
        f"import ({label}): {STATIONS:,} stations in {whole:.2f} s with the command's start, bare inserts {bare:.2f} s"
    )
    return Result(
        f"station import, {label} (whole command)", STATIONS / whole, STATIONS / bare, "stations/s", failure=failure
    )


def run() -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        results.append(_measure("SQLite", {"data_dir": folder}, folder))
    server_url = os.environ.get(POSTGRES_SERVER)
    if server_url:
        url = asyncio.run(create_database(server_url))
        try:
            with tempfile.TemporaryDirectory() as folder:
                results.append(_measure("PostgreSQL", {"data_dir": folder, "database_url": url}, folder))
        finally:
            asyncio.run(drop_database(server_url, url))
    return results
