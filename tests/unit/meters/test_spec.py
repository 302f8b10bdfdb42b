from __future__ import annotations

import pytest

from chargenet.errors import InvalidInput
from chargenet.meters.bus import Parity, RtuBus, TcpEndpoint
from chargenet.meters.detect import Thresholds
from chargenet.meters.spec import ThresholdSettings, build_spec, build_thresholds, parse_transport


def spec(**overrides: object):  # type: ignore[no-untyped-def]
    values: dict[str, object] = {
        "meter_id": "meter_1",
        "site_id": "site_1",
        "station_id": "ST-1",
        "charge_point_id": "ST-1",
        "connector_id": 1,
        "id_tag": None,
        "profile": "sdm630",
        "unit_id": 1,
        "transport": TcpEndpoint("10.0.0.5"),
        "thresholds": Thresholds(),
        "poll_interval_s": 5.0,
    }
    values.update(overrides)
    return build_spec(**values)  # type: ignore[arg-type]


def test_tcp_without_port_uses_502() -> None:
    assert parse_transport(tcp="meter.local", rtu=None) == TcpEndpoint("meter.local", 502)


def test_tcp_ipv6_with_port() -> None:
    assert parse_transport(tcp="[fd00::5]:1502", rtu=None) == TcpEndpoint("fd00::5", 1502)


@pytest.mark.parametrize("text", ["host:0", "host:70000", "host:port", "[fd00::5", ":502", "a b:502"])
def test_malformed_tcp_address_is_refused_naming_tcp(text: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_transport(tcp=text, rtu=None)
    assert raised.value.field == "tcp"


def test_rtu_defaults_to_9600_8n1() -> None:
    bus = parse_transport(tcp=None, rtu="/dev/ttyUSB0")
    assert isinstance(bus, RtuBus)
    assert (bus.line.baudrate, bus.line.parity, bus.line.stopbits) == (9600, Parity.NONE, 1)


def test_rtu_line_settings_are_read() -> None:
    bus = parse_transport(tcp=None, rtu="/dev/ttyUSB0", baud=19200, parity="e", stopbits=2)
    assert isinstance(bus, RtuBus)
    assert (bus.line.baudrate, bus.line.parity, bus.line.stopbits) == (19200, Parity.EVEN, 2)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tcp": None, "rtu": None}, "transport"),
        ({"tcp": "h", "rtu": "/dev/x"}, "transport"),
        ({"tcp": "h", "rtu": None, "baud": 9600}, "tcp"),
        ({"tcp": None, "rtu": "/dev/x", "parity": "X"}, "parity"),
        ({"tcp": None, "rtu": "/dev/x", "baud": 9601}, "baud"),
        ({"tcp": None, "rtu": "/dev/x", "stopbits": 3}, "stopbits"),
        ({"tcp": None, "rtu": " "}, "rtu"),
    ],
)
def test_bad_transport_is_refused_naming_the_setting(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_transport(**kwargs)  # type: ignore[arg-type]
    assert raised.value.field == field


def test_threshold_errors_name_the_cli_flag() -> None:
    with pytest.raises(InvalidInput) as raised:
        build_thresholds(ThresholdSettings(start_current=2, stop_current=2.5))
    assert raised.value.field == "stop-current"


def test_settings_not_given_keep_the_base_values() -> None:
    base = build_thresholds(ThresholdSettings(start_current=6, stop_grace=60))
    changed = build_thresholds(ThresholdSettings(stop_current=2), base=base)
    assert (changed.start_current_a, changed.stop_current_a, changed.stop_grace_s) == (6, 2, 60)
    assert changed.outage_close_s == 900


def test_defaults_are_the_decided_ones() -> None:
    thresholds = build_thresholds()
    assert (thresholds.start_current_a, thresholds.stop_current_a) == (3, 1)
    assert (thresholds.start_power_w, thresholds.stop_power_w) == (500, 200)
    assert (thresholds.stop_grace_s, thresholds.outage_close_s) == (180, 900)


def test_id_tag_defaults_to_meter_and_its_id() -> None:
    assert spec().id_tag == "METER-meter_1"


def test_counter_resolution_comes_from_the_profile() -> None:
    assert spec(profile="em340").thresholds.energy_resolution_wh == 100


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"unit_id": 0}, "unit"),
        ({"unit_id": 248}, "unit"),
        ({"connector_id": 0}, "connector"),
        ({"poll_interval_s": 0.0}, "poll-interval"),
        ({"poll_interval_s": 1000.0}, "poll-interval"),
        ({"profile": "sdm999"}, "profile"),
        ({"id_tag": ""}, "id-tag"),
    ],
)
def test_malformed_configuration_is_refused_naming_the_setting(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        spec(**overrides)
    assert raised.value.field == field
