"""Reading forms and list addresses the same way on every page that edits configuration: numbers and versions
from form fields, keyset pages and filters from GET parameters, and a service's `InvalidInput` turned into the
error of the form field it is about."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

from starlette.requests import Request

from chargenet.domain.local_time import LocalTime, NonexistentLocalTime, WallTime
from chargenet.errors import InvalidInput
from chargenet.services.pages import PageRequest, UnknownCursor, numeric_key


def version_of(form: Mapping[str, str]) -> int | None:
    """The version a form was rendered from (None when it has none, e.g. a hand-made request)."""
    try:
        return int(form["version"])
    except (KeyError, ValueError):
        return None


def page_of(
    request: Request, size: int, parameter: str = "after", *, key: Callable[[str], bool] | None = None
) -> tuple[PageRequest, str | None]:
    """The keyset page a list address asks for; a cursor we never gave out (an edited address), or one whose key
    is not what the list's keys look like (`key`), is the first page rather than an error page."""
    after = request.query_params.get(parameter) or None
    try:
        wanted = PageRequest.of(size, after)
    except (InvalidInput, UnknownCursor):
        return PageRequest(size), None
    if key is not None and wanted.after is not None and not key(wanted.after):
        return PageRequest(size), None
    return wanted, after


def numbered(key: str) -> bool:
    """Whether a page's key is a row number, as the keys of lists ordered by id are (`pages.numeric_key`)."""
    try:
        numeric_key(key)
    except UnknownCursor:
        return False
    return True


def address(path: str, **parameters: str | None) -> str:
    """`path` with the given, non-empty GET parameters: a bookmarkable view of a filtered, paged list."""
    given = {key: value for key, value in parameters.items() if value}
    return f"{path}?{urlencode(given)}" if given else path


def text(form: Mapping[str, str], name: str) -> str:
    return form.get(name, "").strip()


def optional_text(form: Mapping[str, str], name: str) -> str | None:
    return text(form, name) or None


def whole_number(form: Mapping[str, str], name: str, *, low: int, high: int) -> int | None:
    """A whole number in [low, high] from field `name`, None when left blank; InvalidInput naming the field."""
    value = text(form, name)
    if not value:
        return None
    if not value.lstrip("-").isdigit():
        raise InvalidInput(f"{value!r} is not a whole number", field=name)
    number = int(value)
    if not low <= number <= high:
        raise InvalidInput(f"must be {low} to {high}, got {number}", field=name)
    return number


def decimal(form: Mapping[str, str], name: str, *, high: float = 1e9) -> float | None:
    """A number (decimals allowed) from field `name`, None when left blank; InvalidInput naming the field."""
    value = text(form, name)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not a number", field=name) from None
    if number != number or not -high <= number <= high:  # NaN, or beyond what any setting takes
        raise InvalidInput(f"{value!r} is not a usable number", field=name)
    return number


def local_instant(form: Mapping[str, str], name: str, reads_in: LocalTime) -> datetime | None:
    """A date and time from a `datetime-local` field, read in the reader's zone (UTC); None when blank. A time
    that happened twice is the first of the two; one that never happened is `InvalidInput` naming the choices."""
    resolved = reads_in.resolve_text(form.get(name, ""), offset_text=form.get(offset_field(name), ""), field=name)
    return resolved.instant if resolved is not None else None


def offset_field(name: str) -> str:
    """The hidden companion of a time filter `name`: which of two readings of a time that happened twice."""
    return f"{name}_offset"


@dataclass(frozen=True, slots=True)
class TimeNote:
    """What a list page says about a time filter that happened twice (a notice: which reading it took, a link to
    the other) or never (an alert: the nearest times that exist, a link to each)."""

    text: str
    choices: tuple[tuple[str, str], ...]  # (label, address)
    alert: bool


@dataclass
class TimeFilters:
    """The time filters of a list page read in the reader's zone: `instants` by name; `shown`, the page's GET
    parameters as the form shows them again (wall-clock times, the chosen reading in its hidden field)."""

    instants: dict[str, datetime | None] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    notes: list[TimeNote] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def time_filters(typed: Mapping[str, str], names: Sequence[str], reads_in: LocalTime, path: str) -> TimeFilters:
    """Read each time filter of `names` from `typed` (a page's GET parameters, with `{name}_offset` beside each).
    A value carrying an offset (a link from another page) is that instant, shown as the reader's wall-clock time."""
    found = TimeFilters(shown=dict(typed))
    for name in names:
        try:
            resolved = reads_in.resolve_text(
                typed.get(name, ""), offset_text=typed.get(offset_field(name), ""), field=name
            )
        except NonexistentLocalTime as gap:
            found.instants[name] = None
            # The field says it short; the note below the form names the gap and links the times either side.
            found.errors[name] = f"{gap.detail.split(' does not exist', 1)[0]} does not exist that day; choose below"
            choices = tuple(
                (f"Use {wall.text(seconds=bool(wall.local.second))}", _with(path, typed, name, wall, keep=False))
                for wall in (gap.before, gap.after)
            )
            found.notes.append(TimeNote(gap.detail[:1].upper() + gap.detail[1:] + ".", choices, alert=True))
            continue
        except InvalidInput as error:  # not a date and time at all: the field's error, kept as typed
            found.instants[name] = None
            found.errors[name] = error.detail
            continue
        if resolved is None:
            found.instants[name] = None
            found.shown[offset_field(name)] = ""
            continue
        found.instants[name] = resolved.instant
        found.shown[name] = resolved.chosen.field_value()
        found.shown[offset_field(name)] = resolved.chosen.offset_text if resolved.other else ""
        if resolved.other is not None and resolved.note is not None:
            other = resolved.other
            link = (f"Use the other, {other.text(seconds=bool(other.local.second))}", _with(path, typed, name, other))
            found.notes.append(TimeNote(resolved.note[:1].upper() + resolved.note[1:] + ".", (link,), alert=False))
    return found


def _with(path: str, typed: Mapping[str, str], name: str, wall: WallTime, *, keep: bool = True) -> str:
    changed = {**typed, name: wall.field_value(), offset_field(name): wall.offset_text if keep else ""}
    changed.pop("after", None)
    return address(path, **changed)


def field_errors(error: InvalidInput, fields: Mapping[str, str], fallback: str) -> dict[str, str]:
    """The form's error for a service's `InvalidInput`: on the form field its `field` names (through `fields`,
    from the service's names to the form's), else on `fallback`."""
    name = error.field or ""
    return {fields.get(name, name if name in fields.values() else fallback): error.detail}
