"""Applications of the caller's own company (scope `applications:write`, granted at the company)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import HttpUrl, Name
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.rate_limits import DEFAULT_REQUESTS, MAX_REQUESTS
from chargenet.domain.scopes import Scope
from chargenet.services import applications
from chargenet.services.applications import ApplicationView, Credentials
from chargenet.services.callers import ApiApplication
from chargenet.services.pages import Page

Admin = Annotated[ApiApplication, Depends(require(Scope.APPLICATIONS_WRITE))]

router = APIRouter(tags=["applications"])


class NewApplication(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "Roaming hub"}]})

    name: Name


# The public keys a client registers for private_key_jwt, one shape per key type with the members it needs and
# none that carries a private part (`auth.client_assertions.public_key_set` checks the rest: an RSA modulus of
# 2048 bits or more, an EC point on its curve).
Base64Url = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]+$", max_length=1400)]
AssertionAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"
]


class _PublicJwk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kid: StrictStr | None = Field(default=None, min_length=1, max_length=200)
    use: Literal["sig"] | None = None
    alg: AssertionAlgorithm | None = None


class RsaPublicJwk(_PublicJwk):
    kty: Literal["RSA"]
    n: Base64Url = Field(min_length=342, description="the modulus: 2048 bits or more")
    e: Base64Url = Field(max_length=8)


class EcPublicJwk(_PublicJwk):
    kty: Literal["EC"]
    crv: Literal["P-256", "P-384", "P-521"]
    x: Base64Url = Field(max_length=88)
    y: Base64Url = Field(max_length=88)


class OkpPublicJwk(_PublicJwk):
    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: Base64Url = Field(min_length=43, max_length=43)


PublicJwk = Annotated[RsaPublicJwk | EcPublicJwk | OkpPublicJwk, Field(discriminator="kty")]


class PublicKeySet(BaseModel):
    """A JSON Web Key Set (RFC 7517 §5) of public signing keys."""

    model_config = ConfigDict(extra="forbid")

    keys: list[PublicJwk] = Field(min_length=1, max_length=10)


class PublicKeys(BaseModel):
    """The public keys of private_key_jwt (RFC 7523): a JWKS document or the URL of one, not both; neither (an
    empty object, or a null) removes them."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={
            "maxProperties": 1,
            "examples": [{"jwksUrl": "https://partner.example/.well-known/jwks.json"}],
        },
    )

    jwks: PublicKeySet | None = Field(
        default=None,
        description="The public keys; a key that is not a valid one of its type (a point off its curve) is 422",
    )
    jwks_url: HttpUrl | None = Field(default=None, alias="jwksUrl")

    @model_validator(mode="after")
    def _one_source(self) -> PublicKeys:
        if len(self.model_fields_set) > 1:
            raise ValueError("give jwks or jwksUrl, not both")
        return self


class RateLimit(BaseModel):
    """The application's own rate limit; null returns it to the default."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, json_schema_extra={"examples": [{"rateLimit": 1200}]}
    )

    rate_limit: Annotated[int, Bounds(1, MAX_REQUESTS), Integral] | None = Field(
        alias="rateLimit",
        description=f"API requests a minute; null: the default, {DEFAULT_REQUESTS}",
    )


@router.get("/applications", response_model=Page[ApplicationView])
async def list_applications(context: Context, caller: Admin, page: PageParams) -> Page[ApplicationView]:
    """The company's applications, ordered by `client_id`."""
    async with context.store.read() as session:
        return await applications.list_applications(session, caller, page)


@router.post("/applications", status_code=201, response_model=Credentials)
async def create_application(body: NewApplication, context: Context, caller: Admin) -> Credentials:
    """The new application's `client_id` and `client_secret`; the secret is shown only in this answer."""
    async with context.store.transaction() as session:
        return await applications.create_application(
            session, caller, context.keys.secret_hasher(), name=body.name, now=context.clock.now()
        )


@router.get("/applications/{client_id}", response_model=ApplicationView)
async def get_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.read() as session:
        return await applications.get_application(session, caller, client_id)


@router.post("/applications/{client_id}/disable", response_model=ApplicationView)
async def disable_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.transaction() as session:
        return await applications.set_enabled(session, caller, client_id, enabled=False, now=context.clock.now())


@router.post("/applications/{client_id}/enable", response_model=ApplicationView)
async def enable_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.transaction() as session:
        return await applications.set_enabled(session, caller, client_id, enabled=True, now=context.clock.now())


@router.post("/applications/{client_id}/rotate-secret", response_model=Credentials)
async def rotate_secret(client_id: str, context: Context, caller: Admin) -> Credentials:
    async with context.store.transaction() as session:
        return await applications.rotate_secret(
            session, caller, context.keys.secret_hasher(), client_id, now=context.clock.now()
        )


@router.delete("/applications/{client_id}", status_code=204, response_class=Response)
async def delete_application(client_id: str, context: Context, caller: Admin) -> Response:
    async with context.store.transaction() as session:
        await applications.delete_application(session, caller, client_id, now=context.clock.now())
    return Response(status_code=204)


@router.put("/applications/{client_id}/keys", response_model=ApplicationView)
async def set_public_keys(client_id: str, body: PublicKeys, context: Context, caller: Admin) -> ApplicationView:
    """Register the application's public keys, for client authentication by `private_key_jwt` at the token,
    introspection and revocation endpoints. A key set URL resolving to a private address is refused (422)."""
    return await applications.set_public_keys(
        context.store.transaction,
        caller,
        client_id,
        jwks=body.jwks.model_dump(exclude_none=True) if body.jwks is not None else None,
        jwks_url=body.jwks_url,
        now=context.clock.now(),
        allow_private=context.settings.webhook_allow_private,
    )


@router.put("/applications/{client_id}/rate-limit", response_model=ApplicationView)
async def set_rate_limit(client_id: str, body: RateLimit, context: Context, caller: Admin) -> ApplicationView:
    """Set how many API requests a minute the application may make (`RateLimit-Policy` on its answers tells it);
    a request beyond it is answered 429 with `Retry-After`."""
    async with context.store.transaction() as session:
        return await applications.set_rate_limit(
            session, caller, client_id, requests=body.rate_limit, now=context.clock.now()
        )
