"""The console's Groups and Webhooks pages answer within 100 ms at the 99th percentile (issue 14), with 100
webhooks whose delivery logs hold 100,000 attempts, 200 groups and 1,000 applications in the store.

Each page is asked for in-process (the console app over httpx's ASGI transport, a signed-in operator, SQLite), so
the figure is the server's time: routing, the use cases' queries and the template. The result compares the
budget with the measured p99 (ratio = 100 ms / p99): a ratio of at least 1 meets the target.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import argon2
import httpx
from sqlalchemy import insert
from starlette.applications import Starlette
from starlette.routing import Mount

from bench.common import Result
from chargenet.clock import ManualClock
from chargenet.console.app import create_console
from chargenet.console.pages import Console
from chargenet.keys import KeyStore
from chargenet.services import applications, audit, companies, groups, operators, sites
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import WebhookDelivery
from chargenet.webhooks.outbound_auth import NoAuth

BUDGET_MS = 100.0
WEBHOOKS = 100
ATTEMPTS_EACH = 1000
GROUPS = 200
APPLICATIONS = 1000
REQUESTS_PER_PAGE = 60
PASSWORD = "bench password long"


async def _seed(store: Store, keys: KeyStore, clock: ManualClock, passwords: operators.Passwords) -> dict[str, str]:
    now = clock.now()
    async with store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Bench", now=now)
        site = await sites.create_site(
            session, OPERATOR, keys.credential_cipher(), company_id=company.id, name="Depot", now=now
        )
        hooks = []
        for number in range(WEBHOOKS):
            view = await webhook_service.create_webhook(
                session,
                OPERATOR,
                keys.credential_cipher(),
                site_id=site.id,
                url=f"https://partner-{number}.example/hook",
                event_types=["Authorize,ChargePointStatus,StartTransaction,StopTransaction"],
                auth=NoAuth(),
                now=now,
                allow_private=True,
                resolver=_unresolvable,
            )
            hooks.append(view.id)
        apps = []
        for number in range(APPLICATIONS):
            created = await applications.create_application(
                session, OPERATOR, keys.secret_hasher(), company_id=company.id, name=f"App {number}", now=now
            )
            apps.append(created.client_id)
        group_ids = []
        for number in range(GROUPS):
            group = await groups.create_group(
                session, OPERATOR, company_id=company.id, name=f"Group {number}", scopes=["sites:read"], now=now
            )
            group_ids.append(group.id)
            for client_id in apps[number * 5 : number * 5 + 5]:
                await groups.add_app(session, OPERATOR, group.id, client_id, now=now)
        rows = [
            {
                "webhook_id": webhook_id,
                "event_type": "Authorize",
                "event_id": f"00000000-0000-4000-8000-{attempt:012d}",
                "attempt": 1,
                "request_id": f"00000000-0000-4000-9000-{attempt:012d}",
                "at": now,
                "duration_ms": 12.5,
                "delivered": attempt % 10 != 0,
                "status": 204 if attempt % 10 else 503,
                "error": None if attempt % 10 else "HTTP 503",
                "response": "" if attempt % 10 else "busy",
            }
            for webhook_id in hooks
            for attempt in range(ATTEMPTS_EACH)
        ]
        await session.execute(insert(WebhookDelivery), rows)
    await operators.create_operator(
        store.transaction,
        passwords,
        operators.LOCAL,
        audit.LOCAL_OPERATOR,
        company_id=company.id,
        email="bench@acme.test",
        role="admin",
        password=PASSWORD,
        now=now,
    )
    return {"webhook": hooks[WEBHOOKS // 2], "group": group_ids[GROUPS // 2], "app": apps[7]}


async def _unresolvable(host: str, port: int) -> list[str]:
    from chargenet.webhooks.transport import HostUnresolvable

    raise HostUnresolvable(host, "not resolved in the benchmark")


async def _measure() -> list[Result]:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        store = Store(f"sqlite+aiosqlite:///{folder / 'bench.db'}")
        await schema.prepare_schema(store)
        keys = KeyStore(folder / "keys")
        keys.ensure()
        clock = ManualClock(datetime(2026, 7, 1, tzinfo=UTC))
        passwords = operators.Passwords(argon2.PasswordHasher.from_parameters(argon2.profiles.CHEAPEST))
        ids = await _seed(store, keys, clock, passwords)
        console = Console(
            store.transaction,
            clock,
            "http://console.bench",
            passwords,
            secret_hasher=keys.secret_hasher(),
            credential_cipher=keys.credential_cipher(),
            read=store.read,
        )
        app = Starlette(routes=[Mount("/console", app=create_console(console))])
        pages = {
            "webhooks list": "/console/webhooks",
            "webhook detail": f"/console/webhooks/{ids['webhook']}",
            "webhook health": f"/console/webhooks/{ids['webhook']}/health",
            "delivery log": f"/console/webhooks/{ids['webhook']}/deliveries?outcome=failed",
            "webhook edit": f"/console/webhooks/{ids['webhook']}/edit",
            "groups list": "/console/groups?grants=sites:read",
            "group detail": f"/console/groups/{ids['group']}",
            "application with groups": f"/console/applications/{ids['app']}",
        }
        results = []
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console.bench") as client:
            signed = await client.post(
                "/console/login",
                data={"email": "bench@acme.test", "password": PASSWORD},
                headers={"Origin": "http://console.bench"},
            )
            assert signed.status_code == 303, signed.text
            for name, path in pages.items():
                durations = []
                for _ in range(REQUESTS_PER_PAGE):
                    started = time.perf_counter()
                    response = await client.get(path)
                    durations.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, (path, response.status_code)
                p99 = statistics.quantiles(durations, n=100)[98]
                results.append(Result(f"console {name}: 100 ms budget / p99 ms", BUDGET_MS, p99, "ms", target=1.0))
        await store.dispose()
        return results


def run() -> list[Result]:
    return asyncio.run(_measure())
