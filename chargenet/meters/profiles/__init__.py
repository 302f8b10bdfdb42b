"""Meter profiles by the names the CLI and API use (decisions.md §4 "Meters")."""

from __future__ import annotations

from chargenet.errors import InvalidInput
from chargenet.meters.profiles.abb import ABB_B23, ABB_B24
from chargenet.meters.profiles.base import (
    DataType,
    FunctionCode,
    Profile,
    ReadBlock,
    Register,
    WordOrder,
    decode_value,
    encode_value,
)
from chargenet.meters.profiles.carlo_gavazzi import EM24, EM340
from chargenet.meters.profiles.eastron import SDM72V1, SDM72V2, SDM120, SDM630

PROFILES: dict[str, Profile] = {
    profile.name: profile for profile in (SDM630, SDM72V2, SDM72V1, SDM120, ABB_B23, ABB_B24, EM24, EM340)
}


def get_profile(name: str) -> Profile:
    """The profile called `name`; InvalidInput (field `profile`) listing the known names otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise InvalidInput(f"unknown meter profile {name!r}; known: {', '.join(PROFILES)}", field="profile") from None


__all__ = [
    "PROFILES",
    "DataType",
    "FunctionCode",
    "Profile",
    "ReadBlock",
    "Register",
    "WordOrder",
    "decode_value",
    "encode_value",
    "get_profile",
]
