from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.errors import InvalidInput
from chargenet.meters.bus import BackoffPolicy, BusScheduler, BusSettings, Parity, SerialLine

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def test_ten_register_read_at_9600_8n1_takes_41_7_ms() -> None:
    # notes/modbus-meters.md §4: 33 bytes x 10 bits / 9600 + 2 x t3.5.
    assert SerialLine(9600).read_time(10) == pytest.approx(0.0417, abs=0.0001)


def test_turnaround_adds_to_the_read_time() -> None:
    assert SerialLine(9600).read_time(10, 0.010) == pytest.approx(0.0517, abs=0.0001)


def test_even_parity_makes_eleven_bit_characters() -> None:
    assert SerialLine(9600, Parity.EVEN).read_time(10, 0.010) == pytest.approx(0.0558, abs=0.0001)


def test_silent_interval_is_fixed_above_19200_baud() -> None:
    assert SerialLine(38400).silent_interval_s == 0.00175
    assert SerialLine(19200).silent_interval_s == pytest.approx(3.5 * 10 / 19200)


def test_serial_timeout_is_wire_time_plus_margin_with_no_retries() -> None:
    settings = BusSettings.for_serial(SerialLine(9600), registers=10)
    assert settings.timeout_s == pytest.approx(0.292, abs=0.001)
    assert settings.retries == 0
    assert settings.worst_case_s < 0.5


def test_unsupported_baud_rate_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput) as raised:
        SerialLine(9601)
    assert raised.value.field == "baud"


def test_pymodbus_default_timeout_and_retries_fit_but_are_never_chosen() -> None:
    assert BusSettings(timeout_s=3, retries=3).worst_case_s == 12
    assert BusSettings.for_tcp().worst_case_s == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"timeout_s": 0}, "timeout"),
        ({"timeout_s": 1, "retries": 4}, "retries"),
        ({"timeout_s": 1, "inter_request_delay_s": -1}, "inter_request_delay"),
    ],
)
def test_bad_bus_settings_are_refused(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        BusSettings(**kwargs)  # type: ignore[arg-type]
    assert raised.value.field == field


def test_new_meters_are_due_at_once_in_the_order_they_were_added() -> None:
    scheduler = BusScheduler()
    for meter_id in ("b", "a", "c"):
        scheduler.add(meter_id, 5, T0)
    assert scheduler.due(T0) == ["b", "a", "c"]


def test_polled_meter_is_due_again_after_its_interval() -> None:
    scheduler = BusScheduler()
    scheduler.add("m", 5, T0)
    scheduler.record_success("m", T0 + timedelta(seconds=0.2))
    assert scheduler.due(T0 + timedelta(seconds=4.9)) == []
    assert scheduler.due(T0 + timedelta(seconds=5)) == ["m"]
    assert scheduler.next_due() == T0 + timedelta(seconds=5)


def test_meter_behind_schedule_is_due_at_once() -> None:
    scheduler = BusScheduler()
    scheduler.add("m", 5, T0)
    scheduler.record_success("m", T0 + timedelta(seconds=12))
    assert scheduler.next_due() == T0 + timedelta(seconds=12)


def test_meters_keep_their_own_intervals() -> None:
    scheduler = BusScheduler()
    scheduler.add("fast", 1, T0)
    scheduler.add("slow", 10, T0)
    for meter_id in scheduler.due(T0):
        scheduler.record_success(meter_id, T0)
    assert scheduler.due(T0 + timedelta(seconds=1)) == ["fast"]


def test_meter_is_dead_after_three_failures_in_a_row() -> None:
    scheduler = BusScheduler()
    scheduler.add("m", 5, T0)
    now = T0
    for _ in range(2):
        scheduler.record_failure("m", now)
        now += timedelta(seconds=5)
    assert not scheduler.is_dead("m")
    scheduler.record_failure("m", now)
    assert scheduler.is_dead("m")


def test_dead_meter_is_probed_with_exponential_backoff() -> None:
    policy = BackoffPolicy(initial_backoff_s=10, max_backoff_s=40)
    assert [policy.backoff_s(n) for n in (3, 4, 5, 6, 50)] == [10, 20, 40, 40, 40]


def test_at_most_one_dead_meter_is_probed_per_cycle_and_live_meters_go_first() -> None:
    scheduler = BusScheduler()
    for meter_id in ("dead1", "dead2", "live"):
        scheduler.add(meter_id, 5, T0)
    now = T0
    for _ in range(3):
        for meter_id in ("dead1", "dead2"):
            scheduler.record_failure(meter_id, now)
        scheduler.record_success("live", now)
        now += timedelta(seconds=5)
    later = now + timedelta(seconds=60)
    assert scheduler.due(later) == ["live", "dead1"]


def test_dead_meters_take_turns_being_probed() -> None:
    scheduler = BusScheduler(BackoffPolicy(dead_after_failures=1))
    scheduler.add("d1", 5, T0)
    scheduler.add("d2", 5, T0)
    scheduler.record_failure("d1", T0)
    scheduler.record_failure("d2", T0)
    later = T0 + timedelta(seconds=100)
    first = scheduler.due(later)
    scheduler.record_failure(first[0], later)
    assert scheduler.due(later) == [m for m in ("d1", "d2") if m not in first]


def test_dead_meter_that_answers_is_live_again() -> None:
    scheduler = BusScheduler(BackoffPolicy(dead_after_failures=1))
    scheduler.add("m", 5, T0)
    scheduler.record_failure("m", T0)
    scheduler.record_success("m", T0 + timedelta(seconds=10))
    assert not scheduler.is_dead("m")


def test_removed_meter_is_never_due() -> None:
    scheduler = BusScheduler()
    scheduler.add("m", 5, T0)
    scheduler.remove("m")
    scheduler.record_success("m", T0)
    assert scheduler.due(T0) == []
    assert scheduler.next_due() is None


def test_poll_interval_must_be_positive() -> None:
    with pytest.raises(InvalidInput):
        BusScheduler().add("m", 0, T0)
