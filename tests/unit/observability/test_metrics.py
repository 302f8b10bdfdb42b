"""The label values of HTTP requests: a status class per hundred, and methods HTTP does not define folded."""

from __future__ import annotations

from chargenet.observability.metrics import method_label, status_class


def test_a_status_is_labelled_by_its_class() -> None:
    assert [status_class(s) for s in (101, 200, 204, 302, 404, 499, 500, 503)] == [
        "1xx",
        "2xx",
        "2xx",
        "3xx",
        "4xx",
        "4xx",
        "5xx",
        "5xx",
    ]


def test_a_status_outside_http_is_other() -> None:
    assert [status_class(s) for s in (0, 99, 600, 999)] == ["other"] * 4


def test_a_method_http_does_not_define_is_other_and_a_defined_one_is_kept() -> None:
    assert [method_label(m) for m in ("GET", "POST", "DELETE", "BREW", "get", "X" * 200)] == [
        "GET",
        "POST",
        "DELETE",
        "other",
        "other",
        "other",
    ]
