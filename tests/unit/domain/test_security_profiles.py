from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.security_profiles import (
    CertificateFacts,
    Credentials,
    Expectations,
    Refusal,
    SecurityProfile,
    decide,
    is_lowering,
    parse_profile,
)
from chargenet.errors import InvalidInput

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
STATION = Expectations(common_name="CS-1", organisation=None)


def certificate(
    *, issued: bool = True, cn: str = "CS-1", o: str | None = None, expired: bool = False, early: bool = False
) -> CertificateFacts:
    start = NOW + timedelta(days=1) if early else NOW - timedelta(days=30)
    end = NOW - timedelta(seconds=1) if expired else NOW + timedelta(days=30)
    return CertificateFacts(
        issued_by_station_ca=issued, common_name=cn, organisation=o, not_before=start, not_after=end
    )


P0, P1, P2, P3 = SecurityProfile
ABSENT, VALID, INVALID = Credentials.ABSENT, Credentials.VALID, Credentials.INVALID

CASES = [
    # profile, tls, credentials, certificate, expected refusal
    (P0, False, ABSENT, None, None),
    (P0, True, INVALID, None, None),
    (P1, False, VALID, None, None),
    (P1, True, VALID, None, None),
    (P1, False, ABSENT, None, Refusal.BAD_CREDENTIALS),
    (P1, False, INVALID, certificate(), Refusal.BAD_CREDENTIALS),
    (P2, True, VALID, None, None),
    (P2, False, VALID, None, Refusal.PLAIN_WS),
    (P2, True, INVALID, None, Refusal.BAD_CREDENTIALS),
    (P2, True, ABSENT, certificate(), Refusal.BAD_CREDENTIALS),
    (P3, True, ABSENT, certificate(), None),
    (P3, True, VALID, certificate(), None),
    (P3, False, ABSENT, certificate(), Refusal.PLAIN_WS),
    (P3, True, VALID, None, Refusal.PASSWORD_INSTEAD_OF_CERTIFICATE),
    (P3, True, INVALID, None, Refusal.PASSWORD_INSTEAD_OF_CERTIFICATE),
    (P3, True, ABSENT, None, Refusal.NO_CERTIFICATE),
    (P3, True, ABSENT, certificate(issued=False), Refusal.UNKNOWN_CA),
    (P3, True, ABSENT, certificate(expired=True), Refusal.EXPIRED),
    (P3, True, ABSENT, certificate(early=True), Refusal.EXPIRED),
    (P3, True, ABSENT, certificate(cn="CS-2"), Refusal.WRONG_COMMON_NAME),
    (P3, True, ABSENT, certificate(issued=False, cn="CS-2", expired=True), Refusal.UNKNOWN_CA),
]


@pytest.mark.parametrize(("profile", "tls", "credentials", "shown", "refusal"), CASES)
def test_a_handshake_is_accepted_or_refused_by_the_stations_profile(
    profile: SecurityProfile,
    tls: bool,
    credentials: Credentials,
    shown: CertificateFacts | None,
    refusal: Refusal | None,
) -> None:
    assert decide(profile, tls=tls, credentials=credentials, certificate=shown, expected=STATION, now=NOW) is refusal


def test_the_organisation_is_checked_only_when_the_company_has_one() -> None:
    named = Expectations(common_name="CS-1", organisation="Acme Charging")

    def refusal(shown: CertificateFacts, expected: Expectations) -> Refusal | None:
        return decide(P3, tls=True, credentials=ABSENT, certificate=shown, expected=expected, now=NOW)

    assert refusal(certificate(o="Acme Charging"), named) is None
    assert refusal(certificate(o="Other"), named) is Refusal.WRONG_ORGANISATION
    assert refusal(certificate(o="Other"), STATION) is None


def test_the_common_name_may_be_the_stations_serial_number() -> None:
    serial = Expectations(common_name="SN-0042", organisation=None)
    refusal = decide(P3, tls=True, credentials=ABSENT, certificate=certificate(cn="SN-0042"), expected=serial, now=NOW)
    assert refusal is None


def test_a_password_is_asked_for_with_401_and_everything_else_refused_with_403() -> None:
    assert Refusal.BAD_CREDENTIALS.status == 401
    assert {refusal.status for refusal in Refusal if refusal is not Refusal.BAD_CREDENTIALS} == {403}


def test_only_a_lower_profile_is_lowering() -> None:
    assert is_lowering(P3, P2)
    assert not is_lowering(P1, P3)
    assert not is_lowering(P2, P2)


@pytest.mark.parametrize("value", ["4", "-1", "two", ""])
def test_a_profile_outside_0_to_3_is_refused(value: str) -> None:
    with pytest.raises(InvalidInput):
        parse_profile(value)
