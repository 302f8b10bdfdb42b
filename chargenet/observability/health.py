"""`GET /health`: each part of the process reports a level; the worst one is the answer.

`failing` means this process cannot do its job (database unreachable, keys missing) and answers 503;
`degraded` means it works but something needs attention (a partner endpoint down, a lane over its thresholds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from chargenet.observability.error_kinds import error_kind


class Level(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILING = "failing"


_ORDER = {Level.OK: 0, Level.DEGRADED: 1, Level.FAILING: 2}


@dataclass(frozen=True, slots=True)
class ComponentHealth:
    name: str
    level: Level
    details: dict[str, Any] = field(default_factory=dict)


HealthCheck = Callable[[], Awaitable[list[ComponentHealth]]]

CHECK_TIMEOUT = 3.0


async def collect(checks: Sequence[HealthCheck], each_within: float = CHECK_TIMEOUT) -> list[ComponentHealth]:
    """Every check's components, one after the other (each costs the store a query at most), each bounded by
    `each_within` seconds. A check that raises or runs late is one `degraded` component naming the kind of its
    error: the part it watches may be fine, and the database check says whether the store is the reason."""
    components: list[ComponentHealth] = []
    for check in checks:
        try:
            async with asyncio.timeout(each_within):
                components.extend(await check())
        except Exception as exc:
            components.append(ComponentHealth("health check", Level.DEGRADED, {"error": error_kind(exc)}))
    return components


def overall(components: Iterable[ComponentHealth]) -> Level:
    return max((c.level for c in components), key=_ORDER.__getitem__, default=Level.OK)


def health_document(components: list[ComponentHealth]) -> dict[str, Any]:
    return {
        "status": overall(components).value,
        "components": [{"name": c.name, "status": c.level.value, **c.details} for c in components],
    }
