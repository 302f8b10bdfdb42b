"""The narrow interfaces through which use cases reach the running parts of a process.

Services (`chargenet.services`) need two things from the runtime: to send a command to a station, wherever its
connection is held, and to wake this process's webhook lanes after a webhook changed. They ask for these
Protocols, never for the edge's or the delivery engine's classes, so the runtime can change shape without the
use cases noticing, and a face that runs without the runtime (`chargenet admin`) passes what it has.
"""

from __future__ import annotations

from typing import Any, Protocol


class StationCommands(Protocol):
    """Sends a command to a station and returns its answer (an OCPP payload).

    Raises `StationNotConnected`, `StationDidNotAnswer` and `StationAnswerFailed` (chargenet.errors)."""

    async def command(self, station_id: str, action: str, payload: dict[str, Any]) -> dict[str, Any]: ...

    def is_connected(self, station_id: str) -> bool:
        """Whether this process holds the station's OCPP connection."""
        ...


class WebhookLanes(Protocol):
    def poke(self) -> None:
        """Re-read webhook settings now rather than at the next lease round."""
        ...
