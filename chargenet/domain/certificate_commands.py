"""The certificate commands in each generation's words (OCPP 1.6 Security Whitepaper, OCPP 2.0.1 A/M blocks).

The API's bodies are 1.6-shaped, as for every command (decisions.md §5 "Commands across generations"):
`certificateType` is 1.6's `CentralSystemRootCertificate` or `ManufacturerRootCertificate`, which a 2.0.1 station
gets as `CSMSRootCertificate` and `ManufacturerRootCertificate`; 2.0.1's own `V2GRootCertificate` and
`MORootCertificate` are refused for a 1.6 station. Asking for a new CSR is ExtendedTriggerMessage
`SignChargePointCertificate` on 1.6 and TriggerMessage `SignChargingStationCertificate` on 2.0.1.
"""

from __future__ import annotations

from typing import Any, Literal

from chargenet.domain.generations import OCPP201
from chargenet.errors import InvalidInput

Payload = dict[str, Any]

RootType = Literal[
    "CentralSystemRootCertificate", "ManufacturerRootCertificate", "V2GRootCertificate", "MORootCertificate"
]
ROOT_TYPES: tuple[RootType, ...] = (
    "CentralSystemRootCertificate",
    "ManufacturerRootCertificate",
    "V2GRootCertificate",
    "MORootCertificate",
)
_ROOT_TYPES_201 = {"CentralSystemRootCertificate": "CSMSRootCertificate"}
_ROOT_TYPES_201_ONLY = frozenset({"V2GRootCertificate", "MORootCertificate"})


def root_type(generation: str, certificate_type: str) -> str:
    """The API's `certificateType` in the station's generation's words; `InvalidInput` for one it has not."""
    if generation == OCPP201:
        return _ROOT_TYPES_201.get(certificate_type, certificate_type)
    if certificate_type in _ROOT_TYPES_201_ONLY:
        raise InvalidInput(f"{certificate_type} is OCPP 2.0.1's; an OCPP 1.6 station has none", "certificateType")
    return certificate_type


def install_certificate(generation: str, certificate_type: str, certificate_pem: str) -> tuple[str, Payload]:
    return "InstallCertificate", {
        "certificateType": root_type(generation, certificate_type),
        "certificate": certificate_pem,
    }


def delete_certificate(hash_data: Payload) -> tuple[str, Payload]:
    """`certificateHashData` is the same in both generations."""
    return "DeleteCertificate", {"certificateHashData": hash_data}


def installed_certificate_ids(generation: str, certificate_type: str) -> tuple[str, Payload]:
    """1.6 asks for one type; 2.0.1 for a list of them."""
    worded = root_type(generation, certificate_type)
    if generation == OCPP201:
        return "GetInstalledCertificateIds", {"certificateType": [worded]}
    return "GetInstalledCertificateIds", {"certificateType": worded}


def request_csr(generation: str) -> tuple[str, Payload]:
    """What asks a station for a new CSR of its own certificate (which it then sends in SignCertificate)."""
    if generation == OCPP201:
        return "TriggerMessage", {"requestedMessage": "SignChargingStationCertificate"}
    return "ExtendedTriggerMessage", {"requestedMessage": "SignChargePointCertificate"}
