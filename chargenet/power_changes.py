"""This process's site power rounds, run at once when something changes a site's power.

A use case that changes what a site may draw (a circuit's limit, margin, phases or place in the tree, or where a
station hangs) calls `site_power_changed(session, site_id)` in its unit of work, and the grid meters' poller does
the same when it stores a reading; once that unit commits (`store.commit_hooks`), every power controller of this
process is poked and runs the site's round at once rather than at its next timed round. A change rolled back wakes
nobody. On PostgreSQL the same commit notifies the other processes sharing the store (`store.notify`, channel
`SITE_POWER` with the site's id), so that the holder of the site's lease runs its round at once too: a limit changed
by the command line, or a grid meter polled by the process that holds its bus.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.commit_hooks import after_commit
from chargenet.store.notify import SITE_POWER, notify


class PowerRounds(Protocol):
    def poke(self, site_id: str, reconnected: str | None = None) -> None: ...


_controllers: weakref.WeakSet[PowerRounds] = weakref.WeakSet()


def run_rounds_on_changes(controller: PowerRounds) -> None:
    """Poke `controller` after every commit of this process that changed a site's power."""
    _controllers.add(controller)


def site_power_changed(session: AsyncSession, site_id: str) -> None:
    """Called in the unit of work that changes what a site may draw: its round runs once the unit commits."""
    after_commit(session, lambda: _poke(site_id), key=("site-power", site_id))
    notify(session, SITE_POWER, site_id)


def _poke(site_id: str) -> None:
    for controller in list(_controllers):
        controller.poke(site_id)
