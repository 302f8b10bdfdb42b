from __future__ import annotations

import pytest

from chargenet.simulators.ocpp201.frames import FrameViolation, check


def test_a_valid_request_passes() -> None:
    check("Heartbeat", {}, request=True)
    check("BootNotification", {"reason": "PowerUp", "chargingStation": {"model": "M", "vendorName": "V"}}, request=True)


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"reason": "PowerUp"}, "OccurrenceConstraintViolation"),
        ({"reason": 1, "chargingStation": {"model": "M", "vendorName": "V"}}, "TypeConstraintViolation"),
        ({"reason": "Bored", "chargingStation": {"model": "M", "vendorName": "V"}}, "PropertyConstraintViolation"),
        ({"reason": "PowerUp", "chargingStation": {"model": "M", "vendorName": "V"}, "x": 1}, "FormatViolation"),
    ],
    ids=["missing field", "wrong type", "value outside its enumeration", "unexpected field"],
)
def test_a_violation_is_named_with_its_201_callerror_code(payload: dict[str, object], code: str) -> None:
    with pytest.raises(FrameViolation) as raised:
        check("BootNotification", payload, request=True)
    assert raised.value.code == code


def test_a_response_is_checked_against_the_response_schema() -> None:
    check("Heartbeat", {"currentTime": "2026-11-29T09:00:00Z"}, request=False)
    with pytest.raises(FrameViolation):
        check("Heartbeat", {}, request=False)


def test_an_action_outside_201_is_not_implemented() -> None:
    with pytest.raises(FrameViolation) as raised:
        check("StartTransaction", {}, request=True)
    assert raised.value.code == "NotImplemented"
