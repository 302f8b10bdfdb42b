"""Authorization plugins: a typed async protocol, loaded from the entry-point group `chargenet.authorizers`.

A plugin sees the tag and where it was presented and answers with a status, or None for "no opinion". It gets
`PLUGIN_TIMEOUT` seconds; a plugin that is slower, or raises, has no opinion (logged), so a broken plugin never
stops a station from charging with tags the rest of the chain knows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from chargenet.clock import Clock
from chargenet.domain.events import AuthorizationStatus

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "chargenet.authorizers"
PLUGIN_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class AuthorizeRequest:
    site_id: str
    station_id: str
    id_tag: str
    connector_id: int | None = None


@runtime_checkable
class Authorizer(Protocol):
    name: str

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None: ...


def load_authorizers() -> list[Authorizer]:
    """Instantiate every installed plugin, in entry-point name order; an entry point names a zero-argument
    factory (usually the class). A plugin that cannot be imported or built, or builds something that is not an
    `Authorizer`, is logged by its entry-point name and left out: one broken plugin must not keep the service,
    and every station with it, from starting."""
    found: list[Authorizer] = []
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        fields = {"entry_point": entry.name, "target": entry.value}
        try:
            plugin = entry.load()()
        except Exception:
            log.exception("authorizer plugin failed to load, skipped", extra={"fields": fields})
            continue
        if not isinstance(plugin, Authorizer):
            log.error("authorizer plugin is not an Authorizer, skipped", extra={"fields": fields})
            continue
        found.append(plugin)
    return found


async def ask_plugins(
    plugins: Sequence[Authorizer], request: AuthorizeRequest, clock: Clock, seconds: float = PLUGIN_TIMEOUT
) -> list[AuthorizationStatus | None]:
    """Each plugin's opinion, in order, stopping at the first one that has one."""
    opinions: list[AuthorizationStatus | None] = []
    for plugin in plugins:
        opinion = await _ask(plugin, request, clock, seconds)
        opinions.append(opinion)
        if opinion is not None:
            break
    return opinions


async def _ask(
    plugin: Authorizer, request: AuthorizeRequest, clock: Clock, seconds: float
) -> AuthorizationStatus | None:
    task = asyncio.ensure_future(plugin.authorize(request))
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    await asyncio.wait([task, sleeper], return_when=asyncio.FIRST_COMPLETED)
    sleeper.cancel()
    if not task.done():
        task.cancel()
        log.warning("authorizer timed out", extra={"fields": {"plugin": plugin.name}})
        return None
    if task.exception() is not None:
        log.warning("authorizer failed", exc_info=task.exception(), extra={"fields": {"plugin": plugin.name}})
        return None
    return task.result()
