"""Security profiles of a site's link to its upstream (domain.upstream_profiles)."""

from __future__ import annotations

import pytest

from chargenet.domain.upstream_profiles import (
    UpstreamProfile,
    UpstreamTls,
    check,
    parse_upstream_profile,
    sends_client_certificate,
)
from chargenet.errors import InvalidInput

WS = "ws://cpo.example/ocpp"
WSS = "wss://cpo.example/ocpp"


def tls(profile: int, url: str | None, *, client_certificate: bool = False) -> UpstreamTls:
    return UpstreamTls(UpstreamProfile(profile), url, client_certificate, ca_bundle=False)


def test_a_site_without_a_profile_is_at_1() -> None:
    assert parse_upstream_profile(None) is UpstreamProfile.BASIC


@pytest.mark.parametrize("value", [0, 4, "two"])
def test_only_profiles_1_to_3_exist_towards_an_upstream(value: int | str) -> None:
    with pytest.raises(InvalidInput, match="profile"):
        parse_upstream_profile(value)


@pytest.mark.parametrize("url", [WS, WSS, None])
def test_profile_1_takes_ws_and_wss(url: str | None) -> None:
    check(tls(1, url))


@pytest.mark.parametrize("profile", [2, 3])
def test_profiles_2_and_3_refuse_a_ws_url(profile: int) -> None:
    with pytest.raises(InvalidInput, match="needs a wss:// upstream URL"):
        check(tls(profile, WS, client_certificate=True))


def test_profile_2_takes_wss_without_a_client_certificate() -> None:
    check(tls(2, WSS))


def test_profile_3_needs_a_client_certificate() -> None:
    with pytest.raises(InvalidInput, match="client certificate"):
        check(tls(3, WSS))
    check(tls(3, WSS, client_certificate=True))


def test_settings_waiting_for_an_upstream_url_are_taken() -> None:
    check(tls(3, None, client_certificate=True))


def test_a_client_certificate_is_shown_over_tls_only() -> None:
    assert sends_client_certificate(tls(1, WSS, client_certificate=True))
    assert not sends_client_certificate(tls(1, WS, client_certificate=True))
    assert not sends_client_certificate(tls(2, WSS))
