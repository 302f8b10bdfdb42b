"""Rate limits per application on the served app (decisions.md §5 "Partner API"): the headers on every answer, 429
with `Retry-After` once the quota is spent, an application's own limit, and another application left alone."""

from __future__ import annotations

from pathlib import Path

from chargenet.clock import ManualClock
from tests.factories import make_tenant, partner_application
from tests.support.app import app_context, asgi_client


async def test_an_application_past_its_own_limit_is_answered_429_and_another_application_is_not(
    tmp_path: Path, clock: ManualClock
) -> None:
    async with app_context(tmp_path, clock) as context, asgi_client(context) as http:
        tenant = await make_tenant(context.store, context.keys, clock.now())
        _, admin_token = await partner_application(
            context, tenant.company_id, ["applications:write", "charge-points:read"]
        )
        limited_id, limited_token = await partner_application(context, tenant.company_id, ["charge-points:read"])
        admin = {"Authorization": f"Bearer {admin_token}"}
        limited = {"Authorization": f"Bearer {limited_token}"}

        changed = await http.put(f"/api/v1/applications/{limited_id}/rate-limit", json={"rateLimit": 3}, headers=admin)
        assert changed.status_code == 200, changed.text
        assert changed.json()["rateLimit"] == 3
        assert changed.headers["ratelimit-policy"] == '"app";q=600;w=60'  # the admin's own: the default

        answers = [await http.get("/api/v1/charge-points", headers=limited) for _ in range(4)]
        assert [a.status_code for a in answers] == [200, 200, 200, 429]
        assert {a.headers["ratelimit-policy"] for a in answers} == {'"app";q=3;w=60'}
        # One token back every 20 s: r tokens left, t seconds until all three are back.
        assert [a.headers["ratelimit"] for a in answers] == [
            '"app";r=2;t=20',
            '"app";r=1;t=40',
            '"app";r=0;t=60',
            '"app";r=0;t=60',
        ]
        refused = answers[3]
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.headers["retry-after"] == "20"
        assert refused.json() == {
            "type": "about:blank",
            "title": "Too Many Requests",
            "status": 429,
            "detail": "the application's rate limit of 3 requests a minute is spent; retry after 20 s",
        }

        # The other application is not held back, and an error answers with the headers too.
        missing = await http.get("/api/v1/charge-points/NO-SUCH", headers=admin)
        assert missing.status_code == 404
        assert missing.headers["ratelimit"] == '"app";r=598;t=1'

        clock.advance(19)
        assert (await http.get("/api/v1/charge-points", headers=limited)).status_code == 429
        clock.advance(1)
        assert (await http.get("/api/v1/charge-points", headers=limited)).status_code == 200

        metrics = (await http.get("/metrics")).text
        assert 'chargenet_api_rate_limited_total{limit="custom"} 2.0' in metrics
        assert 'chargenet_api_rate_limited_total{limit="default"}' not in metrics
