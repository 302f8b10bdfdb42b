"""Charging sessions over the chargenet API (asyncio): start one, follow its request to the transaction the station
started, and read that transaction to its stop with its energy and meter samples.

    async with AsyncTokenClient(TOKEN_URL, CLIENT_ID, CLIENT_SECRET) as tokens:
        api = AsyncSessionsClient(BASE_URL, tokens)
        request_id = await api.start_session("CP-0042", 1, "04A2B3C4D5")
        followed = await api.follow_session(request_id)
        print(followed.transaction.energy, [s.delivered for s in followed.samples])

`POST /sessions` answers once the station accepted the remote start (the `requestId` is the handle); the station
starts the transaction when the driver plugs in, which may take minutes; `follow_session` polls
`GET /sessions/requests/{requestId}` until it names the transaction, then `GET /transactions/{id}` until it
stopped, and reads its samples page by page. Every refusal is a `ChargenetApiError` with the RFC 9457 problem;
a refused start carries the `request_id` it was made under.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

import httpx

from chargenet_partner.tokens import AsyncTokenClient

# Request statuses after which no transaction follows. A `Timeout` may still be followed by one (a station that
# answered late): the wait's own deadline ends that one.
UNSTARTED = frozenset({"Rejected", "NotConnected", "Failed"})


class ChargenetApiError(Exception):
    """The API refused a call: `status` and the RFC 9457 `problem` (its `title`, `detail`, ...); `request_id` when
    a session start was refused after its request was made."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        detail = problem.get("detail") or problem.get("title") or ""
        super().__init__(f"{status}: {detail}".rstrip(": "))
        self.status = status
        self.problem = problem
        request_id = problem.get("requestId")
        self.request_id = request_id if isinstance(request_id, str) else None


class SessionNotStarted(Exception):
    """No transaction followed the request: the station refused it, was not connected, did not answer, or the
    driver did not plug in within the wait. `status` is the request's (`Pending` or `Accepted` after a wait)."""

    def __init__(self, request_id: str, status: str) -> None:
        super().__init__(f"no transaction followed session request {request_id} ({status})")
        self.request_id = request_id
        self.status = status


@dataclass(frozen=True, slots=True)
class SessionRequest:
    request_id: str
    status: str  # Pending, Accepted, Rejected, NotConnected, Timeout or Failed
    transaction_id: int | None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, body: dict[str, Any]) -> SessionRequest:
        return cls(body["requestId"], body["status"], body.get("transactionId"), body)


@dataclass(frozen=True, slots=True)
class Transaction:
    transaction_id: int
    active: bool
    meter_start: float  # kWh
    meter_stop: float | None  # kWh, once stopped
    energy: float | None  # kWh delivered, once stopped
    reason: str | None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, body: dict[str, Any]) -> Transaction:
        return cls(
            body["transactionId"],
            body["active"],
            body["meterStart"],
            body.get("meterStop"),
            body.get("energy"),
            body.get("reason"),
            body,
        )


@dataclass(frozen=True, slots=True)
class Sample:
    at: str  # ISO 8601
    energy: float  # the meter's register, kWh
    delivered: float  # kWh since the start
    power: float | None  # W, when reported


@dataclass(frozen=True, slots=True)
class FollowedSession:
    request: SessionRequest
    transaction: Transaction
    samples: list[Sample]


class AsyncSessionsClient:
    """The API at `base_url` (`https://.../api/v1`), authenticated with `tokens` (scopes `sessions:write` and
    `transactions:read`). Pass `http` to share an `httpx.AsyncClient`; this client does not close one it was
    given."""

    def __init__(
        self,
        base_url: str,
        tokens: AsyncTokenClient,
        *,
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.tokens = tokens
        self._http = http or httpx.AsyncClient(timeout=45)  # a start waits up to 30 s for the station
        self._owned = http is None
        self._sleep = sleep

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {await self.tokens.token()}"}
        response = await self._http.request(method, self.base_url + path, headers=headers, **kwargs)
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"title": response.reason_phrase}
            raise ChargenetApiError(response.status_code, problem if isinstance(problem, dict) else {})
        body = response.json()
        assert isinstance(body, dict)
        return body

    async def start_session(self, charge_point_id: str, connector_id: int, id_tag: str) -> str:
        """Ask the station to start a session; returns the `requestId` once the station accepted.
        `ChargenetApiError` otherwise (409 refused, 503 not connected, 504 no answer, with `request_id`)."""
        body = {"chargePointId": charge_point_id, "connectorId": connector_id, "idTag": id_tag}
        answer = await self._call("POST", "/sessions", json=body)
        return str(answer["requestId"])

    async def session_request(self, request_id: str) -> SessionRequest:
        return SessionRequest.of(await self._call("GET", f"/sessions/requests/{request_id}"))

    async def stop_session(self, transaction_id: int) -> None:
        await self._call("POST", f"/sessions/{transaction_id}/stop")

    async def transaction(self, transaction_id: int) -> Transaction:
        return Transaction.of(await self._call("GET", f"/transactions/{transaction_id}"))

    async def samples(self, transaction_id: int, *, page_size: int = 500) -> AsyncIterator[Sample]:
        """Every stored meter sample of the transaction, oldest first, page after page."""
        params: dict[str, Any] = {"limit": page_size}
        while True:
            page = await self._call("GET", f"/transactions/{transaction_id}/samples", params=params)
            for item in page["items"]:
                yield Sample(item["at"], item["energy"], item["delivered"], item.get("power"))
            if page["next"] is None:
                return
            params["cursor"] = page["next"]

    async def wait_for_transaction(
        self, request_id: str, *, every: float = 5.0, within: float = 600.0
    ) -> SessionRequest:
        """Poll the request until it names its transaction; `SessionNotStarted` when it cannot any more, or after
        `within` seconds (a driver who never plugged in)."""
        deadline = time.monotonic() + within
        while True:
            request = await self.session_request(request_id)
            if request.transaction_id is not None:
                return request
            if request.status in UNSTARTED or time.monotonic() >= deadline:
                raise SessionNotStarted(request_id, request.status)
            await self._sleep(every)

    async def wait_for_stop(self, transaction_id: int, *, every: float = 30.0) -> Transaction:
        """Poll the transaction until it stopped (a session lasts as long as the driver charges)."""
        while True:
            transaction = await self.transaction(transaction_id)
            if not transaction.active:
                return transaction
            await self._sleep(every)

    async def follow_session(
        self, request_id: str, *, every: float = 5.0, start_within: float = 600.0, stop_every: float = 30.0
    ) -> FollowedSession:
        """The session of `request_id` from its request to its stop: the request, the stopped transaction with
        its energy, and its samples."""
        request = await self.wait_for_transaction(request_id, every=every, within=start_within)
        assert request.transaction_id is not None
        transaction = await self.wait_for_stop(request.transaction_id, every=stop_every)
        samples = [sample async for sample in self.samples(transaction.transaction_id)]
        return FollowedSession(request, transaction, samples)

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
