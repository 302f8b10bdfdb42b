"""Verify chargenet webhook requests: RFC 9421 signature, RFC 9530 Content-Digest, `created` age and key id.

Usage with any web framework (give the raw body bytes and the path exactly as received):

    verifier = WebhookVerifier("https://chargenet.example/auth/.well-known/jwks.json")
    verified = verifier.verify(method="POST", path=request.url.path, headers=request.headers, body=raw_body)
    handle(verified.event)            # the envelope; de-duplicate by verified.event["eventId"]

`AsyncWebhookVerifier` does the same with `await`. Every refusal raises `WebhookVerificationError` whose
`reason` says what was wrong; answer such requests with 401 and do not act on them.

What is checked, in order: the headers parse; the signature covers `@method`, `@path`, `x-request-id` and
`content-digest`; its `keyid` is one the caller accepts (`sign`); `created` is no older than `max_age` and
not in the future; the key with that kid and the type the `alg` names comes from the service's JWKS (fetched
once, cached, fetched again when a kid is unknown or a signature fails, at most every `min_refresh` seconds,
so a key rotation is picked up); the signature verifies; the body matches every digest in `Content-Digest`.

The legacy format (`Signature-Input: sig1=created=...;keyId=sign;alg=...;headers=@method @path x-request-id`)
is refused unless `allow_legacy=True`: it does not cover the body, so only the signature over method, path and
request id is checked there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import http_sf
import httpx
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa
from http_sf.types import BareItemType, DictionaryType, InnerListType, ItemType, ParamsType

PublicKey = ed25519.Ed25519PublicKey | rsa.RSAPublicKey
KeyLookup = Callable[[str, str], PublicKey | None]

DEFAULT_KEY_IDS = frozenset({"sign"})
REQUIRED_COMPONENTS = ("@method", "@path", "x-request-id", "content-digest")
LEGACY_COMPONENTS = ("@method", "@path", "x-request-id")
_DIGESTS = {"sha-256": hashlib.sha256, "sha-512": hashlib.sha512}


class Reason(StrEnum):
    MISSING_HEADER = "missing_header"
    MALFORMED = "malformed"
    NOT_COVERED = "not_covered"
    UNSUPPORTED_ALGORITHM = "unsupported_algorithm"
    UNKNOWN_KEY_ID = "unknown_key_id"
    KEY_NOT_FOUND = "key_not_found"
    TOO_OLD = "too_old"
    IN_FUTURE = "in_future"
    BAD_SIGNATURE = "bad_signature"
    DIGEST_MISMATCH = "digest_mismatch"
    LEGACY_REFUSED = "legacy_refused"
    JWKS_UNAVAILABLE = "jwks_unavailable"


class WebhookVerificationError(Exception):
    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class VerifiedWebhook:
    event: dict[str, Any]
    key_id: str
    algorithm: str
    created: int
    request_id: str
    legacy: bool


@dataclass(frozen=True, slots=True)
class SignatureClaim:
    """What a request's signature headers say, before anything is verified."""

    key_id: str
    algorithm: str
    created: int
    components: tuple[str, ...]
    signature: bytes
    signature_params: str
    legacy: bool


# --- Pure part: parse, rebuild the signature base, check. -------------------------------------------------------


class _Headers:
    def __init__(self, headers: Mapping[str, str]) -> None:
        self._values: dict[str, list[str]] = {}
        for name, value in headers.items():
            self._values.setdefault(name.lower(), []).append(value.strip(" \t"))

    def get(self, name: str) -> str | None:
        values = self._values.get(name.lower())
        return ", ".join(values) if values else None

    def require(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise WebhookVerificationError(Reason.MISSING_HEADER, f"the request has no {name} header")
        return value


def key_type(algorithm: str) -> str:
    """The JWK `kty` of the key that verifies `algorithm`."""
    if algorithm == "ed25519":
        return "OKP"
    if algorithm in ("rsa-pss-sha512", "rsa-pss-sha256"):
        return "RSA"
    raise WebhookVerificationError(Reason.UNSUPPORTED_ALGORITHM, f"alg {algorithm!r} is not one chargenet uses")


def read_claim(headers: Mapping[str, str], *, allow_legacy: bool = False) -> SignatureClaim:
    """Parse `Signature-Input` and `Signature`; raises WebhookVerificationError when they are absent or malformed."""
    view = _Headers(headers)
    signature_input = view.require("Signature-Input")
    signature = view.require("Signature")
    if signature_input.startswith("sig1=created="):
        if not allow_legacy:
            raise WebhookVerificationError(Reason.LEGACY_REFUSED, "legacy signature format (allow_legacy is off)")
        return _read_legacy(signature_input, signature)
    try:
        inputs = _parse_dictionary(signature_input)
        signatures = _parse_dictionary(signature)
    except http_sf.StructuredFieldError as exc:
        raise WebhookVerificationError(Reason.MALFORMED, f"signature headers: {exc}") from exc
    if len(inputs) != 1 or inputs.keys() != signatures.keys():
        raise WebhookVerificationError(Reason.MALFORMED, "expected exactly one signature, with the same label")
    label = next(iter(inputs))
    covered, raw = _inner_list(inputs[label]), _bare_item(signatures[label])
    if covered is None or not isinstance(raw, bytes):
        raise WebhookVerificationError(Reason.MALFORMED, "Signature-Input must be an inner list, Signature bytes")
    members, params = covered
    components: list[str] = []
    for item in members:
        if not isinstance(item, tuple) or not isinstance(item[0], str) or item[1]:
            raise WebhookVerificationError(Reason.MALFORMED, "covered components are plain strings here")
        components.append(item[0])
    unknown = set(params) - {"created", "keyid", "alg", "expires", "nonce", "tag"}
    if unknown:
        raise WebhookVerificationError(Reason.MALFORMED, f"unexpected signature parameters {sorted(unknown)}")
    created, key_id, algorithm = params.get("created"), params.get("keyid"), params.get("alg")
    if type(created) is not int or not isinstance(key_id, str) or not isinstance(algorithm, str):
        raise WebhookVerificationError(Reason.MALFORMED, "created (integer), keyid and alg (strings) are required")
    if len(components) != len(set(components)):
        raise WebhookVerificationError(Reason.MALFORMED, "a component is covered twice")
    missing = [name for name in REQUIRED_COMPONENTS if name not in components]
    if missing:
        raise WebhookVerificationError(Reason.NOT_COVERED, f"the signature does not cover {', '.join(missing)}")
    return SignatureClaim(
        key_id=key_id,
        algorithm=algorithm,
        created=created,
        components=tuple(components),
        signature=raw,
        signature_params=_signature_params(components, params),
        legacy=False,
    )


def _read_legacy(signature_input: str, signature: str) -> SignatureClaim:
    fields: dict[str, str] = {}
    for part in signature_input.removeprefix("sig1=").split(";"):
        name, sep, value = part.partition("=")
        if not sep or name in fields:
            raise WebhookVerificationError(Reason.MALFORMED, "legacy Signature-Input is not name=value;...")
        fields[name] = value
    if set(fields) != {"created", "keyId", "alg", "headers"} or not _is_ascii_digits(fields["created"]):
        raise WebhookVerificationError(Reason.MALFORMED, "legacy Signature-Input needs created, keyId, alg, headers")
    if tuple(fields["headers"].split(" ")) != LEGACY_COMPONENTS:
        raise WebhookVerificationError(Reason.NOT_COVERED, "legacy signatures cover exactly @method @path x-request-id")
    if not signature.startswith("sig1="):
        raise WebhookVerificationError(Reason.MALFORMED, "legacy Signature must be sig1=<base64>")
    try:
        raw = base64.b64decode(signature.removeprefix("sig1="), validate=True)
    except ValueError as exc:  # binascii.Error, or a str that is not ASCII
        raise WebhookVerificationError(Reason.MALFORMED, "legacy Signature is not base64") from exc
    created = int(fields["created"])
    # The legacy signature is made over the RFC 9421 base of the same parameters (decisions.md §2).
    params: ParamsType = {"created": created, "keyid": fields["keyId"], "alg": fields["alg"]}
    try:
        signature_params = _signature_params(LEGACY_COMPONENTS, params)
    except ValueError as exc:
        raise WebhookVerificationError(Reason.MALFORMED, f"legacy Signature-Input: {exc}") from exc
    return SignatureClaim(
        key_id=fields["keyId"],
        algorithm=fields["alg"],
        created=created,
        components=LEGACY_COMPONENTS,
        signature=raw,
        signature_params=signature_params,
        legacy=True,
    )


def _is_ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _parse_dictionary(value: str) -> DictionaryType:
    """Parse an RFC 8941 Dictionary with `http-sf`; a repeated key is refused rather than the last one winning."""

    def refuse_duplicate(key: str, where: str) -> None:
        if where == "dictionary":
            raise http_sf.StructuredFieldError(f"duplicate dictionary key {key!r}")

    try:
        data = value.encode("ascii")
    except UnicodeEncodeError:
        raise http_sf.StructuredFieldError("structured field is not ASCII") from None
    parsed = http_sf.parse(data, tltype="dictionary", on_duplicate_key=refuse_duplicate)
    if not isinstance(parsed, dict):  # pragma: no cover - a dictionary is what tltype asks for
        raise http_sf.StructuredFieldError("structured field is not a dictionary")
    return parsed


def _inner_list(member: ItemType | InnerListType) -> tuple[list[ItemType], ParamsType] | None:
    """The items and parameters of a dictionary member that is an Inner List, else None."""
    if isinstance(member, tuple) and isinstance(member[0], list):
        return member[0], member[1]
    return None


def _bare_item(member: ItemType | InnerListType) -> BareItemType | None:
    """The bare value of a dictionary member that is an Item (its parameters ignored), else None."""
    if isinstance(member, tuple):
        return None if isinstance(member[0], list) else member[0]
    return None if isinstance(member, list) else member


def _signature_params(components: Sequence[str], params: ParamsType) -> str:
    """The `@signature-params` value: the covered component identifiers as an Inner List with its parameters."""
    covered: InnerListType = ([(name, {}) for name in components], params)
    return http_sf.ser([covered])


def signature_base(claim: SignatureClaim, *, method: str, path: str, headers: Mapping[str, str]) -> bytes:
    """The RFC 9421 §2.5 signature base the claim's signature must have been made over."""
    view = _Headers(headers)
    lines = []
    for name in claim.components:
        if name == "@method":
            value = method.upper()
        elif name == "@path":
            value = path or "/"
        elif name.startswith("@"):
            raise WebhookVerificationError(Reason.MALFORMED, f"component {name} is not one chargenet signs")
        else:
            value = view.require(name)
        lines.append(f"{http_sf.ser(name)}: {value}")
    lines.append(f'"@signature-params": {claim.signature_params}')
    base = "\n".join(lines)
    if not base.isascii():
        raise WebhookVerificationError(Reason.MALFORMED, "signed header values must be ASCII")
    return base.encode("ascii")


def check_signature(claim: SignatureClaim, key: PublicKey, base: bytes) -> None:
    try:
        if claim.algorithm == "ed25519" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(claim.signature, base)
            return
        if claim.algorithm in ("rsa-pss-sha512", "rsa-pss-sha256") and isinstance(key, rsa.RSAPublicKey):
            digest: hashes.HashAlgorithm = hashes.SHA512() if claim.algorithm == "rsa-pss-sha512" else hashes.SHA256()
            salt = 64 if claim.algorithm == "rsa-pss-sha512" else 32
            key.verify(claim.signature, base, padding.PSS(mgf=padding.MGF1(digest), salt_length=salt), digest)
            return
    except InvalidSignature:
        raise WebhookVerificationError(Reason.BAD_SIGNATURE, "the signature does not verify") from None
    raise WebhookVerificationError(Reason.UNSUPPORTED_ALGORITHM, f"key type does not fit alg {claim.algorithm!r}")


def check_content_digest(headers: Mapping[str, str], body: bytes) -> None:
    value = _Headers(headers).require("Content-Digest")
    try:
        members = _parse_dictionary(value)
    except http_sf.StructuredFieldError as exc:
        raise WebhookVerificationError(Reason.MALFORMED, f"Content-Digest: {exc}") from exc
    known = {name: _bare_item(member) for name, member in members.items() if name in _DIGESTS}
    if not known:
        raise WebhookVerificationError(Reason.MALFORMED, "Content-Digest has no sha-256 or sha-512 member")
    for name, digest in known.items():
        if not isinstance(digest, bytes):
            raise WebhookVerificationError(Reason.MALFORMED, f"Content-Digest {name} is not a byte sequence")
        if not hmac.compare_digest(digest, _DIGESTS[name](body).digest()):
            raise WebhookVerificationError(Reason.DIGEST_MISMATCH, f"the body does not match its {name} digest")


def check_freshness(claim: SignatureClaim, *, now: float, max_age: float, skew: float) -> None:
    if claim.created > now + skew:
        raise WebhookVerificationError(Reason.IN_FUTURE, f"created {claim.created} is in the future")
    if claim.created < now - max_age:
        raise WebhookVerificationError(Reason.TOO_OLD, f"created {claim.created} is older than {max_age:g} s")


def verify_request(
    *,
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
    keys: KeyLookup,
    now: float,
    max_age: float = 300.0,
    skew: float = 5.0,
    key_ids: frozenset[str] = DEFAULT_KEY_IDS,
    allow_legacy: bool = False,
) -> VerifiedWebhook:
    """Verify one webhook request against public keys looked up by (kid, kty); no I/O.

    Raises WebhookVerificationError naming the first check that failed.
    """
    claim = read_claim(headers, allow_legacy=allow_legacy)
    if claim.key_id not in key_ids:
        raise WebhookVerificationError(Reason.UNKNOWN_KEY_ID, f"keyid {claim.key_id!r} is not accepted")
    kty = key_type(claim.algorithm)
    check_freshness(claim, now=now, max_age=max_age, skew=skew)
    key = keys(claim.key_id, kty)
    if key is None:
        raise WebhookVerificationError(Reason.KEY_NOT_FOUND, f"the JWKS has no {kty} key {claim.key_id!r}")
    check_signature(claim, key, signature_base(claim, method=method, path=path, headers=headers))
    if not claim.legacy:
        check_content_digest(headers, body)
    try:
        event = json.loads(body)
    except ValueError as exc:
        raise WebhookVerificationError(Reason.MALFORMED, "the body is not JSON") from exc
    if not isinstance(event, dict):
        raise WebhookVerificationError(Reason.MALFORMED, "the body is not a JSON object")
    return VerifiedWebhook(
        event=event,
        key_id=claim.key_id,
        algorithm=claim.algorithm,
        created=claim.created,
        request_id=_Headers(headers).require("x-request-id"),
        legacy=claim.legacy,
    )


def parse_jwks(document: Any) -> dict[tuple[str, str], PublicKey]:
    """Public keys of a JWKS by (kid, kty); keys of other types or without kid are skipped."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise WebhookVerificationError(Reason.JWKS_UNAVAILABLE, 'the JWKS is not {"keys": [...]}')
    keys: dict[tuple[str, str], PublicKey] = {}
    for jwk in document["keys"]:
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
            continue
        try:
            if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
                keys[(jwk["kid"], "OKP")] = ed25519.Ed25519PublicKey.from_public_bytes(_b64url(jwk["x"]))
            elif jwk.get("kty") == "RSA":
                numbers = rsa.RSAPublicNumbers(
                    e=int.from_bytes(_b64url(jwk["e"]), "big"), n=int.from_bytes(_b64url(jwk["n"]), "big")
                )
                keys[(jwk["kid"], "RSA")] = numbers.public_key()
        except (KeyError, TypeError, ValueError):
            continue
    return keys


def _b64url(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError("JWK members are base64url strings")
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


# --- I/O shells: the JWKS cache and the verifiers. ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Policy:
    max_age: float
    skew: float
    key_ids: frozenset[str]
    allow_legacy: bool


class _KeyCache:
    def __init__(self, ttl: float, min_refresh: float, now: Callable[[], float]) -> None:
        self.ttl = ttl
        self.min_refresh = min_refresh
        self.now = now
        self.keys: dict[tuple[str, str], PublicKey] = {}
        self.fetched_at: float | None = None

    def stale(self) -> bool:
        return self.fetched_at is None or self.now() - self.fetched_at >= self.ttl

    def may_refresh(self) -> bool:
        return self.fetched_at is None or self.now() - self.fetched_at >= self.min_refresh

    def store(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            raise WebhookVerificationError(Reason.JWKS_UNAVAILABLE, f"JWKS answered HTTP {response.status_code}")
        try:
            document = response.json()
        except ValueError as exc:
            raise WebhookVerificationError(Reason.JWKS_UNAVAILABLE, "JWKS is not JSON") from exc
        self.keys = parse_jwks(document)
        self.fetched_at = self.now()

    def lookup(self, kid: str, kty: str) -> PublicKey | None:
        return self.keys.get((kid, kty))


def _needs_refresh(error: WebhookVerificationError) -> bool:
    return error.reason in (Reason.KEY_NOT_FOUND, Reason.BAD_SIGNATURE)


class WebhookVerifier:
    """Verifies webhook requests with the keys of the service's JWKS (blocking I/O with httpx.Client)."""

    def __init__(
        self,
        jwks_url: str,
        *,
        max_age: float = 300.0,
        skew: float = 5.0,
        key_ids: frozenset[str] = DEFAULT_KEY_IDS,
        allow_legacy: bool = False,
        cache_ttl: float = 3600.0,
        min_refresh: float = 30.0,
        client: httpx.Client | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.jwks_url = jwks_url
        self._policy = _Policy(max_age, skew, key_ids, allow_legacy)
        self._cache = _KeyCache(cache_ttl, min_refresh, now)
        self._client = client or httpx.Client(timeout=10.0, follow_redirects=False)
        self._now = now

    def refresh(self) -> None:
        try:
            response = self._client.get(self.jwks_url)
        except httpx.HTTPError as exc:
            raise WebhookVerificationError(Reason.JWKS_UNAVAILABLE, f"{self.jwks_url}: {exc!r}") from exc
        self._cache.store(response)

    def verify(self, *, method: str, path: str, headers: Mapping[str, str], body: bytes) -> VerifiedWebhook:
        if self._cache.stale():
            self.refresh()
        try:
            return self._verify(method, path, headers, body)
        except WebhookVerificationError as error:
            if not _needs_refresh(error) or not self._cache.may_refresh():
                raise
        self.refresh()
        return self._verify(method, path, headers, body)

    def _verify(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> VerifiedWebhook:
        return verify_request(
            method=method,
            path=path,
            headers=headers,
            body=body,
            keys=self._cache.lookup,
            now=self._now(),
            max_age=self._policy.max_age,
            skew=self._policy.skew,
            key_ids=self._policy.key_ids,
            allow_legacy=self._policy.allow_legacy,
        )

    def close(self) -> None:
        self._client.close()


class AsyncWebhookVerifier:
    """`WebhookVerifier` for asyncio applications (httpx.AsyncClient)."""

    def __init__(
        self,
        jwks_url: str,
        *,
        max_age: float = 300.0,
        skew: float = 5.0,
        key_ids: frozenset[str] = DEFAULT_KEY_IDS,
        allow_legacy: bool = False,
        cache_ttl: float = 3600.0,
        min_refresh: float = 30.0,
        client: httpx.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.jwks_url = jwks_url
        self._policy = _Policy(max_age, skew, key_ids, allow_legacy)
        self._cache = _KeyCache(cache_ttl, min_refresh, now)
        self._client = client or httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        self._now = now

    async def refresh(self) -> None:
        try:
            response = await self._client.get(self.jwks_url)
        except httpx.HTTPError as exc:
            raise WebhookVerificationError(Reason.JWKS_UNAVAILABLE, f"{self.jwks_url}: {exc!r}") from exc
        self._cache.store(response)

    async def verify(self, *, method: str, path: str, headers: Mapping[str, str], body: bytes) -> VerifiedWebhook:
        if self._cache.stale():
            await self.refresh()
        try:
            return self._verify(method, path, headers, body)
        except WebhookVerificationError as error:
            if not _needs_refresh(error) or not self._cache.may_refresh():
                raise
        await self.refresh()
        return self._verify(method, path, headers, body)

    def _verify(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> VerifiedWebhook:
        return verify_request(
            method=method,
            path=path,
            headers=headers,
            body=body,
            keys=self._cache.lookup,
            now=self._now(),
            max_age=self._policy.max_age,
            skew=self._policy.skew,
            key_ids=self._policy.key_ids,
            allow_legacy=self._policy.allow_legacy,
        )

    async def aclose(self) -> None:
        await self._client.aclose()


__all__ = [
    "AsyncWebhookVerifier",
    "Reason",
    "SignatureClaim",
    "VerifiedWebhook",
    "WebhookVerificationError",
    "WebhookVerifier",
    "parse_jwks",
    "verify_request",
]
