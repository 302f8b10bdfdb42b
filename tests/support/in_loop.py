"""A uvicorn server run in the test's own event loop, so that the test's clock and store are the server's."""

from __future__ import annotations

import asyncio

import uvicorn


async def start_serving(server: uvicorn.Server, poll: float = 0.01) -> asyncio.Task[None]:
    """`server` serving in a task of this event loop, returned once it listens; should it end before that, its
    error is raised here."""
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise AssertionError("the server ended before it listened")
        await asyncio.sleep(poll)
    return task
