"""This process's webhook lanes, woken once a change of a webhook commits.

A use case that changes a webhook (creates, edits, enables, disables or deletes it, or puts dead letters back in
its lanes) calls `webhook_changed(session)` in the unit of work that makes the change; once that unit commits
(`store.commit_hooks`), every delivery engine of this process is poked (`ports.WebhookLanes.poke`): it re-reads
its leases and the webhooks' settings at once rather than at its next lease round, so a disabled webhook's
request in flight is cancelled and a new one's lanes are taken within milliseconds. A change rolled back wakes
nobody. The faces do nothing for it, and a process without lanes (`chargenet admin`) has nothing to wake; the
engines of other processes sharing the store notice within their lease round (a second).

Each engine subscribes when it is made, as it does to the outbox's signal, and is forgotten with it.
"""

from __future__ import annotations

import weakref

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.ports import WebhookLanes
from chargenet.store.commit_hooks import after_commit

_lanes: weakref.WeakSet[WebhookLanes] = weakref.WeakSet()


def wake_on_changes(lanes: WebhookLanes) -> None:
    """Poke `lanes` after every commit of this process that changed a webhook."""
    _lanes.add(lanes)


def webhook_changed(session: AsyncSession) -> None:
    """Called in the unit of work that changes a webhook: wake this process's lanes once it commits."""
    after_commit(session, _wake, key=_wake)


def _wake() -> None:
    for lanes in list(_lanes):
        lanes.poke()
