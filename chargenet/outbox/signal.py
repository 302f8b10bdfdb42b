"""The outbox's in-process signal that new events were committed.

A transaction of this process that published into the outbox wakes every subscriber (the webhook lanes'
filler) as soon as it has committed, so events raised here reach the lanes without waiting for the next poll.
Events committed by other processes come as a PostgreSQL notification on `store.notify.OUTBOX`, which the
publisher sends in the same transaction, or else are found by the poll (SQLite). The publisher marks the
session it wrote to, and listens on that session only: nothing here watches every session of the process.
"""

from __future__ import annotations

import asyncio
import weakref

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

_PUBLISHED = "chargenet.outbox.published"
_LISTENING = "chargenet.outbox.listening"

_subscribers: weakref.WeakSet[asyncio.Event] = weakref.WeakSet()


def outbox_committed() -> asyncio.Event:
    """An event set after every commit in this process that published into the outbox."""
    waiter = asyncio.Event()
    _subscribers.add(waiter)
    return waiter


def note_published(session: AsyncSession) -> None:
    """Called by the publisher: wake the subscribers when `session` commits, not if it rolls back."""
    sync = session.sync_session
    sync.info[_PUBLISHED] = True
    if _LISTENING not in sync.info:
        sync.info[_LISTENING] = True
        event.listen(sync, "after_commit", _after_commit)
        event.listen(sync, "after_rollback", _after_rollback)


def _after_commit(session: Session) -> None:
    if session.info.pop(_PUBLISHED, False):
        for waiter in list(_subscribers):
            waiter.set()


def _after_rollback(session: Session) -> None:
    session.info.pop(_PUBLISHED, None)
