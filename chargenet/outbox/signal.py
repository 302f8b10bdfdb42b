"""The outbox's in-process signal that new events were committed.

A transaction of this process that published into the outbox wakes every subscriber (the webhook lanes'
filler) as soon as it has committed, so events raised here reach the lanes without waiting for the next poll.
Events committed by other processes come as a PostgreSQL notification on `store.notify.OUTBOX`, which the
publisher sends in the same transaction, or else are found by the poll (SQLite). The publisher leaves the wake-up
to the commit of the session it wrote to (`store.commit_hooks`): once a transaction, dropped if it, or the
savepoint of the unit that published, rolls back.
"""

from __future__ import annotations

import asyncio
import weakref

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.commit_hooks import after_commit

_subscribers: weakref.WeakSet[asyncio.Event] = weakref.WeakSet()


def outbox_committed() -> asyncio.Event:
    """An event set after every commit in this process that published into the outbox."""
    waiter = asyncio.Event()
    _subscribers.add(waiter)
    return waiter


def note_published(session: AsyncSession) -> None:
    """Called by the publisher: wake the subscribers when `session` commits, not if it rolls back."""
    after_commit(session, _wake, key=_wake)


def _wake() -> None:
    for waiter in list(_subscribers):
        waiter.set()
