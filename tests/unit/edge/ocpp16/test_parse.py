from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chargenet.domain.events import AuthorizationStatus, ChargePointErrorCode, ConnectorStatus, StopReason
from chargenet.domain.tenants import StationLayout
from chargenet.edge.core.messages import IdToken
from chargenet.edge.ocpp16 import parse
from chargenet.errors import InvalidInput

LAYOUT = StationLayout("CS-1", 1, 2)
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_a_status_report_names_the_connector_in_the_services_tree_and_as_the_station_numbers_it() -> None:
    report = parse.status_report(
        LAYOUT, {"connectorId": 2, "status": "Charging", "errorCode": "NoError", "info": "x"}, NOW
    )
    assert report.connector.station_number == 2
    assert (report.connector.address.charge_point_id, report.connector.address.connector_id) == ("CS-1", 2)
    assert report.status.status is ConnectorStatus.CHARGING
    assert report.status.error_code is ChargePointErrorCode.NO_ERROR and report.status.info == "x"


def test_a_status_report_without_a_timestamp_is_dated_on_arrival() -> None:
    report = parse.status_report(LAYOUT, {"connectorId": 1, "status": "Available", "errorCode": "NoError"}, NOW)
    assert report.status.timestamp == NOW


def test_a_connector_the_station_cannot_have_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        parse.status_report(LAYOUT, {"connectorId": 3, "status": "Available", "errorCode": "NoError"}, NOW)


def test_a_start_carries_an_id_tag_as_a_token_without_a_type() -> None:
    started = parse.transaction_started(
        LAYOUT,
        {
            "connectorId": 1,
            "idTag": "TAG1",
            "meterStart": 1000,
            "timestamp": "2026-01-01T10:00:00Z",
            "reservationId": 4,
        },
    )
    assert started.token == IdToken("TAG1", None)
    assert started.meter_start_wh == 1000 and started.reservation_id == 4
    assert started.timestamp == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert started.station_transaction_id is None
    assert started.key("CS-1").connector_id == 1


def test_a_stop_without_a_reason_ends_locally_and_without_a_tag_names_no_token() -> None:
    ended = parse.transaction_ended({"transactionId": 7, "meterStop": 2000, "timestamp": "2026-01-01T11:00:00Z"})
    assert ended.transaction_id == 7 and ended.meter_stop_wh == 2000
    assert ended.reason is StopReason.LOCAL and ended.token is None


def test_a_stop_with_a_reason_and_a_tag_keeps_both() -> None:
    ended = parse.transaction_ended(
        {
            "transactionId": 7,
            "meterStop": 2000,
            "timestamp": "2026-01-01T11:00:00Z",
            "reason": "EVDisconnected",
            "idTag": "TAG2",
        }
    )
    assert ended.reason is StopReason.EV_DISCONNECTED and ended.token == IdToken("TAG2")


def test_meter_values_outside_a_transaction_belong_to_none() -> None:
    assert parse.meter_report(LAYOUT, {"connectorId": 1, "meterValue": []}).transaction_id is None


def test_an_upstream_id_tag_info_is_its_verdict() -> None:
    verdict = parse.upstream_verdict({"status": "Blocked", "expiryDate": "2026-02-01T00:00:00Z", "parentIdTag": "P"})
    assert verdict.status is AuthorizationStatus.BLOCKED
    assert verdict.expires_at == datetime(2026, 2, 1, tzinfo=UTC) and verdict.parent_id_tag == "P"
