"""`GET /health`: each part of the process reports a level; the worst one is the answer.

`failing` means this process cannot do its job (database unreachable, keys missing) and answers 503;
`degraded` means it works but something needs attention (a partner endpoint down, a lane over its thresholds).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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


def overall(components: Iterable[ComponentHealth]) -> Level:
    return max((c.level for c in components), key=_ORDER.__getitem__, default=Level.OK)


def health_document(components: list[ComponentHealth]) -> dict[str, Any]:
    return {
        "status": overall(components).value,
        "components": [{"name": c.name, "status": c.level.value, **c.details} for c in components],
    }
