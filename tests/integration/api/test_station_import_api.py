"""`POST /api/v1/stations/import`: many stations of one site in one call, all or none (that on both backends)."""

from __future__ import annotations

import pytest

from tests.integration.api.test_admin_parity import Api, api

pytestmark = pytest.mark.sqlite_only(reason="the import's answers over the API")

__all__ = ["api"]


async def test_an_import_creates_every_station_and_answers_201(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    body = {"stations": [{"id": "IMP-1", "chargePoints": 2, "connectors": 2}, {"id": "IMP-2", "password": "p" * 16}]}
    answer = await api.client.post(f"/sites/{api.tenant.site_id}/stations/import", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    assert answer.json() == {"siteId": api.tenant.site_id, "created": 2, "stationIds": ["IMP-1", "IMP-2"]}
    shown = await api.client.get("/stations/IMP-1", headers=headers)
    assert shown.json()["chargePointIds"] == ["IMP-1-1", "IMP-1-2"]


@pytest.mark.both_stores(reason="all or none is one unit of work on each store")
async def test_a_refused_import_lists_each_bad_row_and_creates_nothing(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    url = f"/sites/{api.tenant.site_id}/stations/import"
    body = {"stations": [{"id": "IMP-1"}, {"id": api.tenant.station_id}, {"id": "IMP-3", "password": "short"}]}
    answer = await api.client.post(url, json=body, headers=headers)
    assert answer.status_code == 422 and answer.headers["content-type"] == "application/problem+json"
    # A field the schema already bounds is refused by the schema, named by its place in the list.
    assert [e["field"] for e in answer.json()["errors"]] == ["stations.2.password"]
    body["stations"] = body["stations"][:2]
    answer = await api.client.post(url, json=body, headers=headers)
    assert answer.status_code == 409  # sound rows that clash with what the store holds
    assert answer.json()["errors"] == [
        {"field": "id", "message": f"station {api.tenant.station_id!r} already exists", "line": 2}
    ]
    assert (await api.client.get("/stations/IMP-1", headers=headers)).status_code == 404


async def test_an_import_into_another_companys_site_is_404_and_needs_sites_write(api: Api) -> None:
    body = {"stations": [{"id": "IMP-1"}]}
    foreign = f"/sites/{api.other.site_id}/stations/import"
    answer = await api.client.post(foreign, json=body, headers=await api.as_("sites:write"))
    assert answer.status_code == 404
    own = f"/sites/{api.tenant.site_id}/stations/import"
    answer = await api.client.post(own, json=body, headers=await api.as_("sites:read"))
    assert answer.status_code == 403


async def test_an_empty_list_or_a_wrong_type_is_422(api: Api) -> None:
    headers = await api.as_("sites:write")
    for stations in ([], [{"id": "IMP-1", "chargePoints": "two"}], [{"id": "IMP-1", "colour": "red"}]):
        answer = await api.client.post(
            f"/sites/{api.tenant.site_id}/stations/import", json={"stations": stations}, headers=headers
        )
        assert answer.status_code == 422, stations
