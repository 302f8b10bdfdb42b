"""Readiness: each failed probe named with the kind of its error, each probe bounded in time."""

from __future__ import annotations

import asyncio

from chargenet.observability.readiness import NotReady, failed_checks, workers_probe


async def _fine() -> None:
    return None


async def _refused() -> None:
    raise ConnectionRefusedError(111, "Connection refused by db.internal:5432")


async def _hangs() -> None:
    await asyncio.Event().wait()


async def test_every_probe_passing_is_no_failed_check() -> None:
    assert await failed_checks({"database": _fine, "keys": _fine}) == {}


async def test_a_failed_probe_is_named_with_the_kind_of_its_error() -> None:
    assert await failed_checks({"database": _refused, "keys": _fine}) == {"database": "connection_refused"}


async def test_a_probe_that_hangs_is_a_timeout_after_its_bound() -> None:
    assert await failed_checks({"database": _hangs}, each_within=0.01) == {"database": "timeout"}


async def test_a_probe_names_its_own_kind_with_not_ready() -> None:
    async def keys() -> None:
        raise NotReady("keys_missing")

    assert await failed_checks({"keys": keys}) == {"keys": "keys_missing"}


async def test_workers_not_yet_started_are_not_started() -> None:
    assert await failed_checks({"workers": workers_probe(lambda: None)}) == {"workers": "not_started"}


async def test_a_worker_that_ended_is_stopped() -> None:
    ended = asyncio.ensure_future(_fine())
    await ended
    running = asyncio.ensure_future(_hangs())
    try:
        failed = await failed_checks({"workers": workers_probe(lambda: [running, ended])})
    finally:
        running.cancel()
    assert failed == {"workers": "stopped"}
