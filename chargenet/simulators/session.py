"""The story of a charging session, whatever OCPP generation tells it: cable and badge in either order, the start,
the meter rising at each sampling interval, the stop, the cable out. A generation's station says each step in its
own messages (`ChargingSteps`); the story and the meter's curve are written once, here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Reading:
    after_s: float  # seconds since the previous reading (or the start)
    wh: int  # the energy delivered since the start


def meter_curve(wh: int, seconds: float, every: float) -> list[Reading]:
    """`wh` delivered evenly over `seconds`, read every `every` seconds (the last reading is `wh`), as a station's
    sampling interval reports its register; no reading for a session of no duration."""
    if seconds <= 0:
        return []
    steps = max(1, round(seconds / every))
    return [Reading(seconds / steps, wh * step // steps) for step in range(1, steps + 1)]


class ChargingSteps(Protocol[T]):
    """A station's messages for each step of the story; `T` is what identifies its transaction."""

    async def cable_in(self, connector_id: int) -> None: ...

    async def badge(self, connector_id: int, id_tag: str) -> None: ...

    async def begin(self, connector_id: int, id_tag: str) -> T: ...

    async def report(self, connector_id: int, transaction: T, wh: int) -> None: ...

    async def end(self, connector_id: int, transaction: T, wh: int, reason: str | None) -> None: ...

    async def cable_out(self, connector_id: int) -> None: ...


async def tell_session(
    steps: ChargingSteps[T],
    connector_id: int,
    id_tag: str,
    wh: int,
    *,
    plug_first: bool,
    readings: list[Reading],
    stop_reason: str | None,
) -> T:
    """Cable and badge (in the order `plug_first` says), begin, the readings in real time, end, cable out."""
    if plug_first:
        await steps.cable_in(connector_id)
        await steps.badge(connector_id, id_tag)
    else:
        await steps.badge(connector_id, id_tag)
        await steps.cable_in(connector_id)
    transaction = await steps.begin(connector_id, id_tag)
    for reading in readings:
        await asyncio.sleep(reading.after_s)
        await steps.report(connector_id, transaction, reading.wh)
    await steps.end(connector_id, transaction, wh, stop_reason)
    await steps.cable_out(connector_id)
    return transaction


class DemoStation(Protocol):
    """What `make demo` and the scenario ask of a station, whichever generation it speaks."""

    station_id: str

    async def connect(self, subprotocols: tuple[str, ...] | None = None) -> object: ...

    async def boot(self) -> object: ...

    async def report_available(self, connectors: int) -> None: ...

    async def heartbeat(self) -> object: ...

    async def plug_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> object: ...

    async def id_first_session(
        self, connector_id: int, id_tag: str, wh: int = 7000, *, charging_seconds: float = 0.0, meter_every: float = 5.0
    ) -> object: ...

    async def close(self) -> None: ...
