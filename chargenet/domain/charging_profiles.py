"""The charging profiles the edge sends a station for its allowances, and their merge with an upstream's (no I/O).

decisions.md "Site power": stack levels cannot make a lower profile win within one purpose, so a station holds, per
connector and purpose, one profile from the edge: the minimum of the edge's limit and the upstream's profile of that
purpose, if the upstream set one.

- The edge's own profiles have fixed ids per connector and purpose (`profile_id`), so each one sent replaces the
  last on the station, and stack level `STACK_LEVEL` (0): every station supports it, and since every profile of a
  purpose reaches the station through the edge, no other one competes with it.
- The safe default is a TxDefaultProfile per connector; a session's allowance is a TxProfile naming its
  transaction; both in amperes per phase, one period from the start, `chargingProfileKind` Relative (the same limit
  whenever a transaction starts).
- 2.0.1 carries the same two purposes with an EVSE id and the station's transaction id (a string).
- The merge keeps the upstream's schedule and caps each of its periods by the edge's limit, converted to watts at
  `VOLTS` per phase when the upstream speaks in watts: the lower of both at every moment. It carries the edge's id
  and stack level, so that it replaces the edge's profile rather than stacking beside it. Both generations merge
  alike (`Wording`: where each keeps the profile, its connector or EVSE, and how a ClearChargingProfile names it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chargenet.domain.generations import OCPP201

Payload = dict[str, Any]

STACK_LEVEL = 0
VOLTS = 230.0
TX_DEFAULT = "TxDefaultProfile"
TX = "TxProfile"
EDGE_PURPOSES = (TX_DEFAULT, TX)
_ID_BASE = {TX_DEFAULT: 900_000, TX: 910_000}


def profile_id(purpose: str, connector_id: int) -> int:
    """The id of the edge's profile of `purpose` on a connector: one per connector and purpose."""
    return _ID_BASE.get(purpose, 920_000) + connector_id


@dataclass(frozen=True, slots=True)
class Limit:
    """What the edge allows one connector for one purpose: amperes per phase on `phases` phases."""

    purpose: str
    connector_id: int
    amps: float
    phases: int
    transaction_id: int | str | None = None  # a TxProfile's transaction: the edge's id (1.6), the station's (2.0.1)


def _schedule(limit: Limit) -> Payload:
    return {
        "chargingRateUnit": "A",
        "chargingSchedulePeriod": [{"startPeriod": 0, "limit": round(limit.amps, 1), "numberPhases": limit.phases}],
    }


def profile_16(limit: Limit) -> Payload:
    """A 1.6 SetChargingProfile request for the limit."""
    profile: Payload = {
        "chargingProfileId": profile_id(limit.purpose, limit.connector_id),
        "stackLevel": STACK_LEVEL,
        "chargingProfilePurpose": limit.purpose,
        "chargingProfileKind": "Relative",
        "chargingSchedule": _schedule(limit),
    }
    if limit.purpose == TX and limit.transaction_id is not None:
        profile["transactionId"] = limit.transaction_id
    return {"connectorId": limit.connector_id, "csChargingProfiles": profile}


def profile_201(limit: Limit) -> Payload:
    """A 2.0.1 SetChargingProfile request for the limit (the connector's number is its EVSE's id)."""
    profile: Payload = {
        "id": profile_id(limit.purpose, limit.connector_id),
        "stackLevel": STACK_LEVEL,
        "chargingProfilePurpose": limit.purpose,
        "chargingProfileKind": "Relative",
        "chargingSchedule": [{"id": profile_id(limit.purpose, limit.connector_id), **_schedule(limit)}],
    }
    if limit.purpose == TX and limit.transaction_id is not None:
        profile["transactionId"] = str(limit.transaction_id)
    return {"evseId": limit.connector_id, "chargingProfile": profile}


def _cap_schedule(schedule: Payload, edge: Limit) -> None:
    """Cap each period of one schedule (either generation's) by the edge's limit, in the schedule's unit."""
    in_watts = schedule.get("chargingRateUnit") == "W"
    for period in schedule["chargingSchedulePeriod"]:
        cap = edge.amps
        if in_watts:
            cap = edge.amps * VOLTS * int(period.get("numberPhases", edge.phases))
        period["limit"] = round(min(float(period["limit"]), cap), 1)


def _as_the_edges(profile: Payload, id_field: str, connector_id: int) -> None:
    """An upstream's profile of a purpose the edge limits takes the edge's id and stack level, even while the edge
    has no limit of its own there yet: the edge's next profile for that connector then replaces it, where one at the
    upstream's stack level would have stayed beside it, and won."""
    purpose = profile["chargingProfilePurpose"]
    if purpose in EDGE_PURPOSES:
        profile[id_field] = profile_id(purpose, connector_id)
        profile["stackLevel"] = STACK_LEVEL


def merged_16(edge: Limit | None, upstream: Payload | None) -> Payload | None:
    """The one 1.6 SetChargingProfile request a connector gets for a purpose: the edge's limit, the upstream's
    profile (a SetChargingProfile request as the upstream sent it, with edge transaction ids), or the lower of both
    at every moment. None when neither says anything."""
    if upstream is None:
        return None if edge is None else profile_16(edge)
    merged = copy.deepcopy(upstream)
    profile = merged["csChargingProfiles"]
    _as_the_edges(profile, "chargingProfileId", int(merged["connectorId"]))
    if edge is None:
        return merged
    if edge.purpose == TX and edge.transaction_id is not None:
        profile["transactionId"] = edge.transaction_id
    _cap_schedule(profile["chargingSchedule"], edge)
    return merged


def merged_201(edge: Limit | None, upstream: Payload | None) -> Payload | None:
    """`merged_16` for a 2.0.1 station: the upstream's request names an EVSE and the station's transaction id, and
    its profile may carry several schedules, each capped alike."""
    if upstream is None:
        return None if edge is None else profile_201(edge)
    merged = copy.deepcopy(upstream)
    profile = merged["chargingProfile"]
    _as_the_edges(profile, "id", int(merged["evseId"]))
    if edge is None:
        return merged
    if edge.purpose == TX and edge.transaction_id is not None:
        profile["transactionId"] = str(edge.transaction_id)
    for schedule in profile["chargingSchedule"]:
        _cap_schedule(schedule, edge)
    return merged


def clear_matches(request: Payload, connector_id: int, profile: Payload) -> bool:
    """Whether a 1.6 ClearChargingProfile request clears an upstream profile kept for `connector_id`."""
    inner = profile["csChargingProfiles"]
    if "id" in request:
        return bool(request["id"] == inner.get("chargingProfileId"))
    if "connectorId" in request and request["connectorId"] != connector_id:
        return False
    if "chargingProfilePurpose" in request and request["chargingProfilePurpose"] != inner["chargingProfilePurpose"]:
        return False
    return not ("stackLevel" in request and request["stackLevel"] != inner.get("stackLevel"))


def clear_matches_201(request: Payload, evse_id: int, profile: Payload) -> bool:
    """Whether a 2.0.1 ClearChargingProfile request (an id, or criteria: EVSE, purpose, stack level) clears an
    upstream profile kept for `evse_id`."""
    inner = profile["chargingProfile"]
    if "chargingProfileId" in request:
        return bool(request["chargingProfileId"] == inner.get("id"))
    criteria = request.get("chargingProfileCriteria", {})
    if "evseId" in criteria and criteria["evseId"] != evse_id:
        return False
    if "chargingProfilePurpose" in criteria and criteria["chargingProfilePurpose"] != inner["chargingProfilePurpose"]:
        return False
    return not ("stackLevel" in criteria and criteria["stackLevel"] != inner.get("stackLevel"))


def limit_of(request: Payload) -> float | None:
    """The limit of a 1.6 SetChargingProfile request's first period (the one in force when it starts), in its unit."""
    periods = request["csChargingProfiles"]["chargingSchedule"]["chargingSchedulePeriod"]
    if not periods:
        return None
    return float(min(periods, key=lambda p: p["startPeriod"])["limit"])


@dataclass(frozen=True, slots=True)
class Wording:
    """How one generation words the profiles of an upstream: what a station sends through the edge is the same
    merge whichever it speaks."""

    profile_field: str  # the request's field holding the profile
    connector_field: str  # the request's field naming the connector (1.6) or EVSE (2.0.1)
    profile: Callable[[Limit], Payload]
    merged: Callable[[Limit | None, Payload | None], Payload | None]
    clear_matches: Callable[[Payload, int, Payload], bool]
    clear_field: str  # the ClearChargingProfile request's field naming one profile by its id

    def key(self, request: Payload) -> tuple[int, str]:
        """The connector and purpose an upstream's SetChargingProfile is about."""
        return int(request[self.connector_field]), str(request[self.profile_field]["chargingProfilePurpose"])

    def on_connector(self, request: Payload, connector_id: int) -> Payload:
        return {**request, self.connector_field: connector_id}

    def transaction_of(self, request: Payload) -> int | str | None:
        """The transaction a kept profile names, if any."""
        named = request[self.profile_field].get("transactionId")
        return named if isinstance(named, int | str) else None

    def clear_edge_profile(self, connector_id: int, purpose: str) -> Payload:
        """The ClearChargingProfile request that takes the edge's profile of `purpose` off a connector."""
        return {self.clear_field: profile_id(purpose, connector_id)}

    def speaks(self, request: Payload) -> bool:
        """Whether a kept request is in this generation's words (a station may come back speaking the other)."""
        return self.profile_field in request


WORDING_16 = Wording("csChargingProfiles", "connectorId", profile_16, merged_16, clear_matches, "id")
WORDING_201 = Wording("chargingProfile", "evseId", profile_201, merged_201, clear_matches_201, "chargingProfileId")


def wording(generation: str) -> Wording:
    """The wording of a station's generation (its subprotocol)."""
    return WORDING_201 if generation == OCPP201 else WORDING_16
