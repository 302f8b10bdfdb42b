from __future__ import annotations

import pytest

from chargenet.webhooks.health import Level, queue_size_level, request_duration_level, worst


@pytest.mark.parametrize(("size", "level"), [(0, Level.OK), (5, Level.OK), (6, Level.ALERT), (100, Level.ALERT)])
def test_queue_size_alerts_above_five(size: int, level: Level) -> None:
    assert queue_size_level(size) is level


def test_queue_size_is_critical_above_one_hundred() -> None:
    assert queue_size_level(101) is Level.CRITICAL


@pytest.mark.parametrize(("ms", "level"), [(None, Level.OK), (500.0, Level.OK), (500.1, Level.ALERT)])
def test_request_duration_alerts_above_500_ms(ms: float | None, level: Level) -> None:
    assert request_duration_level(ms) is level


def test_request_duration_is_critical_above_5000_ms() -> None:
    assert (request_duration_level(5000.0), request_duration_level(5001.0)) == (Level.ALERT, Level.CRITICAL)


def test_worst_level_wins() -> None:
    assert worst(Level.OK, Level.CRITICAL, Level.ALERT) is Level.CRITICAL
