"""A meter's configuration, validated: what to poll, where, and how to judge its readings (pure).

Every check raises `InvalidInput` whose `field` is the CLI flag's name without dashes (`tcp`, `baud`, `unit`,
`start-current`...), so a malformed configuration is refused with a message naming what is wrong, whether it
comes from the CLI, the API or a row in the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from chargenet.errors import InvalidInput
from chargenet.meters.bus import Parity, RtuBus, SerialLine, TcpEndpoint, Transport
from chargenet.meters.detect import Thresholds
from chargenet.meters.profiles import Profile, get_profile

UNIT_IDS = range(1, 248)
POLL_INTERVAL_S = (0.2, 3600.0)


@dataclass(frozen=True, slots=True)
class MeterSpec:
    meter_id: str
    site_id: str
    station_id: str
    charge_point_id: str
    connector_id: int
    id_tag: str
    profile: Profile
    unit_id: int
    transport: Transport
    thresholds: Thresholds
    poll_interval_s: float

    @property
    def bus_key(self) -> str:
        return self.transport.key


def parse_transport(
    *, tcp: str | None, rtu: str | None, baud: int | None = None, parity: str | None = None, stopbits: int | None = None
) -> Transport:
    """`--tcp HOST:PORT` or `--rtu DEVICE` with its line settings; exactly one of the two."""
    if (tcp is None) == (rtu is None):
        raise InvalidInput("give exactly one of --tcp HOST:PORT and --rtu DEVICE", field="transport")
    if tcp is not None:
        if baud is not None or parity is not None or stopbits is not None:
            raise InvalidInput("--baud, --parity and --stopbits apply to --rtu only", field="tcp")
        return TcpEndpoint.parse(tcp)
    assert rtu is not None
    if not rtu.strip():
        raise InvalidInput("needs a serial device such as /dev/ttyUSB0", field="rtu")
    try:
        parsed_parity = Parity((parity or "N").upper())
    except ValueError:
        raise InvalidInput(f"must be N, E or O, got {parity!r}", field="parity") from None
    return RtuBus(rtu, SerialLine(baud or 9600, parsed_parity, stopbits or 1))


@dataclass(frozen=True, slots=True)
class ThresholdSettings:
    """A meter's thresholds as an operator gives them (the command line's flags, the API's fields, the console's
    form), each None where not given: a new meter then has the default, a changed one keeps its value."""

    start_current: float | None = None
    stop_current: float | None = None
    start_power: float | None = None
    stop_power: float | None = None
    stop_grace: float | None = None
    outage_close: float | None = None


# Each setting's field of `Thresholds`, and the command line's flag that a refusal of it names.
_THRESHOLD_FIELDS = {
    "start_current": ("start_current_a", "start-current"),
    "stop_current": ("stop_current_a", "stop-current"),
    "start_power": ("start_power_w", "start-power"),
    "stop_power": ("stop_power_w", "stop-power"),
    "stop_grace": ("stop_grace_s", "stop-grace"),
    "outage_close": ("outage_close_s", "outage-close"),
}


def build_thresholds(settings: ThresholdSettings | None = None, *, base: Thresholds | None = None) -> Thresholds:
    """`base` (the defaults when None) with what `settings` gives; InvalidInput naming the setting's flag."""
    given: dict[str, Any] = {
        field: float(value)
        for name, (field, _) in _THRESHOLD_FIELDS.items()
        if (value := getattr(settings, name, None)) is not None
    }
    try:
        return replace(base or Thresholds(), **given)
    except InvalidInput as exc:
        flags = dict(_THRESHOLD_FIELDS.values())
        raise InvalidInput(exc.detail, field=flags.get(exc.field or "", exc.field)) from None


def build_spec(
    *,
    meter_id: str,
    site_id: str,
    station_id: str,
    charge_point_id: str,
    connector_id: int,
    id_tag: str | None,
    profile: str,
    unit_id: int,
    transport: Transport,
    thresholds: Thresholds,
    poll_interval_s: float,
) -> MeterSpec:
    if unit_id not in UNIT_IDS:
        raise InvalidInput(f"must be 1-247, got {unit_id}", field="unit")
    if connector_id < 1:
        raise InvalidInput(f"must be 1 or more, got {connector_id}", field="connector")
    low, high = POLL_INTERVAL_S
    if not low <= poll_interval_s <= high:
        raise InvalidInput(f"must be {low}-{high:g} seconds, got {poll_interval_s:g}", field="poll-interval")
    if poll_interval_s >= thresholds.outage_close_s:
        raise InvalidInput("must be shorter than --outage-close", field="poll-interval")
    resolved = get_profile(profile)
    tag = id_tag if id_tag is not None else default_id_tag(meter_id)
    if not 1 <= len(tag) <= 255:
        raise InvalidInput("must be 1-255 characters", field="id-tag")
    return MeterSpec(
        meter_id=meter_id,
        site_id=site_id,
        station_id=station_id,
        charge_point_id=charge_point_id,
        connector_id=connector_id,
        id_tag=tag,
        profile=resolved,
        unit_id=unit_id,
        transport=transport,
        # The plausibility checks allow for the counter's own step (100 Wh on Carlo Gavazzi meters).
        thresholds=replace(thresholds, energy_resolution_wh=resolved.energy_resolution_wh),
        poll_interval_s=poll_interval_s,
    )


def default_id_tag(meter_id: str) -> str:
    return f"METER-{meter_id}"
