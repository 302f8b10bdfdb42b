"""Meters: the list (per site, paged, filterable), adding one, editing its idTag, poll interval and thresholds,
enabling and disabling it, each with its last reading, the session detector's state, its poll health (timeouts,
CRC errors, last answer) and its latest sessions; and the buses, one row each with who polls it and its health.

Every change goes through `chargenet.services.meters`, which checks the operator's role and writes the audit
record; the edit and enable/disable forms carry the version they were rendered from, and a change made
meanwhile by someone else is a 409 with the form kept as typed.
"""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import (
    address,
    decimal,
    field_errors,
    optional_text,
    page_of,
    text,
    version_of,
    whole_number,
)
from chargenet.console.pages import Signed, console_of, page, redirect, render, submitted
from chargenet.console.views.sessions import kwh
from chargenet.domain.operators import Role
from chargenet.errors import Conflict, InvalidInput, NotFound, StaleChange
from chargenet.meters.spec import ThresholdSettings
from chargenet.services import meters, sites
from chargenet.services import sessions as session_service

METERS_PER_PAGE = 50
BUSES_PER_PAGE = 50
METER_SESSIONS = 10  # on a meter's page; the sessions list has the rest
STATES = (("", "Enabled or disabled"), ("enabled", "Enabled"), ("disabled", "Disabled"))
TRANSPORTS = (("tcp", "Modbus TCP (host and port)"), ("rtu", "Modbus RTU (serial line)"))
PARITIES = (("N", "None (N)"), ("E", "Even (E)"), ("O", "Odd (O)"))
STOPBITS = (("1", "1"), ("2", "2"))
THRESHOLDS = (
    ("start_current", "Start current (A)", "3"),
    ("stop_current", "Stop current (A)", "1"),
    ("start_power", "Start power (W)", "500"),
    ("stop_power", "Stop power (W)", "200"),
    ("stop_grace", "Stop grace (s)", "180"),
    ("outage_close", "Close after an outage of (s)", "900"),
)
# The services' names for what they refuse, and the form fields they are.
FIELDS = {
    "site": "site_id",
    "station": "station_id",
    "charge-point": "charge_point_id",
    "connector": "connector_id",
    "profile": "profile",
    "unit": "unit_id",
    "transport": "transport",
    "tcp": "tcp",
    "rtu": "rtu",
    "baud": "baud",
    "parity": "parity",
    "stopbits": "stopbits",
    "id-tag": "id_tag",
    "poll-interval": "poll_interval",
    "start-current": "start_current",
    "stop-current": "stop_current",
    "start-power": "start_power",
    "stop-power": "stop_power",
    "stop-grace": "stop_grace",
    "outage-close": "outage_close",
}
NEW_FIELDS = (
    "site_id",
    "station_id",
    "charge_point_id",
    "connector_id",
    "profile",
    "unit_id",
    "transport",
    "tcp",
    "rtu",
    "baud",
    "parity",
    "stopbits",
    "id_tag",
    "poll_interval",
    *(name for name, _, _ in THRESHOLDS),
)


def _filters(values: Any) -> dict[str, str]:
    state = values.get("state", "")
    return {
        "site": values.get("site", "").strip(),
        "station": values.get("station", "").strip(),
        "state": state if state in ("enabled", "disabled") else "",
    }


async def _list(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    filters = _filters(request.query_params)
    wanted, after = page_of(request, METERS_PER_PAGE)
    async with console.reading() as session:
        listed = await meters.list_meters(
            session,
            signed.caller,
            wanted,
            site_id=filters["site"] or None,
            station_id=filters["station"] or None,
            enabled={"enabled": True, "disabled": False}.get(filters["state"]),
        )
        health = await meters.poll_health(session, [meter.id for meter in listed.items])
        site_names = await sites.site_names(session, signed.caller, [meter.site_id for meter in listed.items])
    path = console.url("/meters")
    values = {
        "items": listed.items,
        "health": health,
        "site_names": site_names,
        "filters": filters,
        "states": STATES,
        "after": after,
        "first_url": address(path, **filters),
        "next_url": address(path, **filters, after=listed.next) if listed.next else None,
        "new_url": address(console.url("/meters/new"), site=filters["site"], station=filters["station"]),
        "bus_label": meters.bus_label,
    }
    return render(request, "meters.html", values, signed=signed, active="meters")


async def _buses(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    wanted, after = page_of(request, BUSES_PER_PAGE)
    async with console.reading() as session:
        listed = await meters.list_buses(session, signed.caller, wanted)
    path = console.url("/meters/buses")
    values = {
        "items": listed.items,
        "after": after,
        "first_url": path,
        "next_url": address(path, after=listed.next) if listed.next else None,
    }
    return render(request, "buses.html", values, signed=signed, active="meters")


# --- a new meter -------------------------------------------------------------------------------------------


def _new_page(
    request: Request, signed: Signed, form: dict[str, str], *, status_code: int = 200, **context: Any
) -> Response:
    values = {
        "form": form,
        "profiles": [(name, name) for name in meters.profile_names()],
        "transports": TRANSPORTS,
        "parities": PARITIES,
        "stopbits": STOPBITS,
        "thresholds": THRESHOLDS,
        **context,
    }
    return render(request, "meter_new.html", values, status_code=status_code, signed=signed, active="meters")


async def _new(request: Request, signed: Signed) -> Response:
    form = dict.fromkeys(NEW_FIELDS, "")
    form.update(
        site_id=request.query_params.get("site", "").strip(),
        station_id=request.query_params.get("station", "").strip(),
        transport="tcp",
        parity="N",
        stopbits="1",
        baud="9600",
    )
    return _new_page(request, signed, form)


async def _create(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    submitted_form = await submitted(request)
    form = {name: submitted_form.get(name, "") for name in NEW_FIELDS}
    try:
        site_id, station_id = text(form, "site_id"), text(form, "station_id")
        for name, value in (("site_id", site_id), ("station_id", station_id), ("profile", form["profile"])):
            if not value:
                raise InvalidInput("is required", field=name)
        unit_id = whole_number(form, "unit_id", low=1, high=247)
        if unit_id is None:
            raise InvalidInput("is required", field="unit_id")
        transport: dict[str, Any]
        if form["transport"] == "rtu":
            transport = {
                "rtu": text(form, "rtu"),
                "baud": whole_number(form, "baud", low=1, high=10_000_000),
                "parity": form["parity"] or None,
                "stopbits": whole_number(form, "stopbits", low=1, high=2),
            }
        elif form["transport"] == "tcp":
            if not text(form, "tcp"):
                raise InvalidInput("is required for Modbus TCP", field="tcp")
            transport = {"tcp": text(form, "tcp")}
        else:
            raise InvalidInput("choose TCP or RTU", field="transport")
        async with console.transaction() as session:
            created = await meters.create_meter(
                session,
                signed.caller,
                site_id=site_id,
                station_id=station_id,
                charge_point_id=optional_text(form, "charge_point_id"),
                connector_id=whole_number(form, "connector_id", low=1, high=10_000),
                profile=form["profile"],
                unit_id=unit_id,
                now=console.clock.now(),
                id_tag=optional_text(form, "id_tag"),
                poll_interval=decimal(form, "poll_interval"),
                **transport,
                thresholds=_thresholds(form),
            )
    except InvalidInput as error:
        return _new_page(request, signed, form, status_code=422, errors=field_errors(error, FIELDS, "station_id"))
    except NotFound as error:  # the site, station or connector is not this company's, or does not exist
        field = {"site": "site_id", "connector": "connector_id"}.get(error.kind, "station_id")
        errors = {field: f"no {error.kind} {error.identifier!r} in this company"}
        return _new_page(request, signed, form, status_code=422, errors=errors)
    except Conflict as error:  # the connector is measured already, or the bus address is taken
        field = "unit_id" if error.message.startswith("unit") else "connector_id"
        return _new_page(request, signed, form, status_code=422, errors={field: error.message})
    return redirect(console.url(f"/meters/{created.id}"))


def _thresholds(form: dict[str, str]) -> ThresholdSettings:
    """The thresholds typed in a meter's form, None for each field left blank."""
    return ThresholdSettings(**{name: decimal(form, name) for name, _, _ in THRESHOLDS})


# --- one meter ---------------------------------------------------------------------------------------------


def _edit_form(meter: meters.MeterView) -> dict[str, str]:
    return {
        "id_tag": meter.id_tag,
        "poll_interval": f"{meter.poll_interval:g}",
        **{name: f"{getattr(meter, name):g}" for name, _, _ in THRESHOLDS},
    }


async def _meter_page(
    request: Request, signed: Signed, meter_id: str, *, status_code: int = 200, **context: Any
) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        meter = await meters.get_meter(session, signed.caller, meter_id)
        health = (await meters.poll_health(session, [meter.id])).get(meter.id)
        recent = await session_service.sessions_of_meter(session, signed.caller, meter.id, limit=METER_SESSIONS)
        site_names = await sites.site_names(session, signed.caller, [meter.site_id])
    values = {
        "site_name": site_names.get(meter.site_id, meter.site_id),
        "meter": meter,
        "health": health,
        "sessions": recent,
        "sessions_url": address(console.url("/sessions"), station=meter.station_id, source="meter"),
        "kwh": kwh,
        "bus": meters.bus_label(meter),
        "form": _edit_form(meter),
        "version": meter.version,  # an edit refused as stale saves, the next time, over what is now shown
        "thresholds": THRESHOLDS,
        "stale": None,
        "state_error": None,
        **context,
    }
    return render(request, "meter.html", values, status_code=status_code, signed=signed, active="meters")


async def _show(request: Request, signed: Signed) -> Response:
    return await _meter_page(request, signed, request.path_params["meter_id"])


class _MeterChange(TypedDict, total=False):
    """What the meter's forms change, as `meters.update_meter` takes it."""

    id_tag: str | None
    poll_interval: float | None
    thresholds: ThresholdSettings | None
    enabled: bool | None
    expected_version: int | None


async def _change(request: Request, signed: Signed, meter_id: str, **changes: Unpack[_MeterChange]) -> None:
    """`meters.update_meter` with `changes`, as the signed-in operator, now, in a transaction of its own."""
    console = console_of(request)
    async with console.transaction() as session:
        await meters.update_meter(session, signed.caller, meter_id, now=console.clock.now(), **changes)


async def _update(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    meter_id = request.path_params["meter_id"]
    submitted_form = await submitted(request)
    form = {name: submitted_form.get(name, "") for name in ("id_tag", "poll_interval", *(n for n, _, _ in THRESHOLDS))}
    try:
        await _change(
            request,
            signed,
            meter_id,
            id_tag=optional_text(form, "id_tag"),
            poll_interval=decimal(form, "poll_interval"),
            expected_version=version_of(submitted_form),
            thresholds=_thresholds(form),
        )
    except InvalidInput as error:
        errors = field_errors(error, FIELDS, "id_tag")
        version = version_of(submitted_form)
        kept = {"version": version} if version is not None else {}
        return await _meter_page(request, signed, meter_id, status_code=422, form=form, errors=errors, **kept)
    except StaleChange as error:
        return await _meter_page(request, signed, meter_id, status_code=409, form=form, stale=error.message)
    return redirect(console.url(f"/meters/{meter_id}"))


def _set_enabled(enabled: bool) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        meter_id = request.path_params["meter_id"]
        form = await submitted(request)
        try:
            await _change(request, signed, meter_id, enabled=enabled, expected_version=version_of(form))
        except StaleChange as error:
            return await _meter_page(request, signed, meter_id, status_code=409, state_error=error.message)
        return redirect(console.url(f"/meters/{meter_id}"))

    return view


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    meter_id = request.path_params["meter_id"]
    async with console.transaction() as session:
        await meters.delete_meter(session, signed.caller, console.events, meter_id, now=console.clock.now())
    return redirect(console.url("/meters"))


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/meters", page(_list), methods=["GET"]),
        Route("/meters", page(_create, role=admin), methods=["POST"]),
        Route("/meters/new", page(_new, role=admin), methods=["GET"]),
        Route("/meters/buses", page(_buses), methods=["GET"]),
        Route("/meters/{meter_id}", page(_show), methods=["GET"]),
        Route("/meters/{meter_id}", page(_update, role=admin), methods=["POST"]),
        Route("/meters/{meter_id}/enable", page(_set_enabled(True), role=admin), methods=["POST"]),
        Route("/meters/{meter_id}/disable", page(_set_enabled(False), role=admin), methods=["POST"]),
        Route("/meters/{meter_id}/delete", page(_delete, role=admin), methods=["POST"]),
    ]
