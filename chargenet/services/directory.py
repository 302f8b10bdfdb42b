"""The charge point list served from memory: this process's copy of every charge point with its connectors' last
status, its station's link and its meters, kept current by a reader of the store.

`GET /charge-points` is what partners poll. Read from the store, a page of 100 cost half a millisecond of the
event loop's time on SQLite, and on PostgreSQL a planned statement on a server sharing the machine; from this copy
it costs the page's own selection.

What the copy promises, on both backends and whichever process wrote:
- **Its structure is never behind.** Which charge points exist, on which site of which company, with which
  connectors and meters, is versioned by the store itself (`directory_version`, bumped by triggers in the
  transaction that changes it). Every page first reads that one row; when it has moved, the page is read from the
  store as before and the copy is read again in the background, at once but at most once a `refresh_every`
  (stations created one by one by a script cost one whole read a period, not one each). A station created, moved
  or deleted, by the API, the command line or another process, shows in the very next page.
- **Never a copy the reader could not keep.** A page is read from the store while the copy has not been read
  for `stale_after` (2 s): the store away for a moment, the reader behind.
- **What changes by the second follows within `refresh_every` (0.5 s).** A connector's status, a station's
  connection and heartbeat, a meter's reading and open session are read again twice a second (what changed since
  the last read, as the console's live table reads them: `services.connector_status.read_changes`), well inside
  the 2 s that decisions.md allows for another process's changes. This process's own edge writes them through the
  same store, so its changes take the same path. Statuses are found by their events' sequence, so none is missed;
  a heartbeat or a new error code is found by its instant, re-reading 2 s behind the newest seen, so one committed
  later than that after its instant (a store overloaded for seconds, another process's clock ahead) is found by
  the sweep: each follow read also reads a few charge points again whole, in the store's order and round again,
  sized so that every charge point is read again at least once a `whole_every` (a minute).

The copy is read whole only at the start and when its structure moves. A whole read every minute, as the sweep once
was, took 150 ms of rows for 10,000 charge points with nothing else running and over a second on a loaded machine,
in a thread holding the interpreter's lock against the event loop half the time, with young collections of the rows
it made in between: every page in flight waited, and the worst round of `bench_auth` was that minute's. The sweep's
part, 84 charge points a read at 10,000, is a page's work.

Memory: 0.75 KiB a charge point with two connectors (7.6 MB for 10,000, by tracemalloc), besides the views the list
keeps anyway (`charge_points.VIEWS_CACHED`).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import logging
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

from sqlalchemy import Connection, select

from chargenet.auth.permissions import Reach
from chargenet.clock import Clock
from chargenet.domain.live import ConnectorState, StationLink
from chargenet.services import connector_status
from chargenet.services.charge_points import (
    ChargePointRows,
    ConnectorRow,
    Kept,
    MeterRow,
    meter_row,
    meters_with_state,
    read_charge_points_after,
)
from chargenet.services.connector_status import Marks
from chargenet.store.db import Store
from chargenet.store.models import DirectoryVersion, Meter, Site
from chargenet.waiting import first_of, sleep_until

log = logging.getLogger(__name__)

REFRESH_EVERY = 0.5  # seconds between reads of what changed by the second
OVERLAP = timedelta(seconds=2)  # re-read behind the newest instant seen: a row stamped earlier may commit later
IDLE_AFTER = 60.0  # seconds without a page after which the copy is let go, and read again when asked for
WHOLE_READ_PART = 1000  # charge points a part of the whole read (about 15 ms of the event loop's time each)
# Every charge point read again at least this often (seconds) while asked, by the sweep: what the follow reads cannot
# see (a heartbeat or an error code committed more than OVERLAP after its instant, a clock of another process ahead)
# is shown within it.
WHOLE_EVERY = 60.0
# At most this many charge points a sweep's part, however late a follow read comes: on SQLite it runs on the event
# loop's thread. Follow reads slowed past the period stretch the sweep's round rather than the loop's stalls.
SWEEP_PART_MAX = 500
STALE_AFTER = 2.0  # seconds since the last successful read past which pages are read from the store (decisions.md)

_VERSION = select(DirectoryVersion.version).where(DirectoryVersion.id == 1)
_SITES = select(Site.id, Site.company_id)
_METERS = meters_with_state().order_by(Meter.created_at, Meter.id)


@dataclass(slots=True)
class DirectoryIndex:
    """Every charge point of the store at one version, in the store's order of ids overall, by company and by site.
    Sans-IO: the reader fills it (`load`) and keeps its changing parts current (`absorb`); a page is selected from
    it. The order is the store's, as it read them, not Python's: PostgreSQL orders text by the database's
    collation, which need not be code points (under en_US, "ST-10" comes before "ST-1-2")."""

    version: int
    points: dict[str, ChargePointRows] = field(default_factory=dict)
    _rank: dict[str, int] = field(default_factory=dict)  # each id's place in the store's order
    _everything: list[str] = field(default_factory=list)
    _by_company: dict[str, list[str]] = field(default_factory=dict)
    _by_site: dict[str, list[str]] = field(default_factory=dict)
    _site_company: dict[str, str] = field(default_factory=dict)
    _by_station: dict[str, list[ChargePointRows]] = field(default_factory=dict)
    _metered: set[str] = field(default_factory=set)  # the charge points with meters

    @classmethod
    def load(cls, version: int, points: Iterable[ChargePointRows], site_company: Mapping[str, str]) -> DirectoryIndex:
        """The index of a store read in one snapshot: every charge point with its rows, in the store's order of
        ids, and each site's company."""
        index = cls(version)
        for point in points:
            company_id = site_company.get(point.site_id)
            if company_id is None:
                continue  # its site is gone (a snapshot cannot show that, but a store read twice could)
            index.points[point.id] = point
            index._rank[point.id] = len(index._rank)
            index._everything.append(point.id)
            index._by_company.setdefault(company_id, []).append(point.id)
            index._by_site.setdefault(point.site_id, []).append(point.id)
            index._site_company[point.site_id] = company_id
            index._by_station.setdefault(point.station_id, []).append(point)
            if point.meters:
                index._metered.add(point.id)
        return index

    def absorb(self, connectors: Iterable[ConnectorState], links: Iterable[StationLink]) -> None:
        """What changed by the second: connectors' statuses and stations' links. A connector or station this
        version does not know is left for the reload its version will bring."""
        for connector in connectors:
            point = self.points.get(connector.charge_point_id)
            if point is None:
                continue
            row = _connector_row(connector)
            point.connectors = [row if c[0] == row[0] else c for c in point.connectors]
        for link in links:
            for point in self._by_station.get(link.station_id, ()):
                point.present = True
                point.last_heartbeat = link.last_heartbeat_at
                point.ocpp_version = link.ocpp_version or point.ocpp_version

    def renew(self, points: Iterable[ChargePointRows]) -> None:
        """Charge points read again whole (the sweep's part): their links and connectors as read, whatever the
        follow reads found or missed. Meters are `take_meters`'s, read with every follow."""
        for read in points:
            point = self.points.get(read.id)
            if point is None:
                continue
            point.present = read.present
            point.last_heartbeat = read.last_heartbeat
            point.ocpp_version = read.ocpp_version
            if read.connectors != point.connectors:
                point.connectors = read.connectors

    def take_meters(self, meters: Iterable[tuple[str, str, MeterRow]]) -> None:
        """Every meter with its last reading and open session, replacing those known. Only charge points with
        meters, before or now, are visited: most have none, and this runs twice a second."""
        measured: dict[str, list[MeterRow]] = {}
        for _station_id, charge_point_id, row in meters:
            if charge_point_id in self.points:
                measured.setdefault(charge_point_id, []).append(row)
        for charge_point_id in self._metered - measured.keys():
            self.points[charge_point_id].meters = []
        for charge_point_id, rows in measured.items():
            point = self.points[charge_point_id]
            if rows != point.meters:
                point.meters = rows
        self._metered = set(measured)

    def page(self, reach: Reach, site_id: str | None, after: str | None, fetch: int) -> list[ChargePointRows] | None:
        """Up to `fetch` charge points `reach` covers, of `site_id` when given, in the store's order after `after`:
        what `charge_points.list_charge_points` selects from the store. None for a cursor after an id this
        version does not hold (one deleted since): only the store knows where it sorts."""
        start: int | None = None
        if after is not None:
            start = self._rank.get(after)
            if start is None:
                return None
        lists: Sequence[list[str]]
        if site_id is not None:
            company_id = self._site_company.get(site_id)
            covered = company_id is not None and reach.covers_site(company_id, site_id)
            lists = [self._by_site[site_id]] if covered else []
        elif reach.everything:
            lists = [self._everything]
        else:
            lists = [self._by_company[c] for c in sorted(reach.companies) if c in self._by_company]
            lists += [
                self._by_site[s]
                for s in sorted(reach.sites)
                if s in self._by_site and self._site_company[s] not in reach.companies
            ]
        rank = self._rank.__getitem__
        tails = [islice(ids, bisect_right(ids, start, key=rank) if start is not None else 0, None) for ids in lists]
        merged: Iterator[str] = tails[0] if len(tails) == 1 else heapq.merge(*tails, key=rank)
        return [self.points[charge_point_id] for charge_point_id in islice(merged, fetch)]

    def one(self, reach: Reach, charge_point_id: str) -> ChargePointRows | None:
        """The charge point `charge_point_id` when `reach` covers its site; None when it does not, or when this
        version holds no such charge point (the copy's structure is the store's, so it does not exist)."""
        point = self.points.get(charge_point_id)
        if point is None or not reach.covers_site(self._site_company[point.site_id], point.site_id):
            return None
        return point


def _connector_row(connector: ConnectorState) -> ConnectorRow:
    return (connector.connector_id, connector.status, connector.error_code, connector.info, connector.status_at)


class ChargePointDirectory:
    """A worker (`run`) that keeps the `DirectoryIndex` of the store current, and the pages served from it."""

    name = "charge-point-directory"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        refresh_every: float = REFRESH_EVERY,
        overlap: timedelta = OVERLAP,
        stale_after: float = STALE_AFTER,
        idle_after: float = IDLE_AFTER,
        whole_every: float = WHOLE_EVERY,
        counted: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.refresh_every = refresh_every
        self.overlap = overlap
        self.index: DirectoryIndex | None = None
        self._marks: connector_status.Marks | None = None
        self.stale_after = timedelta(seconds=stale_after)
        self.idle_after = timedelta(seconds=idle_after)
        self.whole_every = timedelta(seconds=whole_every)
        self._swept_at = clock.now()  # when the last read (whole, or a follow with its part of the sweep) began
        self._swept_after: str | None = None  # the sweep's place: the last charge point it read, None to begin again
        self._read_at = clock.now()  # when the last successful read began
        self._asked_at = datetime.min.replace(tzinfo=UTC)  # when a page was last asked for
        self._behind = asyncio.Event()  # a page met a newer version than the index's: reload now
        self.reads = 0  # successful reads of the store, whole or of what changed
        self.whole_reads = 0
        self._counted = counted  # told `memory` or `store` for each page (the process's metrics)
        self.served = 0  # pages served from memory
        self._version_reading = False  # a read of the store's version is in flight
        self._version_next: asyncio.Future[int | None] | None = None  # the read the requests arriving meanwhile share
        self._version_task: asyncio.Task[None] | None = None  # that read, kept referenced while it runs
        self.missed = 0  # pages left to the store: the copy was behind the store's structure, or not loaded yet

    async def run(self, stopping: asyncio.Event) -> None:
        # A process that starts is about to be asked: the copy is read at once, and kept for IDLE_AFTER unasked.
        self._asked_at = self.clock.now()
        while not stopping.is_set():
            if self.clock.now() - self._asked_at > self.idle_after:
                # Nobody lists charge points from this process: no reads (a flood of statuses costs the reader most)
                # and no copy, until a page asks for one again.
                self.index = None
                self._behind.clear()
                await first_of(self._behind.wait(), stopping.wait())
                continue
            read_at = self.clock.now()
            self._behind.clear()
            reloaded = failed = False
            try:
                reloaded = await self.refresh()
            except Exception:
                # The store may be away for a moment: pages are read from it meanwhile, and the next read catches up
                # (a period later, however many pages ask meanwhile).
                log.exception("the charge point directory could not read the store")
                failed = True
            due = read_at + timedelta(seconds=self.refresh_every)
            waits = [sleep_until(self.clock, due), stopping.wait()]
            if not reloaded and not failed:
                # A page that met a newer structure has it read at once; but at most one whole read a period, so
                # that stations created one after the other (a script, another process) cost one read a period
                # rather than one each, their pages read from the store meanwhile.
                waits.append(self._behind.wait())
            await first_of(*waits)

    async def refresh(self) -> bool:
        """One read: the whole store when its directory version moved (or at the start), else what changed by the
        second since the last read. True for a whole read."""
        started = self.clock.now()
        index = self.index
        if index is not None:
            assert self._marks is not None
            fetch = sweep_part(len(index.points), started - self._swept_at, self.whole_every)
            # One call for the whole follow read (on SQLite pysqlite on this thread, a few milliseconds): as a unit
            # of the ORM session each of its statements was a round trip through the store's thread and the busy
            # event loop, and under 50 clients' pages the read took 1-5 s, past `stale_after`.
            followed = await self.store.read_at_once(
                functools.partial(
                    _follow,
                    version=index.version,
                    marks=self._marks,
                    now=self.clock.now(),
                    overlap=self.overlap,
                    sweep=(self._swept_after, fetch),
                )
            )
            if followed is not None:
                changes, meters, swept = followed
                index.absorb(changes.connectors, changes.links)
                index.take_meters(meters)
                index.renew(swept)
                if fetch:
                    self._swept_after = swept[-1].id if len(swept) == fetch else None
                    self._swept_at = started
                self._marks = changes.marks
                self._read_at = started
                self.reads += 1
                return False
        # 150 ms of rows for 10,000 charge points: in a thread on SQLite, in parts on PostgreSQL.
        self.index, self._marks = await self.store.read_in_parts(functools.partial(_whole, now=self.clock.now()))
        self._read_at = self._swept_at = started
        self._swept_after = None
        self.reads += 1
        self.whole_reads += 1
        return True

    async def page(
        self, reach: Reach, site_id: str | None, after: str | None, fetch: int
    ) -> list[ChargePointRows] | None:
        """The page from memory, or None when the store's structure is newer than the copy (read the store)."""
        index = await self._current()
        if index is None:
            return None
        found = index.page(reach, site_id, after, fetch)
        if found is None:
            self._missed(behind=False)
            return None
        self._served()
        return found

    async def one(self, reach: Reach, charge_point_id: str) -> Kept | None:
        """The charge point from memory (`Kept.point` None when `reach` does not cover it or it does not exist), or
        None when the store's structure is newer than the copy (read the store)."""
        index = await self._current()
        if index is None:
            return None
        self._served()
        return Kept(index.one(reach, charge_point_id))

    async def _current(self) -> DirectoryIndex | None:
        """The copy, when its structure is the store's as of now; else None, counted as a miss."""
        self._asked_at = self.clock.now()
        if self.index is None or self._asked_at - self._read_at > self.stale_after:
            # Not read yet (or let go while nobody asked), or not for too long (the store has been away): the store
            # answers, not a stale copy.
            self._missed()
            return None
        try:
            version = await self._store_version()
        except Exception:
            # The store answers the page, or says why it cannot.
            log.warning("the charge point directory could not read the store's version", exc_info=True)
            self._missed(behind=False)
            return None
        index = self.index  # the worker may have read it again meanwhile
        if index is None or version != index.version:
            self._missed()
            return None
        return index

    async def _store_version(self) -> int | None:
        """The store's directory version, read after this call began. Pages that arrive while a read is in flight
        share the next one, which begins as that one ends: on PostgreSQL each read is a pooled connection and a
        round trip, and one a page, 50 pages at a time, waited 32-39 ms (median) and up to 370 ms under load. On
        SQLite a read is one synchronous call, which no other page can overlap."""
        if self._version_reading:
            following = self._version_next
            if following is None:
                following = self._version_next = asyncio.get_running_loop().create_future()
            return await asyncio.shield(following)  # a page cancelled meanwhile leaves the read to the others
        self._version_reading = True
        try:
            return await self.store.read_value(_VERSION)
        finally:
            self._version_reading = False
            self._read_version_next()

    def _read_version_next(self) -> None:
        """Begin the read that the pages which arrived during the last one wait for, if any did."""
        following, self._version_next = self._version_next, None
        if following is None:
            return
        self._version_reading = True

        async def read() -> None:
            try:
                following.set_result(await self.store.read_value(_VERSION))
            except Exception as exc:
                following.set_exception(exc)
            except BaseException:
                following.cancel()  # the copy is closing: its waiting pages end with it rather than hang
                raise
            finally:
                self._version_reading = False
                self._read_version_next()

        following.add_done_callback(_retrieved)
        self._version_task = asyncio.create_task(read())

    def _served(self) -> None:
        self.served += 1
        if self._counted is not None:
            self._counted("memory")

    def _missed(self, *, behind: bool = True) -> None:
        self.missed += 1
        if behind:
            self._behind.set()  # read the store again now
        if self._counted is not None:
            self._counted("store")


def _retrieved(future: asyncio.Future[int | None]) -> None:
    """Mark a shared read's failure as seen, should every page waiting for it have been cancelled."""
    if not future.cancelled():
        future.exception()


def _whole(connection: Connection, *, now: datetime) -> Generator[None, None, tuple[DirectoryIndex, Marks]]:
    """The index of the whole store and the marks to follow it from, in one snapshot, WHOLE_READ_PART charge
    points at a time."""
    version = int(connection.execute(_VERSION).scalar_one())
    marks = connector_status.read_marks(connection, now=now)
    site_company = {site_id: company_id for site_id, company_id in connection.execute(_SITES)}
    points: list[ChargePointRows] = []
    after: str | None = None
    while True:
        part = read_charge_points_after(connection, after, WHOLE_READ_PART)
        points += part
        if len(part) < WHOLE_READ_PART:
            return DirectoryIndex.load(version, points, site_company), marks
        after = part[-1].id
        yield


def sweep_part(points: int, since_last: timedelta, whole_every: timedelta) -> int:
    """How many charge points a follow read reads again whole, `since_last` after the sweep's last part: its share of
    `points` for that time, rounded up, so that the sweep goes round them all within `whole_every` whatever the
    reads' pace; but at most SWEEP_PART_MAX (past 60,000 charge points at a read each 0.5 s, a round takes longer)."""
    if points <= 0 or since_last <= timedelta(0):
        return 0
    share = -(-points * since_last // whole_every) if since_last < whole_every else points
    return min(share, SWEEP_PART_MAX)


def _follow(
    connection: Connection,
    *,
    version: int,
    marks: Marks,
    now: datetime,
    overlap: timedelta,
    sweep: tuple[str | None, int],
) -> tuple[connector_status.Read, list[tuple[str, str, MeterRow]], list[ChargePointRows]] | None:
    """What changed by the second since `marks`, every meter's row, and the sweep's part (up to `sweep[1]` charge
    points after `sweep[0]`, whole), in one snapshot; None when the store's directory version is no longer `version`
    (the copy is read whole instead)."""
    # The version first: whatever the reads after it find is at least as new as it says.
    if int(connection.execute(_VERSION).scalar_one()) != version:
        return None
    changes = connector_status.read_changes_on(connection, marks, now=now, overlap=overlap)
    after, fetch = sweep
    swept = read_charge_points_after(connection, after, fetch) if fetch else []
    return changes, _meter_rows(connection.execute(_METERS)), swept


def _meter_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[str, str, MeterRow]]:
    """(station, charge point, its row) of each meter `_METERS` read."""
    return [(str(row[0]), str(row[1]), meter_row(*row[3:])) for row in rows]
