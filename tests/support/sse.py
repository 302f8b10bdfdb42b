"""Reading a server-sent event stream in tests, as the console's live page reads it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator


async def next_row(lines: AsyncIterator[str], *containing: str, within: float = 20.0) -> str:
    """The first `row` event of a server-sent event stream whose HTML holds each of `containing`."""
    data: list[str] = []
    name = ""
    async with asyncio.timeout(within):
        async for line in lines:
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
            elif line == "" and data:
                text = "\n".join(data)
                assert name == "row", (name, text)
                if all(part in text for part in containing):
                    return text
                data, name = [], ""
    raise AssertionError("the stream ended")
