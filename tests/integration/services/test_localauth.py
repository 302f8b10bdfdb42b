"""A local list entry's version on both backends: every change bumps it, and a change or a removal made from an
older version is refused rather than overwriting what another operator saved meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.errors import StaleChange
from chargenet.keys import KeyStore
from chargenet.services import localauth
from chargenet.services.callers import OPERATOR
from chargenet.services.localauth import LocalAuthView
from chargenet.store.db import Store
from tests.factories import make_tenant


@pytest.fixture
async def site_id(store: Store, clock: ManualClock, tmp_path: Path) -> str:
    return (await make_tenant(store, KeyStore(tmp_path), clock.now())).site_id


async def save(store: Store, clock: ManualClock, site_id: str, status: str, version: int | None) -> LocalAuthView:
    async with store.transaction() as session:
        return await localauth.add_entry(
            session, OPERATOR, site_id=site_id, id_tag="TAG-1", now=clock.now(), status=status, expected_version=version
        )


async def stored(store: Store, site_id: str) -> LocalAuthView:
    async with store.read() as session:
        return await localauth.get_entry(session, OPERATOR, site_id=site_id, id_tag="TAG-1")


async def test_a_new_entry_starts_at_version_1_and_each_change_bumps_it(
    store: Store, clock: ManualClock, site_id: str
) -> None:
    assert (await save(store, clock, site_id, "Accepted", None)).version == 1
    assert (await save(store, clock, site_id, "Blocked", 1)).version == 2
    assert (await save(store, clock, site_id, "Accepted", None)).version == 3


async def test_an_unchanged_save_keeps_the_version(store: Store, clock: ManualClock, site_id: str) -> None:
    await save(store, clock, site_id, "Blocked", None)
    assert (await save(store, clock, site_id, "Blocked", 1)).version == 1


async def test_a_change_from_an_older_version_is_refused_and_the_stored_entry_kept(
    store: Store, clock: ManualClock, site_id: str
) -> None:
    await save(store, clock, site_id, "Accepted", None)
    await save(store, clock, site_id, "Blocked", 1)  # another operator's save
    with pytest.raises(StaleChange, match="changed by someone else meanwhile"):
        await save(store, clock, site_id, "Expired", 1)
    entry = await stored(store, site_id)
    assert (entry.status, entry.version) == ("Blocked", 2)


async def test_a_change_from_a_version_of_an_entry_removed_meanwhile_is_refused(
    store: Store, clock: ManualClock, site_id: str
) -> None:
    await save(store, clock, site_id, "Accepted", None)
    async with store.transaction() as session:
        await localauth.remove_entry(session, OPERATOR, site_id=site_id, id_tag="TAG-1", now=clock.now())
    with pytest.raises(StaleChange):
        await save(store, clock, site_id, "Blocked", 1)
    async with store.read() as session:
        assert (await localauth.entries_of_site(session, site_id)) == []


async def test_a_removal_from_an_older_version_is_refused_and_the_entry_kept(
    store: Store, clock: ManualClock, site_id: str
) -> None:
    await save(store, clock, site_id, "Accepted", None)
    await save(store, clock, site_id, "Blocked", 1)
    async with store.transaction() as session:
        with pytest.raises(StaleChange):
            await localauth.remove_entry(
                session, OPERATOR, site_id=site_id, id_tag="TAG-1", now=clock.now(), expected_version=1
            )
    assert (await stored(store, site_id)).status == "Blocked"
