"""Reading forms and list addresses the same way on every page that edits configuration: numbers and versions
from form fields, keyset pages and filters from GET parameters, and a service's `InvalidInput` turned into the
error of the form field it is about."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from urllib.parse import urlencode

from starlette.requests import Request

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


def utc_instant(form: Mapping[str, str], name: str) -> datetime | None:
    """A date and time from a `datetime-local` field, read as UTC (the console shows every time in UTC)."""
    value = text(form, name)
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not a date and time such as 2027-01-31T18:00", field=name) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def field_errors(error: InvalidInput, fields: Mapping[str, str], fallback: str) -> dict[str, str]:
    """The form's error for a service's `InvalidInput`: on the form field its `field` names (through `fields`,
    from the service's names to the form's), else on `fallback`."""
    name = error.field or ""
    return {fields.get(name, name if name in fields.values() else fallback): error.detail}
