from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizationStatus
from chargenet.edge.authorizers import AuthorizeRequest, ask_plugins

REQUEST = AuthorizeRequest("site_1", "CS-1", "TAG1")


class Fixed:
    def __init__(self, name: str, answer: AuthorizationStatus | None) -> None:
        self.name, self.answer, self.asked = name, answer, 0

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        self.asked += 1
        return self.answer


class Broken:
    name = "broken"

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        raise RuntimeError("plugin bug")


class Never:
    name = "never"

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        await asyncio.Event().wait()
        return None


def clock() -> ManualClock:
    return ManualClock(datetime(2026, 7, 1, tzinfo=UTC))


async def test_plugins_are_asked_in_order_until_one_has_an_opinion() -> None:
    first, second, third = Fixed("a", None), Fixed("b", AuthorizationStatus.BLOCKED), Fixed("c", None)
    opinions = await ask_plugins([first, second, third], REQUEST, clock())
    assert opinions == [None, AuthorizationStatus.BLOCKED] and third.asked == 0


async def test_a_plugin_that_raises_has_no_opinion() -> None:
    assert await ask_plugins([Broken(), Fixed("b", AuthorizationStatus.ACCEPTED)], REQUEST, clock()) == [
        None,
        AuthorizationStatus.ACCEPTED,
    ]


async def test_a_plugin_slower_than_its_time_has_no_opinion() -> None:
    manual = clock()
    asking = asyncio.create_task(ask_plugins([Never()], REQUEST, manual, seconds=2))
    while manual.sleepers == 0:
        await asyncio.sleep(0)
    manual.advance(2)
    assert await asking == [None]
