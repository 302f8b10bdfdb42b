"""Times as a reader reads them: in a time zone of the tz database, their own or their company's.

The store keeps instants in UTC; what a person reads and types is a wall-clock time in a zone. This module is the
one place that turns one into the other:
- `zone_named` validates a zone's name (an IANA name the tz database knows, e.g. `Europe/Brussels`);
- `LocalTime.text` shows an instant's wall-clock time, with its UTC offset on a day whose offset changes (a DST
  change), where a time without it could be read twice; `LocalTime.iso` writes it with its offset always (exports);
- `LocalTime.day_bounds` is a local calendar day as its [start, end) instants (23 or 25 hours at a DST change);
- `LocalTime.resolve` reads a wall-clock time someone typed. A time inside a spring-forward gap exists on no clock:
  it is refused, naming the last minute before the gap and the first after it. A time inside a fall-back fold
  happened twice: the first is taken unless the reader chose an offset, and the answer says so and names the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from chargenet.errors import InvalidInput

DEFAULT_ZONE = "Europe/Brussels"  # the specification's zone: the one partners' events are written in
MAX_NAME = 64


@lru_cache(maxsize=1)
def known_zones() -> frozenset[str]:
    """The zone names of the tz database (the `tzdata` package, or the system's), less the system's alias of its
    own zone (`localtime`) and the database's placeholders: a company's zone must mean the same on every machine."""
    return frozenset(available_timezones()) - {"localtime", "posixrules", "Factory"}


def zone_named(name: str, *, field: str = "time_zone") -> ZoneInfo:
    """The zone called `name`; `InvalidInput` naming the value when the tz database has no such zone."""
    cleaned = name.strip()
    if not cleaned:
        raise InvalidInput("a time zone name is required, e.g. Europe/Brussels", field=field)
    if len(cleaned) > MAX_NAME or cleaned not in known_zones():
        shown = cleaned if len(cleaned) <= MAX_NAME else cleaned[:MAX_NAME] + "…"
        raise InvalidInput(f"{shown!r} is not a time zone of the tz database, e.g. Europe/Brussels", field=field)
    return ZoneInfo(cleaned)


def _aware(instant: datetime) -> datetime:
    if instant.tzinfo is None:
        raise ValueError("instant must be timezone-aware")
    return instant


def _offset_text(offset: timedelta) -> str:
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


@dataclass(frozen=True, slots=True)
class WallTime:
    """One reading of a wall-clock time: the local time, its UTC offset and the instant they name."""

    local: datetime  # naive, as the reader's clock shows it
    offset: timedelta
    instant: datetime  # UTC

    @property
    def offset_text(self) -> str:
        return _offset_text(self.offset)

    def text(self, *, seconds: bool) -> str:
        return self.local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + " " + self.offset_text

    def field_value(self, *, seconds: bool | None = None) -> str:
        """As a `datetime-local` field holds it (no offset); seconds when asked, or (None) when there are some."""
        with_seconds = bool(self.local.second) if seconds is None else seconds
        return self.local.strftime("%Y-%m-%dT%H:%M:%S" if with_seconds else "%Y-%m-%dT%H:%M")


@dataclass(frozen=True, slots=True)
class Resolved:
    """A typed wall-clock time read as an instant; `other` is the second reading of a time that happened twice."""

    instant: datetime  # UTC
    chosen: WallTime
    other: WallTime | None = None
    note: str | None = None  # said to the reader when the time was ambiguous


class NonexistentLocalTime(InvalidInput):
    """A wall-clock time skipped by a spring-forward change: no instant has it. `before` and `after` are the
    nearest times that exist on either side of the gap."""

    def __init__(self, message: str, *, field: str | None, before: WallTime, after: WallTime) -> None:
        super().__init__(message, field=field)
        self.before = before
        self.after = after


@dataclass(frozen=True, slots=True)
class LocalTime:
    """A reader's zone, and everything the console does with times in it."""

    zone: ZoneInfo

    @classmethod
    def named(cls, name: str) -> LocalTime:
        return cls(zone_named(name))

    @property
    def name(self) -> str:
        return self.zone.key

    def local(self, instant: datetime) -> datetime:
        return _aware(instant).astimezone(self.zone)

    def offset_changes_on(self, day: date) -> bool:
        """Whether the zone's offset differs between the start and the end of `day` (a DST change that day)."""
        return _offset_changes(self, day)

    def text(self, instant: datetime, *, seconds: bool = True, millis: bool = False, date_part: bool = True) -> str:
        """`2026-07-01 14:03:22`, in the reader's zone; on the day of a DST change `2026-10-25 02:30:00 +01:00`,
        since that day's wall clock shows some times twice, or skips them."""
        local = self.local(instant)
        shown = local.strftime(("%Y-%m-%d " if date_part else "") + ("%H:%M:%S" if seconds or millis else "%H:%M")) + (
            f".{local.microsecond // 1000:03d}" if millis else ""
        )
        if self.offset_changes_on(local.date()):
            offset = local.utcoffset()
            assert offset is not None
            shown += " " + _offset_text(offset)
        return shown

    def iso(self, instant: datetime, *, timespec: str = "auto") -> str:
        """ISO 8601 in the reader's zone with its numeric offset: exports, and instants carried in links."""
        return self.local(instant).isoformat(timespec=timespec)

    def offset_text(self, instant: datetime) -> str:
        offset = self.local(instant).utcoffset()
        assert offset is not None
        return _offset_text(offset)

    def today(self, now: datetime) -> date:
        return self.local(now).date()

    def day_start(self, day: date) -> datetime:
        """The first instant of the local `day`, in UTC: midnight, or the end of a gap that swallowed midnight."""
        midnight = datetime.combine(day, time())
        try:
            return self.resolve(midnight).instant
        except NonexistentLocalTime as gap:
            return gap.after.instant

    def day_bounds(self, day: date) -> tuple[datetime, datetime]:
        """The local `day` as [start, end) in UTC; 23 or 25 hours long on the day of a DST change."""
        return self.day_start(day), self.day_start(day + timedelta(days=1))

    def days_up_to(self, today: date, days: int) -> list[tuple[date, datetime, datetime]]:
        """The last `days` local days up to `today`, oldest first, each with its [start, end) in UTC."""
        first = today - timedelta(days=days - 1)
        starts = [self.day_start(first + timedelta(days=n)) for n in range(days + 1)]
        return [(first + timedelta(days=n), starts[n], starts[n + 1]) for n in range(days)]

    def _wall(self, local: datetime, fold: int) -> WallTime:
        aware = local.replace(tzinfo=self.zone, fold=fold)
        offset = aware.utcoffset()
        assert offset is not None
        return WallTime(local, offset, aware.astimezone(UTC))

    def wall(self, instant: datetime) -> WallTime:
        """The instant as the reader's wall clock shows it, with its offset."""
        return self._at(_aware(instant))

    def _at(self, instant: datetime) -> WallTime:
        local = self.local(instant)
        offset = local.utcoffset()
        assert offset is not None
        return WallTime(local.replace(tzinfo=None, fold=0), offset, instant.astimezone(UTC))

    def _gap_end(self, lower: datetime, upper: datetime) -> datetime:
        """The instant the offset changed, between `lower` and `upper` (UTC), to the second."""
        low, high = lower, upper
        before = self.local(low).utcoffset()
        while high - low > timedelta(seconds=1):
            middle = low + (high - low) / 2
            middle = middle.replace(microsecond=0)
            if middle <= low:
                break
            if self.local(middle).utcoffset() == before:
                low = middle
            else:
                high = middle
        return high

    def resolve(self, local: datetime, *, offset: timedelta | None = None, field: str | None = None) -> Resolved:
        """The instant the wall-clock time `local` (naive) names in this zone.

        A time that happened twice (a fall-back fold) is the first of the two, unless `offset` names the other;
        the answer's `note` says which was taken and `other` is the one not taken. A time that never happened (a
        spring-forward gap) is `NonexistentLocalTime`, naming the nearest times before and after the gap."""
        if local.tzinfo is not None:
            raise ValueError("local must be a naive wall-clock time")
        first, second = self._wall(local, 0), self._wall(local, 1)
        if first.offset == second.offset:
            return Resolved(first.instant, first)
        # Offsets differ: either a gap (the round trip lands elsewhere) or a fold (both readings are real).
        if self._at(first.instant).local != local or self._at(second.instant).local != local:
            lower, upper = sorted((first.instant, second.instant))
            change = self._gap_end(lower, upper)
            unit = timedelta(seconds=1) if local.second or local.microsecond else timedelta(minutes=1)
            before, after = self._at(change - unit), self._at(change)
            seconds = unit < timedelta(minutes=1)
            message = (
                f"{local.strftime('%H:%M:%S' if seconds else '%H:%M')} does not exist on {local:%Y-%m-%d} in "
                f"{self.name}: the clocks went forward from {before.offset_text} to {after.offset_text}; "
                f"choose {before.local.strftime('%H:%M:%S' if seconds else '%H:%M')} or "
                f"{after.local.strftime('%H:%M:%S' if seconds else '%H:%M')}"
            )
            raise NonexistentLocalTime(message, field=field, before=before, after=after)
        chosen, other = (second, first) if offset is not None and offset == second.offset else (first, second)
        seconds = bool(local.second or local.microsecond)
        which = "first" if chosen is first else "second"
        note = (
            f"{local.strftime('%H:%M:%S' if seconds else '%H:%M')} happened twice on {local:%Y-%m-%d} in "
            f"{self.name}; read as the {which}, {chosen.text(seconds=seconds)}"
        )
        return Resolved(chosen.instant, chosen, other, note)

    def resolve_text(self, text: str, *, offset_text: str = "", field: str) -> Resolved | None:
        """A `datetime-local` field's value (`2026-10-25T02:30`, seconds optional) read in this zone; None when
        blank. A value carrying its own offset (`...+01:00`) is that instant. `offset_text` is the reader's choice
        between the two readings of a time that happened twice."""
        value = text.strip()
        if not value:
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise InvalidInput(f"{shown!r} is not a date and time such as 2026-07-01T14:30", field=field) from None
        if parsed.tzinfo is not None:
            return Resolved(parsed.astimezone(UTC), self._at(parsed))
        chosen: timedelta | None = None
        if offset_text.strip():
            try:
                chosen = datetime.fromisoformat(f"2000-01-01T00:00{offset_text.strip()}").utcoffset()
            except ValueError:
                raise InvalidInput(
                    f"{offset_text.strip()[:10]!r} is not an offset such as +01:00", field=field
                ) from None
        return self.resolve(parsed, offset=chosen, field=field)


@lru_cache(maxsize=4096)
def _offset_changes(reader: LocalTime, day: date) -> bool:
    # Asked for every time a page shows; a page shows a handful of days.
    start, end = reader.day_bounds(day)
    return reader.local(start).utcoffset() != reader.local(end - timedelta(microseconds=1)).utcoffset()


def reader_zone(own: str | None, company: str | None) -> LocalTime:
    """The zone a reader reads in: their own if they chose one, else their company's, else the default. A name
    the tz database no longer knows (an old row after a tzdata update) falls back the same way, never fails."""
    for name in (own, company, DEFAULT_ZONE):
        if name and name in known_zones():
            return LocalTime(ZoneInfo(name))
    return LocalTime(ZoneInfo(DEFAULT_ZONE))
