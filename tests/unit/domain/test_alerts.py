"""When a watched condition becomes an alert and when the alert ends: raised only after the condition held for the
rule's threshold, cleared once it has been gone for the hold, and the checks of what an operator types in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.alerts import (
    CLEAR_HOLD,
    Decision,
    Holding,
    MailKind,
    RuleKind,
    Step,
    Tracked,
    decide,
    mail_text,
    validate_address,
    validate_host,
    validate_recipients,
    validate_threshold,
)
from chargenet.domain.local_time import LocalTime
from chargenet.errors import InvalidInput

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
TEN_MINUTES = timedelta(minutes=10)


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


def test_a_condition_that_does_not_hold_and_is_not_tracked_needs_nothing() -> None:
    assert decide(None, None, threshold=TEN_MINUTES, now=T0) == Decision(Step.NOTHING)


def test_a_condition_younger_than_the_threshold_is_watched_from_when_it_began() -> None:
    assert decide(Holding(minutes(-3)), None, threshold=TEN_MINUTES, now=T0) == Decision(Step.WATCH, minutes(-3))


def test_a_condition_whose_start_the_store_does_not_know_is_watched_from_when_it_was_first_seen() -> None:
    assert decide(Holding(), None, threshold=TEN_MINUTES, now=T0) == Decision(Step.WATCH, T0)
    pending = Tracked(T0, None, None)
    assert decide(Holding(), pending, threshold=TEN_MINUTES, now=minutes(9)) == Decision(Step.NOTHING)
    assert decide(Holding(), pending, threshold=TEN_MINUTES, now=minutes(10)) == Decision(Step.RAISE, T0)


def test_a_condition_that_held_for_the_threshold_is_raised_at_once() -> None:
    assert decide(Holding(minutes(-10)), None, threshold=TEN_MINUTES, now=T0) == Decision(Step.RAISE, minutes(-10))


def test_a_pending_alert_whose_condition_ended_before_the_threshold_is_forgotten_unmailed() -> None:
    pending = Tracked(minutes(-5), None, None)
    assert decide(None, pending, threshold=TEN_MINUTES, now=T0) == Decision(Step.FORGET)


def test_a_pending_alert_keeps_the_first_start_seen_while_its_condition_held() -> None:
    pending = Tracked(minutes(-5), None, None)
    assert decide(Holding(minutes(-1)), pending, threshold=TEN_MINUTES, now=T0) == Decision(Step.NOTHING)
    assert decide(Holding(minutes(-1)), pending, threshold=TEN_MINUTES, now=minutes(5)) == Decision(
        Step.RAISE, minutes(-5)
    )


def test_a_pending_alert_moves_to_an_earlier_start_the_store_knows() -> None:
    pending = Tracked(T0, None, None)
    assert decide(Holding(minutes(-3)), pending, threshold=TEN_MINUTES, now=T0) == Decision(Step.WATCH, minutes(-3))


def test_a_raised_alert_whose_condition_still_holds_stays_as_it_is() -> None:
    raised = Tracked(minutes(-20), minutes(-10), None)
    assert decide(Holding(minutes(-20)), raised, threshold=TEN_MINUTES, now=T0) == Decision(Step.NOTHING)


def test_a_raised_alert_clears_only_once_its_condition_was_gone_for_the_hold() -> None:
    raised = Tracked(minutes(-20), minutes(-10), None)
    assert decide(None, raised, threshold=TEN_MINUTES, now=T0) == Decision(Step.GONE)
    going = Tracked(minutes(-20), minutes(-10), T0)
    assert decide(None, going, threshold=TEN_MINUTES, now=T0 + CLEAR_HOLD - timedelta(seconds=1)).step is Step.NOTHING
    assert decide(None, going, threshold=TEN_MINUTES, now=T0 + CLEAR_HOLD) == Decision(Step.CLEAR)


def test_a_condition_back_within_the_hold_keeps_its_one_alert() -> None:
    going = Tracked(minutes(-20), minutes(-10), minutes(-1))
    assert decide(Holding(T0), going, threshold=TEN_MINUTES, now=T0) == Decision(Step.BACK)


def test_without_a_hold_an_alert_clears_as_soon_as_its_condition_is_gone() -> None:
    raised = Tracked(minutes(-20), minutes(-10), None)
    assert decide(None, raised, threshold=TEN_MINUTES, now=T0, clear_hold=timedelta(0)) == Decision(Step.CLEAR)


@pytest.mark.parametrize("minutes_given", [0, -5, 7 * 24 * 60 + 1, 10**9])
def test_a_threshold_that_is_not_positive_or_longer_than_a_week_is_refused(minutes_given: int) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_threshold(minutes_given)
    assert refused.value.field == "threshold"


def test_thresholds_from_a_minute_to_a_week_are_taken() -> None:
    assert validate_threshold(1) == 1
    assert validate_threshold(7 * 24 * 60) == 7 * 24 * 60


@pytest.mark.parametrize(
    "given",
    [
        "ops@example.org\r\nBcc: all@example.org",
        "ops@example.org\nBcc: all@example.org",
        "ops@example.org\x00",
        "Ops <ops@example.org>",
        "ops@example.org; other@example.org",
        "not an address",
        "ops@localhost",
    ],
)
def test_recipients_with_header_injection_or_that_are_not_plain_addresses_are_refused(given: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_recipients(given)
    assert refused.value.field == "recipients"


def test_recipients_are_plain_addresses_separated_by_commas_without_repeats() -> None:
    assert validate_recipients(" ops@example.org, night@example.org ,ops@example.org") == (
        "ops@example.org",
        "night@example.org",
    )


def test_no_recipient_at_all_is_refused() -> None:
    with pytest.raises(InvalidInput, match="at least one"):
        validate_recipients(" , ")


def test_a_sender_with_a_line_break_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_address("alerts@example.org\r\nX: y", field="sender")
    assert refused.value.field == "sender"


@pytest.mark.parametrize("host", ["smtp.example.org\r\n", "smtp example.org", "", "-bad.example.org"])
def test_a_host_that_is_not_a_name_or_address_is_refused(host: str) -> None:
    with pytest.raises(InvalidInput):
        validate_host(host)


BRUSSELS = LocalTime.named("Europe/Brussels")


def test_the_mails_of_an_alert_name_its_kind_and_subject_and_say_when() -> None:
    raised = mail_text(
        RuleKind.STATION_OFFLINE,
        "station ST-1 at Depot",
        MailKind.RAISED,
        since=T0,
        at=minutes(10),
        minutes=10,
        reads_in=BRUSSELS,
    )
    assert raised.subject == "[chargenet] Station offline: station ST-1 at Depot"
    assert "Since 2026-07-01 14:00 +02:00 (Europe/Brussels), longer than 10 minutes" in raised.body
    cleared = mail_text(
        RuleKind.STATION_OFFLINE,
        "station ST-1 at Depot",
        MailKind.CLEARED,
        since=T0,
        at=minutes(30),
        minutes=10,
        reads_in=BRUSSELS,
    )
    assert cleared.subject == "[chargenet] Cleared: Station offline: station ST-1 at Depot"
