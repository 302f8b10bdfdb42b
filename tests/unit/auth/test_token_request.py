from __future__ import annotations

import base64
import json
from urllib.parse import quote_plus

import pytest

from chargenet.auth.client_assertions import JWT_BEARER
from chargenet.auth.errors import ClientAuthenticationFailed, TokenOfAnotherClient, TooManyFailedAttempts
from chargenet.auth.token_request import (
    AuthMethod,
    ClientAssertion,
    ClientAuthentication,
    ClientCredentials,
    ErrorCode,
    RawTokenRequest,
    TokenError,
    TokenOperation,
    parse_token_operation,
    parse_token_request,
    token_error_for,
)

FORM = "application/x-www-form-urlencoded"
GRANT = b"grant_type=client_credentials"


def basic(user: str, password: str, *, encode: bool = True) -> str:
    if encode:
        user, password = quote_plus(user), quote_plus(password)
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def request(
    body: bytes = GRANT,
    *,
    auth: tuple[str, ...] = (),
    content_type: str | None = FORM,
    query: str = "",
    method: str = "POST",
) -> ClientAuthentication | TokenError:
    return parse_token_request(RawTokenRequest(method, query, content_type, auth, body))


def error(result: ClientAuthentication | TokenOperation | TokenError) -> tuple[ErrorCode, int]:
    assert isinstance(result, TokenError), result
    return result.error, result.status


def test_basic_credentials_are_accepted() -> None:
    assert request(auth=(basic("app_1", "s3cret"),)) == ClientCredentials("app_1", "s3cret", AuthMethod.BASIC)


def test_basic_credentials_are_form_urldecoded() -> None:
    result = request(auth=(basic("app:1 x", "p%ss+w/rd:"),))
    assert result == ClientCredentials("app:1 x", "p%ss+w/rd:", AuthMethod.BASIC)


def test_basic_plus_decodes_to_a_space() -> None:
    result = request(auth=(basic("app_1", "a+b", encode=False),))
    assert isinstance(result, ClientCredentials) and result.client_secret == "a b"


def test_basic_scheme_is_case_insensitive() -> None:
    header = basic("app_1", "s").replace("Basic", "bAsIc")
    assert isinstance(request(auth=(header,)), ClientCredentials)


def test_post_credentials_are_accepted() -> None:
    result = request(GRANT + b"&client_id=app_1&client_secret=s%2B3")
    assert result == ClientCredentials("app_1", "s+3", AuthMethod.POST)


def test_form_content_type_with_charset_is_accepted() -> None:
    result = request(auth=(basic("a", "b"),), content_type="application/x-www-form-urlencoded; charset=UTF-8")
    assert isinstance(result, ClientCredentials)


def test_both_methods_at_once_are_refused() -> None:
    body = GRANT + b"&client_id=app_1&client_secret=s"
    assert error(request(body, auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def test_basic_with_matching_client_id_in_body_is_accepted() -> None:
    assert isinstance(request(GRANT + b"&client_id=app_1", auth=(basic("app_1", "s"),)), ClientCredentials)


def test_basic_with_other_client_id_in_body_is_refused() -> None:
    assert error(request(GRANT + b"&client_id=app_2", auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


@pytest.mark.parametrize("query", ["client_secret=s", "client_id=app_1", "grant_type=client_credentials"])
def test_token_parameters_in_the_query_are_refused(query: str) -> None:
    assert error(request(auth=(basic("app_1", "s"),), query=query)) == (ErrorCode.INVALID_REQUEST, 400)


def test_unrelated_query_parameters_are_ignored() -> None:
    assert isinstance(request(auth=(basic("app_1", "s"),), query="x=1"), ClientCredentials)


@pytest.mark.parametrize("param", [b"grant_type=client_credentials", b"client_id=app_1", b"scope=&scope="])
def test_repeated_parameter_is_refused(param: bytes) -> None:
    body = GRANT + b"&client_id=app_1&client_secret=s&" + param
    result = request(body)
    assert error(result) == (ErrorCode.INVALID_REQUEST, 400)
    assert isinstance(result, TokenError) and "repeated" in result.description


def test_json_body_is_refused() -> None:
    body = b'{"grant_type": "client_credentials"}'
    result = request(body, auth=(basic("app_1", "s"),), content_type="application/json")
    assert error(result) == (ErrorCode.INVALID_REQUEST, 400)


def test_missing_content_type_is_refused() -> None:
    assert error(request(auth=(basic("app_1", "s"),), content_type=None)) == (ErrorCode.INVALID_REQUEST, 400)


def test_non_utf8_charset_is_refused() -> None:
    result = request(auth=(basic("a", "b"),), content_type=FORM + "; charset=latin-1")
    assert error(result) == (ErrorCode.INVALID_REQUEST, 400)


@pytest.mark.parametrize("body", [b"grant_type", b"\xff\xfe=1", b"grant_type=%ff"])
def test_malformed_form_body_is_refused(body: bytes) -> None:
    assert error(request(body, auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def test_too_many_parameters_are_refused() -> None:
    body = GRANT + b"".join(b"&p%d=1" % i for i in range(40))
    assert error(request(body, auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def test_missing_grant_type_is_invalid_request() -> None:
    assert error(request(b"", auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def test_empty_grant_type_counts_as_missing() -> None:
    assert error(request(b"grant_type=", auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


@pytest.mark.parametrize("grant", [b"password", b"authorization_code", b"CLIENT_CREDENTIALS", b"refresh_token"])
def test_other_grant_type_is_unsupported(grant: bytes) -> None:
    result = request(b"grant_type=" + grant, auth=(basic("app_1", "s"),))
    assert error(result) == (ErrorCode.UNSUPPORTED_GRANT_TYPE, 400)


def test_scope_parameter_is_invalid_scope() -> None:
    result = request(GRANT + b"&scope=sites%3Aread", auth=(basic("app_1", "s"),))
    assert error(result) == (ErrorCode.INVALID_SCOPE, 400)


def test_empty_scope_parameter_counts_as_omitted() -> None:
    assert isinstance(request(GRANT + b"&scope=", auth=(basic("app_1", "s"),)), ClientCredentials)


def test_missing_credentials_are_invalid_client_with_challenge() -> None:
    result = request()
    assert error(result) == (ErrorCode.INVALID_CLIENT, 401)
    assert isinstance(result, TokenError) and result.headers()["WWW-Authenticate"].startswith("Basic ")


def test_client_id_without_secret_is_invalid_client() -> None:
    assert error(request(GRANT + b"&client_id=app_1")) == (ErrorCode.INVALID_CLIENT, 401)


def test_secret_without_client_id_is_invalid_client() -> None:
    assert error(request(GRANT + b"&client_secret=s")) == (ErrorCode.INVALID_CLIENT, 401)


@pytest.mark.parametrize(
    "header",
    [
        "Bearer abc",
        "Basic !!!",
        "Basic " + base64.b64encode(b"nocolon").decode(),
        "Basic " + base64.b64encode(b":secret").decode(),
        "Basic " + base64.b64encode(b"app_1:").decode(),
        "Basic " + base64.b64encode(b"\xff:\xfe").decode(),
        "Basic " + base64.b64encode(b"%ff:x").decode(),
        "Basic",
    ],
)
def test_malformed_authorization_is_invalid_client(header: str) -> None:
    result = request(auth=(header,))
    assert error(result) == (ErrorCode.INVALID_CLIENT, 401)
    assert isinstance(result, TokenError) and "WWW-Authenticate" in result.headers()


def test_two_authorization_headers_are_refused() -> None:
    assert error(request(auth=(basic("a", "b"), basic("c", "d")))) == (ErrorCode.INVALID_REQUEST, 400)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_get_405_with_allow(method: str) -> None:
    result = request(method=method)
    assert error(result) == (ErrorCode.INVALID_REQUEST, 405)
    assert isinstance(result, TokenError) and result.headers() == {"Allow": "POST"}


def test_error_body_has_rfc6749_fields() -> None:
    result = request(b"grant_type=password", auth=(basic("a", "b"),))
    assert isinstance(result, TokenError)
    assert result.body() == {
        "error": "unsupported_grant_type",
        "error_description": "only client_credentials is supported",
    }


def test_failed_authentication_maps_to_invalid_client() -> None:
    mapped = token_error_for(ClientAuthenticationFailed("app_1"))
    assert (mapped.error, mapped.status, "WWW-Authenticate" in mapped.headers()) == (
        ErrorCode.INVALID_CLIENT,
        401,
        True,
    )


def test_unknown_client_and_wrong_secret_map_alike() -> None:
    assert token_error_for(ClientAuthenticationFailed("nobody")) == token_error_for(ClientAuthenticationFailed("app"))


def test_too_many_attempts_maps_to_429_with_retry_after() -> None:
    mapped = token_error_for(TooManyFailedAttempts(17))
    assert mapped.status == 429 and mapped.headers() == {"Retry-After": "17"}


def test_unexpected_error_maps_to_server_error_without_details() -> None:
    mapped = token_error_for(RuntimeError("db password is hunter2"))
    assert mapped.status == 500 and "hunter2" not in mapped.description


def test_leading_byte_order_mark_is_skipped() -> None:
    result = request(b"\xef\xbb\xbf" + GRANT, auth=(basic("app_1", "s3cret"),))
    assert result == ClientCredentials("app_1", "s3cret", AuthMethod.BASIC)


@pytest.mark.parametrize(
    "body", [GRANT + b"&client_id=app_%00&client_secret=s", GRANT + b"&client_id=app_1&client_secret=s%00"]
)
def test_parameter_holding_nul_is_invalid_request(body: bytes) -> None:
    assert error(request(body)) == (ErrorCode.INVALID_REQUEST, 400)


def test_basic_credentials_holding_nul_are_invalid_request() -> None:
    assert error(request(auth=(basic("app_\x00", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def _jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


ASSERTION = _jwt({"iss": "app_1", "sub": "app_1"})
ASSERTED = f"grant_type=client_credentials&client_assertion_type={quote_plus(JWT_BEARER)}&client_assertion={ASSERTION}"


def test_a_client_assertion_names_its_client_by_sub() -> None:
    assert request(ASSERTED.encode()) == ClientAssertion("app_1", ASSERTION)
    assert request(f"{ASSERTED}&client_id=app_1".encode()) == ClientAssertion("app_1", ASSERTION)


def test_a_client_id_other_than_the_assertions_sub_is_invalid_client() -> None:
    assert error(request(f"{ASSERTED}&client_id=app_2".encode())) == (ErrorCode.INVALID_CLIENT, 401)


def test_an_assertion_with_a_secret_is_two_methods() -> None:
    assert error(request(f"{ASSERTED}&client_secret=s".encode())) == (ErrorCode.INVALID_REQUEST, 400)
    assert error(request(ASSERTED.encode(), auth=(basic("app_1", "s"),))) == (ErrorCode.INVALID_REQUEST, 400)


def test_an_assertion_of_another_type_is_invalid_client() -> None:
    body = f"grant_type=client_credentials&client_assertion_type=urn%3Aother&client_assertion={ASSERTION}"
    assert error(request(body.encode())) == (ErrorCode.INVALID_CLIENT, 401)


def test_an_assertion_that_is_not_a_jwt_is_invalid_client() -> None:
    body = ASSERTED.replace(ASSERTION, "not-a-jwt")
    assert error(request(body.encode())) == (ErrorCode.INVALID_CLIENT, 401)


def test_an_assertion_without_its_type_is_invalid_request() -> None:
    body = f"grant_type=client_credentials&client_assertion={ASSERTION}"
    assert error(request(body.encode())) == (ErrorCode.INVALID_REQUEST, 400)


def operation(body: bytes, *, auth: tuple[str, ...] = ()) -> TokenOperation | TokenError:
    return parse_token_operation(RawTokenRequest("POST", "", FORM, auth, body), "revocation")


def test_an_operation_carries_its_token_and_credentials() -> None:
    parsed = operation(b"token=abc&token_type_hint=access_token", auth=(basic("app_1", "s"),))
    assert parsed == TokenOperation(ClientCredentials("app_1", "s", AuthMethod.BASIC), "abc")


def test_an_operation_without_a_token_is_invalid_request() -> None:
    assert error(operation(b"token_type_hint=access_token", auth=(basic("app_1", "s"),))) == (
        ErrorCode.INVALID_REQUEST,
        400,
    )


def test_an_operation_without_client_authentication_is_invalid_client() -> None:
    assert error(operation(b"token=abc")) == (ErrorCode.INVALID_CLIENT, 401)


def test_an_operation_token_in_the_query_is_refused() -> None:
    parsed = parse_token_operation(RawTokenRequest("POST", "token=abc", FORM, (basic("a", "s"),), b""), "revocation")
    assert error(parsed) == (ErrorCode.INVALID_REQUEST, 400)


def test_another_clients_token_is_unauthorized_client() -> None:
    result = token_error_for(TokenOfAnotherClient("app_1"))
    assert (result.error, result.status) == (ErrorCode.UNAUTHORIZED_CLIENT, 400)
