"""`GET /health/ready`: may a load balancer send this process work?

Each check is a probe that returns when all is well and raises otherwise; the answer names each failed check with
the kind of its error (`chargenet.observability.error_kinds`), never its text. Probes run together, each bounded
by `each_within` seconds: a store that hangs makes the answer late by that much at most, not by the driver's
own timeouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from chargenet.observability.error_kinds import error_kind

Probe = Callable[[], Awaitable[None]]

READY_TIMEOUT = 2.0


class NotReady(Exception):
    """Raised by a probe that knows the kind of what is wrong (`not_started`, `stopped`, `keys_missing`)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


async def failed_checks(probes: Mapping[str, Probe], each_within: float = READY_TIMEOUT) -> dict[str, str]:
    """Each check that failed, with the kind of its error; empty when the process is ready."""

    async def run(probe: Probe) -> str | None:
        try:
            async with asyncio.timeout(each_within):
                await probe()
        except NotReady as exc:
            return exc.kind
        except Exception as exc:
            return error_kind(exc)
        return None

    names = list(probes)
    kinds = await asyncio.gather(*(run(probes[name]) for name in names))
    return {name: kind for name, kind in zip(names, kinds, strict=True) if kind is not None}


def workers_probe(tasks: Callable[[], list[asyncio.Task[None]] | None]) -> Probe:
    """Ready while the workers started by the app's lifespan all run; `tasks` is None before it starts them."""

    async def probe() -> None:
        running = tasks()
        if running is None:
            raise NotReady("not_started")
        if any(task.done() for task in running):
            raise NotReady("stopped")

    return probe
