from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.auth.keyring import (
    PUBLISH_AHEAD,
    RETIRE_AFTER,
    TokenKeyRing,
    WebhookKeyState,
    WebhookRotationTooEarly,
)

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def test_first_key_signs_at_once() -> None:
    ring = TokenKeyRing.first("k1", T0)
    assert ring.signing_kid(T0) == "k1" and ring.published_kids(T0) == ("k1",)


def test_rotated_key_is_published_before_it_signs() -> None:
    ring = TokenKeyRing.first("k1", T0).rotate("k2", T0)
    assert ring.published_kids(T0) == ("k1", "k2")
    assert ring.signing_kid(T0 + PUBLISH_AHEAD - timedelta(seconds=1)) == "k1"


def test_rotated_key_signs_after_the_publish_delay() -> None:
    ring = TokenKeyRing.first("k1", T0).rotate("k2", T0)
    assert ring.signing_kid(T0 + PUBLISH_AHEAD) == "k2"


def test_old_key_stays_published_until_its_tokens_expired() -> None:
    ring = TokenKeyRing.first("k1", T0).rotate("k2", T0)
    end = T0 + PUBLISH_AHEAD + RETIRE_AFTER
    assert ring.published_kids(end - timedelta(seconds=1)) == ("k1", "k2")
    assert ring.published_kids(end) == ("k2",)


def test_rotating_twice_retires_the_pending_key_too() -> None:
    ring = TokenKeyRing.first("k1", T0).rotate("k2", T0).rotate("k3", T0 + timedelta(seconds=10))
    later = T0 + timedelta(seconds=10) + PUBLISH_AHEAD + RETIRE_AFTER
    assert ring.signing_kid(T0 + timedelta(seconds=10) + PUBLISH_AHEAD) == "k3"
    assert ring.published_kids(later) == ("k3",)


def test_pruned_ring_drops_retired_keys() -> None:
    ring = TokenKeyRing.first("k1", T0).rotate("k2", T0)
    assert [e.kid for e in ring.pruned(T0 + timedelta(days=1)).entries] == ["k2"]


def test_reusing_a_kid_is_refused() -> None:
    with pytest.raises(ValueError):
        TokenKeyRing.first("k1", T0).rotate("k1", T0)


def test_empty_ring_has_no_signing_key() -> None:
    with pytest.raises(LookupError):
        TokenKeyRing().signing_kid(T0)


def test_webhook_rotation_first_publishes_sign_next() -> None:
    state, step = WebhookKeyState().rotate(T0)
    assert step == "published-next" and state.published_kids() == ("sign", "sign-next")


def test_webhook_promotion_waits_24_hours() -> None:
    state, _ = WebhookKeyState().rotate(T0)
    with pytest.raises(WebhookRotationTooEarly) as info:
        state.rotate(T0 + timedelta(hours=23))
    assert info.value.ready_at == T0 + timedelta(hours=24)


def test_webhook_promotion_after_24_hours_leaves_sign_only() -> None:
    state, _ = WebhookKeyState().rotate(T0)
    promoted, step = state.rotate(T0 + timedelta(hours=24))
    assert step == "promoted-next" and promoted.published_kids() == ("sign",)
