"""`POST /sessions`, `GET /sessions/requests/{requestId}`, `POST /sessions/{transactionId}/stop`, and
`GET /transactions` with one transaction and its meter samples (decisions.md §1 and §5 "Partner API")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from chargenet.api.bounds import Int32Path
from chargenet.api.dependencies import Context
from chargenet.api.fields import NumberedConnectorId, ObjectId
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp201.commands import IdTokenType
from chargenet.services import charge_point_commands, session_requests, transactions
from chargenet.services.callers import ApiApplication
from chargenet.services.charge_point_commands import MAX_SESSION_ID_TAG, CommandAnswer, SessionRequested
from chargenet.services.pages import Page
from chargenet.services.session_requests import SessionRequestView
from chargenet.services.transactions import SampleView, TransactionView

router = APIRouter(tags=["sessions"])

SessionWriter = Annotated[ApiApplication, Depends(require(Scope.SESSIONS_WRITE))]
TransactionReader = Annotated[ApiApplication, Depends(require(Scope.TRANSACTIONS_READ))]
RequestIdPath = Annotated[
    str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$", description="The `requestId` of POST /sessions")
]


class StartSession(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"chargePointId": "CP-0042", "connectorId": 1, "idTag": "04A2B3C4D5"}]},
    )

    chargePointId: ObjectId
    connectorId: NumberedConnectorId
    idTag: Annotated[StrictStr, Field(min_length=1, max_length=MAX_SESSION_ID_TAG)] = Field(
        description="At most 20 characters for an OCPP 1.6 station (422 otherwise), 36 for a 2.0.1 one"
    )
    idTokenType: IdTokenType | None = Field(
        default=None, description="The token's type for an OCPP 2.0.1 station (default Central); 1.6 has none"
    )


@router.post("/sessions", status_code=202, response_model=SessionRequested)
async def start_session(body: StartSession, context: Context, caller: SessionWriter) -> SessionRequested:
    return await charge_point_commands.request_session(
        context.store.transaction,
        context.stations,
        caller,
        context.clock,
        charge_point_id=body.chargePointId,
        connector_id=body.connectorId,
        id_tag=body.idTag,
        id_token_type=body.idTokenType,
    )


@router.get("/sessions/requests/{request_id}", response_model=SessionRequestView)
async def get_session_request(request_id: RequestIdPath, context: Context, caller: SessionWriter) -> SessionRequestView:
    async with context.store.read() as session:
        return await session_requests.get_request(session, caller, request_id, now=context.clock.now())


@router.post("/sessions/{transaction_id}/stop", status_code=202, response_model=CommandAnswer)
async def stop_session(transaction_id: Int32Path, context: Context, caller: SessionWriter) -> CommandAnswer:
    return await charge_point_commands.stop_session(
        context.store.read, context.stations, caller, transaction_id=transaction_id
    )


@router.get("/transactions", response_model=Page[TransactionView])
async def list_transactions(
    context: Context,
    caller: TransactionReader,
    page: PageParams,
    site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
    charge_point_id: Annotated[str | None, Query(alias="chargePointId", max_length=64)] = None,
    active: bool | None = None,
) -> Page[TransactionView]:
    async with context.store.read() as session:
        return await transactions.list_transactions(
            session, caller, page, site_id=site_id, charge_point_id=charge_point_id, active=active
        )


@router.get("/transactions/{transaction_id}", response_model=TransactionView)
async def get_transaction(transaction_id: Int32Path, context: Context, caller: TransactionReader) -> TransactionView:
    async with context.store.read() as session:
        return await transactions.get_transaction(session, caller, transaction_id)


@router.get("/transactions/{transaction_id}/samples", response_model=Page[SampleView])
async def list_transaction_samples(
    transaction_id: Int32Path, context: Context, caller: TransactionReader, page: PageParams
) -> Page[SampleView]:
    async with context.store.read() as session:
        return await transactions.transaction_samples(session, caller, transaction_id, page)
