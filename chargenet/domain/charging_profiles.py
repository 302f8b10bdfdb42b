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
  and stack level, so that it replaces the edge's profile rather than stacking beside it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

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


def merged_16(edge: Limit | None, upstream: Payload | None) -> Payload | None:
    """The one 1.6 SetChargingProfile request a connector gets for a purpose: the edge's limit, the upstream's
    profile (a SetChargingProfile request as the upstream sent it, with edge transaction ids), or the lower of both
    at every moment. None when neither says anything."""
    if upstream is None:
        return None if edge is None else profile_16(edge)
    if edge is None:
        return upstream
    merged = copy.deepcopy(upstream)
    profile = merged["csChargingProfiles"]
    profile["chargingProfileId"] = profile_id(edge.purpose, edge.connector_id)
    profile["stackLevel"] = STACK_LEVEL
    if edge.purpose == TX and edge.transaction_id is not None:
        profile["transactionId"] = edge.transaction_id
    schedule = profile["chargingSchedule"]
    in_watts = schedule.get("chargingRateUnit") == "W"
    for period in schedule["chargingSchedulePeriod"]:
        cap = edge.amps
        if in_watts:
            cap = edge.amps * VOLTS * int(period.get("numberPhases", edge.phases))
        period["limit"] = round(min(float(period["limit"]), cap), 1)
    return merged


def upstream_key(payload: Payload) -> tuple[int, str]:
    """The connector and purpose an upstream's 1.6 SetChargingProfile is about."""
    return int(payload["connectorId"]), str(payload["csChargingProfiles"]["chargingProfilePurpose"])


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


def limit_of(request: Payload) -> float | None:
    """The limit of a 1.6 SetChargingProfile request's first period (the one in force when it starts), in its unit."""
    periods = request["csChargingProfiles"]["chargingSchedule"]["chargingSchedulePeriod"]
    if not periods:
        return None
    return float(min(periods, key=lambda p: p["startPeriod"])["limit"])
