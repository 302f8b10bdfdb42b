"""`collect`: a check that raises or hangs is one degraded component naming its error's kind, not the answer's end."""

from __future__ import annotations

import asyncio

from chargenet.observability.health import ComponentHealth, Level, collect, health_document


async def _ok() -> list[ComponentHealth]:
    return [ComponentHealth("database", Level.OK)]


async def _raises() -> list[ComponentHealth]:
    raise ConnectionRefusedError(111, "refused by partner.example:443")


async def _hangs() -> list[ComponentHealth]:
    await asyncio.Event().wait()
    return []


async def test_a_check_that_raises_is_degraded_with_its_kind_and_the_others_still_report() -> None:
    components = await collect([_raises, _ok])
    assert health_document(components) == {
        "status": "degraded",
        "components": [
            {"name": "health check", "status": "degraded", "error": "connection_refused"},
            {"name": "database", "status": "ok"},
        ],
    }


async def test_a_check_that_hangs_is_a_timeout_after_its_bound() -> None:
    [component] = await collect([_hangs], each_within=0.01)
    assert (component.level, component.details) == (Level.DEGRADED, {"error": "timeout"})
