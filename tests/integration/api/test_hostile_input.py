"""Input the API refuses (decisions.md "Input the service refuses"), through a real server on both backends: a 4xx
problem, never a 5xx, and the store still answers afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.integration.edge.conftest import Served, served  # noqa: F401  (the fixture)

START = "/sessions"


@pytest.fixture
async def api(served: Served) -> AsyncIterator[httpx.AsyncClient]:  # noqa: F811
    async with httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    ) as client:
        yield client


def is_problem(response: httpx.Response, status: int) -> bool:
    return response.status_code == status and response.headers["content-type"] == "application/problem+json"


async def post_raw(api: httpx.AsyncClient, path: str, body: bytes, content_type: str) -> httpx.Response:
    return await api.post(path, content=body, headers={"Content-Type": content_type})


async def test_body_in_another_charset_is_400(api: httpx.AsyncClient) -> None:
    body = '{"chargePointId":"CÉ","connectorId":1,"idTag":"T"}'.encode("latin-1")
    response = await post_raw(api, START, body, "application/json; charset=iso-8859-1")
    assert is_problem(response, 400), response.text


async def test_body_declared_utf8_holding_other_bytes_is_400(api: httpx.AsyncClient) -> None:
    response = await post_raw(api, START, b'{"chargePointId":"C\xe9","connectorId":1,"idTag":"T"}', "application/json")
    assert is_problem(response, 400), response.text


async def test_body_with_a_byte_order_mark_is_read(api: httpx.AsyncClient) -> None:
    body = b'\xef\xbb\xbf{"chargePointId":"NOPE","connectorId":1,"idTag":"T"}'
    response = await post_raw(api, START, body, "application/json")
    assert is_problem(response, 404), response.text


async def test_string_with_a_lone_surrogate_is_400_naming_the_field(api: httpx.AsyncClient) -> None:
    body = b'{"chargePointId":"CS-1","connectorId":1,"idTag":"T\\ud800"}'
    response = await post_raw(api, START, body, "application/json")
    assert is_problem(response, 400), response.text
    assert response.json()["field"] == "idTag"


async def test_string_with_nul_is_400(api: httpx.AsyncClient) -> None:
    body = b'{"chargePointId":"CS\\u0000","connectorId":1,"idTag":"T"}'
    response = await post_raw(api, START, body, "application/json")
    assert is_problem(response, 400), response.text


@pytest.mark.parametrize("value", [2**31, 2**64, 10**40, -(2**63) - 1])
async def test_integer_out_of_range_in_a_command_body_is_422(api: httpx.AsyncClient, value: int) -> None:
    response = await api.post(START, json={"chargePointId": "CS-1", "connectorId": value, "idTag": "T"})
    assert is_problem(response, 422), response.text
    response = await api.post("/charge-points/CS-1/unlock", json={"connectorId": value})
    assert is_problem(response, 422), response.text


@pytest.mark.parametrize("transaction_id", ["99999999999999999999999", "9223372036854775808", "2147483648", "1e3"])
async def test_malformed_transaction_id_to_stop_is_422(api: httpx.AsyncClient, transaction_id: str) -> None:
    response = await api.post(f"/sessions/{transaction_id}/stop")
    assert is_problem(response, 422), response.text


async def test_nul_in_a_path_is_400(api: httpx.AsyncClient) -> None:
    response = await api.post("/charge-points/CS%00/reset", json={"type": "Soft"})
    assert is_problem(response, 400), response.text


async def test_nul_in_a_query_is_400(api: httpx.AsyncClient) -> None:
    response = await api.get("/transactions", params={"siteId": "s\x00"})
    assert is_problem(response, 400), response.text


async def test_body_over_one_mebibyte_is_413(api: httpx.AsyncClient) -> None:
    body = b'{"chargePointId":"' + b"x" * (1 << 20) + b'","connectorId":1,"idTag":"T"}'
    response = await post_raw(api, START, body, "application/json")
    assert is_problem(response, 413), response.text


async def test_the_store_still_answers_after_hostile_input(api: httpx.AsyncClient) -> None:
    await post_raw(api, START, b'{"chargePointId":"CS-1","connectorId":1,"idTag":"T\\ud800"}', "application/json")
    await api.post("/sessions/99999999999999999999999/stop")
    response = await api.get("/transactions")
    assert response.status_code == 200


async def test_a_method_the_path_lacks_is_405_naming_every_method_it_has(api: httpx.AsyncClient) -> None:
    # RFC 9110 §15.5.6: the `Allow` of a 405 lists the methods of the resource, not of one route of it.
    for method, path, allowed in (
        ("PUT", "/sites", "GET, POST"),
        ("OPTIONS", "/sites/site_x", "GET, PATCH"),
        ("POST", "/webhooks/wh_x", "GET, PATCH, DELETE"),
    ):
        response = await api.request(method, path)
        assert is_problem(response, 405), (method, path, response.text)
        assert response.headers["allow"] == allowed, (method, path)


async def test_a_path_nothing_serves_is_a_problem(served: Served) -> None:  # noqa: F811
    async with httpx.AsyncClient(base_url=served.http_url, timeout=10) as client:
        for path in ("/api/v1/no-such-thing", "/no-such-thing", "/auth/no-such-thing"):
            assert is_problem(await client.get(path), 404), path
        response = await client.put("/health")
        assert is_problem(response, 405) and response.headers["allow"] == "GET, HEAD"


async def test_an_integer_written_with_a_zero_fraction_is_that_integer(api: httpx.AsyncClient) -> None:
    # JSON Schema's `integer` is any number without a fractional part: 1.0 is 1, so it reaches the use case (404:
    # no such charge point), while 1.5, "1" and true do not match the document and are 422.
    body = {"chargePointId": "NOPE", "connectorId": 1.0, "idTag": "T"}
    assert is_problem(await api.post(START, json=body), 404)
    for wrong in (1.5, "1", True):
        response = await api.post(START, json={**body, "connectorId": wrong})
        assert is_problem(response, 422) and response.json()["field"] == "connectorId", wrong
