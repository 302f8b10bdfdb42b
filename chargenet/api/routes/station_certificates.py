"""A station's certificates (scope charge-points:read to list, charge-points:write for the commands), and a site's
choice of who signs its stations' CSRs (sites:write).

`GET /stations/{id}/certificates` lists those the company's station CA signed for the station, with their expiry.
The commands answer 200 with the station's answer as it came, 503/504/502 as the other station commands, 409 where
the site relays its stations' CSRs to its upstream (which then manages their certificates), 422 for a certificate
that is not a PEM CA certificate.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictStr

from chargenet.api.dependencies import Context
from chargenet.api.security import require
from chargenet.domain.certificate_commands import RootType
from chargenet.domain.scopes import Scope
from chargenet.services import station_certificates
from chargenet.services.callers import ApiApplication
from chargenet.services.station_certificates import StationCertificates

router = APIRouter(tags=["station certificates"])

Commander = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_WRITE))]
Reader = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_READ))]
SiteWriter = Annotated[ApiApplication, Depends(require(Scope.SITES_WRITE))]
Hex = Annotated[StrictStr, Field(min_length=1, max_length=128, pattern="^[0-9A-Fa-f]+$")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CertificateAnswer(BaseModel):
    """The station's answer as it came (fields of a later OCPP edition kept)."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(description="e.g. Accepted, Rejected, Failed, NotFound")


class InstalledCertificates(CertificateAnswer):
    certificateHashData: list[dict[str, JsonValue]] | None = Field(default=None, description="From a 1.6 station")
    certificateHashDataChain: list[dict[str, JsonValue]] | None = Field(
        default=None, description="From a 2.0.1 station"
    )


class InstallBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "certificateType": "CentralSystemRootCertificate",
                    "certificate": "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n",
                }
            ]
        }
    )

    certificateType: RootType = Field(
        description="1.6's words; a 2.0.1 station gets CSMSRootCertificate for CentralSystemRootCertificate"
    )
    certificate: Annotated[StrictStr, Field(min_length=1, max_length=5500)] = Field(description="A PEM CA certificate")


class HashData(_Body):
    hashAlgorithm: Literal["SHA256", "SHA384", "SHA512"]
    issuerNameHash: Hex
    issuerKeyHash: Hex
    serialNumber: Annotated[StrictStr, Field(min_length=1, max_length=40, pattern="^[0-9A-Fa-f]+$")]


class DeleteBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "certificateHashData": {
                        "hashAlgorithm": "SHA256",
                        "issuerNameHash": "6f1a",
                        "issuerKeyHash": "9c2b",
                        "serialNumber": "1A2B",
                    }
                }
            ]
        }
    )

    certificateHashData: HashData = Field(description="As GetInstalledCertificateIds gives it")


class InstalledBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"certificateType": "CentralSystemRootCertificate"}]})

    certificateType: RootType


class CsrHandlingBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"stationCsrs": "relay"}]})

    stationCsrs: Literal["sign", "relay"] = Field(
        description="sign: the company's station CA signs the site's stations' CSRs; relay: they go to the "
        "site's upstream, whose CA then signs them"
    )


@router.get("/stations/{station_id}/certificates", response_model=StationCertificates)
async def certificates(station_id: str, context: Context, caller: Reader) -> StationCertificates:
    """The certificates the company's station CA signed for the station, the one expiring last first."""
    async with context.store.read() as session:
        return await station_certificates.list_certificates(session, caller, station_id)


@router.post("/stations/{station_id}/install-certificate", response_model=CertificateAnswer)
async def install_certificate(
    station_id: str, body: InstallBody, context: Context, caller: Commander
) -> CertificateAnswer:
    answer = await station_certificates.install_certificate(
        context.store.read,
        context.store.transaction,
        context.stations,
        caller,
        station_id=station_id,
        certificate_type=body.certificateType,
        certificate_pem=body.certificate,
        now=context.clock.now(),
    )
    return CertificateAnswer.model_validate(answer)


@router.post("/stations/{station_id}/delete-certificate", response_model=CertificateAnswer)
async def delete_certificate(
    station_id: str, body: DeleteBody, context: Context, caller: Commander
) -> CertificateAnswer:
    answer = await station_certificates.delete_certificate(
        context.store.read,
        context.store.transaction,
        context.stations,
        caller,
        station_id=station_id,
        hash_data=body.certificateHashData.model_dump(),
        now=context.clock.now(),
    )
    return CertificateAnswer.model_validate(answer)


@router.post(
    "/stations/{station_id}/installed-certificates",
    response_model=InstalledCertificates,
    response_model_exclude_none=True,
)
async def installed_certificates(
    station_id: str, body: InstalledBody, context: Context, caller: Commander
) -> InstalledCertificates:
    """GetInstalledCertificateIds: the station is asked, so it is a command (POST)."""
    answer = await station_certificates.installed_certificate_ids(
        context.store.read, context.stations, caller, station_id=station_id, certificate_type=body.certificateType
    )
    return InstalledCertificates.model_validate(answer)


@router.post("/stations/{station_id}/request-csr", response_model=CertificateAnswer)
async def request_csr(station_id: str, context: Context, caller: Commander) -> CertificateAnswer:
    """Asks the station for a new CSR (ExtendedTriggerMessage on 1.6, TriggerMessage on 2.0.1); the station then
    sends SignCertificate and gets its new certificate in CertificateSigned."""
    answer = await station_certificates.request_csr(context.store.read, context.stations, caller, station_id=station_id)
    return CertificateAnswer.model_validate(answer)


@router.put("/sites/{site_id}/station-csrs", response_model=CsrHandlingBody)
async def station_csrs(site_id: str, body: CsrHandlingBody, context: Context, caller: SiteWriter) -> CsrHandlingBody:
    async with context.store.transaction() as session:
        handling = await station_certificates.set_csr_handling(
            session, caller, site_id=site_id, handling=body.stationCsrs, now=context.clock.now()
        )
    return CsrHandlingBody(stationCsrs=handling)
