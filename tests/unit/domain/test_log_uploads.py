"""One-time upload slots for station logs: the token, the used-once rule, expiry, the size bound, file names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.log_uploads import (
    MAX_FILE_NAME,
    ByteBudget,
    SizeExceeded,
    SlotRefusal,
    new_slot,
    redacted_path,
    refusal,
    sanitized_file_name,
    token_hash,
    upload_base_problem,
    upload_location,
)
from chargenet.errors import InvalidInput

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_a_new_slot_keeps_only_the_hash_of_its_random_token() -> None:
    first, second = new_slot("CS-1", NOW), new_slot("CS-1", NOW)
    assert first.token != second.token
    assert len(first.token) >= 40
    assert first.slot.token_hash == token_hash(first.token) != first.token


def test_a_fresh_slot_takes_an_upload_until_it_expires() -> None:
    slot = new_slot("CS-1", NOW, lifetime=timedelta(hours=1)).slot
    assert refusal(slot, NOW + timedelta(minutes=59)) is None
    assert refusal(slot, NOW + timedelta(hours=1)) is SlotRefusal.EXPIRED


def test_a_used_slot_and_an_unknown_token_are_refused() -> None:
    slot = new_slot("CS-1", NOW).slot
    assert refusal(replace(slot, used_at=NOW), NOW) is SlotRefusal.USED
    assert refusal(None, NOW) is SlotRefusal.UNKNOWN


def test_the_byte_budget_refuses_the_first_byte_past_the_limit() -> None:
    budget = ByteBudget(10)
    budget.take(6)
    budget.take(4)
    with pytest.raises(SizeExceeded):
        budget.take(1)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("diagnostics-CS-1.tar.gz", "diagnostics-CS-1.tar.gz"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        (".hidden", "hidden"),
        ("log file (1).txt", "log_file__1_.txt"),
        ("journal\x00.log", "journal_.log"),
    ],
)
def test_a_file_name_keeps_its_last_part_in_safe_characters(given: str, stored: str) -> None:
    assert sanitized_file_name(given) == stored


def test_a_long_file_name_is_cut_keeping_its_extension() -> None:
    name = sanitized_file_name("a" * 500 + ".zip")
    assert len(name) == MAX_FILE_NAME
    assert name.endswith("a.zip")


@pytest.mark.parametrize("given", ["", "..", "/", "dir/", "~~~"])
def test_a_name_that_names_no_file_is_refused(given: str) -> None:
    with pytest.raises(InvalidInput):
        sanitized_file_name(given)


def test_the_upload_base_is_https_or_http_on_loopback() -> None:
    assert upload_base_problem("https://cs.example.com") is None
    assert upload_base_problem("http://127.0.0.1:8080") is None
    assert upload_base_problem("http://[::1]:8080") is None
    assert upload_base_problem("http://localhost:8080") is None
    assert "https" in (upload_base_problem("http://cs.example.com") or "")
    assert upload_base_problem("ftp://cs.example.com") is not None


def test_the_location_is_a_directory_under_the_token() -> None:
    assert upload_location("https://cs.example.com/", "abc_-1") == "https://cs.example.com/uploads/abc_-1/"


def test_logs_show_an_upload_path_without_its_token() -> None:
    assert redacted_path("/uploads/s3cr3t/diag.log") == "/uploads/[token]/diag.log"
    assert redacted_path("/uploads/s3cr3t") == "/uploads/[token]"
    assert redacted_path("/api/v1/stations/CS-1/logs") == "/api/v1/stations/CS-1/logs"
