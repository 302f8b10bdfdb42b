"""The narrow interfaces through which use cases reach the running parts of a process.

Services (`chargenet.services`) need three things from the runtime: to send a command to a station, wherever its
connection is held, to wake this process's webhook lanes after a webhook changed, and to send one request to a
webhook outside its lanes (the test event). They ask for these
Protocols, never for the edge's or the delivery engine's classes, so the runtime can change shape without the
use cases noticing, and a face that runs without the runtime (`chargenet admin`) passes what it has. The lanes
are the exception that no face passes: each delivery engine subscribes itself as `WebhookLanes` to
`webhooks.changes`, which the webhook use cases tell in the unit of work that changes a webhook.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
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
        """Re-read webhook settings now rather than at the next lease round (`webhooks.changes` calls it once a
        change of a webhook commits)."""
        ...


@dataclass(frozen=True, slots=True)
class SentRequest:
    """What became of one request to a webhook, as the delivery log keeps it: a lane's attempt or a test event."""

    request_id: str
    started_at: datetime
    duration_ms: float
    status: int | None
    """The receiver's HTTP status, when it answered."""
    error: str | None
    """Why it failed (`HTTP 500`, `timeout after 10 s`, ...); None when the receiver answered 2xx."""
    response: str | None
    """The first 1 KiB of the response body, as text."""


class WebhookTests(Protocol):
    async def send_once(self, webhook_id: str, body: bytes) -> SentRequest:
        """POST `body` to the webhook once, signed and authenticated as its lanes would, without retries.

        Raises `NotFound` when the webhook is gone."""
        ...
