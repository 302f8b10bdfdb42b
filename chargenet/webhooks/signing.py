"""Webhook request signatures: RFC 9421 with an RFC 9530 Content-Digest, and the legacy form (decisions.md §2).

Theory of operation. A webhook request is signed over its method, its path, its `x-request-id` and (in the
default RFC 9421 format) its `Content-Digest`, so the body is covered as well. The signature base is built by
the `http-message-signatures` package; this module only chooses what is covered and writes the headers:

    rfc9421:  Content-Digest: sha-256=:<base64>:
              Signature-Input: sig1=("@method" "@path" "x-request-id" "content-digest");created=N;keyid="sign";
                               alg="ed25519"   (one line on the wire)
              Signature: sig1=:<base64>:
    legacy:   Signature-Input: sig1=created=N;keyId=sign;alg=rsa-pss-sha256;headers=@method @path x-request-id
              Signature: sig1=<base64>

The legacy signature is made over the RFC 9421 signature base of the same three components with the
parameters created, keyid and alg in that order, so a verifier that rebuilds the base from the legacy header's
values gets the very bytes that were signed. The legacy form is kept for partners who built against the
per-event example of service.md; it leaves the body unprotected and is not recommended.

Pure: no clock (the caller passes `created`), no I/O; keys are `cryptography` key objects loaded once.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import http_sf
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa
from http_message_signatures import HTTPMessageSigner, HTTPSignatureAlgorithm
from http_message_signatures import algorithms as rfc9421_algorithms
from http_sf.types import InnerListType, ItemType, ParamsType

from chargenet.errors import InvalidInput

SIGNATURE_LABEL = "sig1"
WEBHOOK_KEY_ID = "sign"
LEGACY_COMPONENTS: tuple[str, ...] = ("@method", "@path", "x-request-id")
RFC9421_COMPONENTS: tuple[str, ...] = (*LEGACY_COMPONENTS, "content-digest")

SigningKey = ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey


class SignatureAlgorithm(StrEnum):
    ED25519 = "ed25519"
    RSA_PSS_SHA512 = "rsa-pss-sha512"
    # Not in the RFC 9421 registry: service.md's per-event example names it, so only the legacy format offers it.
    RSA_PSS_SHA256 = "rsa-pss-sha256"


class SignatureFormat(StrEnum):
    RFC9421 = "rfc9421"
    LEGACY = "legacy"


class _RsaPssSha256(HTTPSignatureAlgorithm):
    """RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt: the digest length, as RFC 9421 uses for SHA-512."""

    algorithm_id = SignatureAlgorithm.RSA_PSS_SHA256.value

    def __init__(self, public_key: Any = None, private_key: Any = None) -> None:
        self.public_key = public_key
        self.private_key = private_key
        self.padding = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)

    def sign(self, message: bytes) -> bytes:
        signature: bytes = self.private_key.sign(message, self.padding, hashes.SHA256())
        return signature

    def verify(self, signature: bytes, message: bytes) -> None:
        self.public_key.verify(signature, message, self.padding, hashes.SHA256())


_ALGORITHMS: dict[SignatureAlgorithm, type[HTTPSignatureAlgorithm]] = {
    SignatureAlgorithm.ED25519: rfc9421_algorithms.ED25519,
    SignatureAlgorithm.RSA_PSS_SHA512: rfc9421_algorithms.RSA_PSS_SHA512,
    SignatureAlgorithm.RSA_PSS_SHA256: _RsaPssSha256,
}


def algorithm_class(algorithm: SignatureAlgorithm) -> type[HTTPSignatureAlgorithm]:
    """The `http-message-signatures` algorithm implementing `algorithm` (also usable for verifying)."""
    return _ALGORITHMS[algorithm]


@dataclass(slots=True)
class _Message:
    """The request view `http-message-signatures` reads: method, absolute URL and header field lines."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SignatureParameters:
    """The signed metadata. `alg` None leaves the `alg` parameter out (as RFC 9421 B.2.6 does)."""

    created: int
    key_id: str
    alg: SignatureAlgorithm | None
    nonce: str | None = None


@dataclass(frozen=True, slots=True)
class SignedMessage:
    signature_base: bytes
    signature_input: str
    signature: str


def check_format(algorithm: SignatureAlgorithm, signature_format: SignatureFormat) -> None:
    """Refuse `rsa-pss-sha256` outside the legacy format.

    Raises InvalidInput naming the `alg` field.
    """
    if algorithm is SignatureAlgorithm.RSA_PSS_SHA256 and signature_format is not SignatureFormat.LEGACY:
        raise InvalidInput("rsa-pss-sha256 is only available with the legacy signature format", field="alg")


def check_key(algorithm: SignatureAlgorithm, key: SigningKey) -> None:
    expected = ed25519.Ed25519PrivateKey if algorithm is SignatureAlgorithm.ED25519 else rsa.RSAPrivateKey
    if not isinstance(key, expected):
        raise InvalidInput(f"{algorithm.value} needs a {expected.__name__}, not {type(key).__name__}", field="key")


def content_digest(body: bytes) -> str:
    """The RFC 9530 `Content-Digest` field value of `body` with SHA-256: `sha-256=:<base64>:` (what
    `ContentDigest.create` of `http-message-signatures` serializes, without building a structured field)."""
    return f"sha-256=:{base64.b64encode(hashlib.sha256(body).digest()).decode('ascii')}:"


def sign_message(
    *,
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    components: Sequence[str],
    parameters: SignatureParameters,
    key: SigningKey,
    algorithm: SignatureAlgorithm,
    label: str = SIGNATURE_LABEL,
) -> SignedMessage:
    """Sign the RFC 9421 signature base of `components` of a request; general enough for RFC 9421 Appendix B.

    Raises InvalidInput when a covered component is absent or malformed or the key does not fit the algorithm.
    """
    check_key(algorithm, key)
    message = _Message(method=method, url=url, headers=dict(headers))
    implementation = _ALGORITHMS[algorithm]
    signer = HTTPMessageSigner(signature_algorithm=implementation)
    try:
        prepared = signer.prepare(
            message,
            key_id=parameters.key_id,
            created=datetime.fromtimestamp(parameters.created, UTC),
            label=label,
            include_alg=parameters.alg is not None,
            nonce=parameters.nonce,
            covered_component_ids=tuple(components),
            # A Content-Digest the caller computed is covered as it is, never recomputed.
            use_existing_digest=any(name.lower() == "content-digest" for name in message.headers),
        )
    except Exception as exc:  # the package raises KeyError, ValueError or its own errors for a bad message
        raise InvalidInput(f"cannot build the signature base: {exc}", field="headers") from exc
    signature: bytes = implementation(private_key=key).sign(prepared.signature_base)
    signer.apply(message, prepared, signature)
    return SignedMessage(
        signature_base=prepared.signature_base,
        signature_input=message.headers["Signature-Input"],
        signature=message.headers["Signature"],
    )


def webhook_signature_headers(
    *,
    url: str,
    request_id: str,
    body: bytes,
    created: int,
    key: SigningKey,
    algorithm: SignatureAlgorithm = SignatureAlgorithm.ED25519,
    signature_format: SignatureFormat = SignatureFormat.RFC9421,
    key_id: str = WEBHOOK_KEY_ID,
) -> dict[str, str]:
    """The headers that sign one webhook POST of `body` to `url` carrying `x-request-id: request_id`.

    Returns `Content-Digest` (RFC 9421 format only), `Signature-Input` and `Signature`.
    Raises InvalidInput for `rsa-pss-sha256` outside the legacy format or a key of the wrong type.
    """
    check_format(algorithm, signature_format)
    check_key(algorithm, key)
    parameters = SignatureParameters(created=created, key_id=key_id, alg=algorithm)
    path = urlsplit(url).path or "/"
    if signature_format is SignatureFormat.LEGACY:
        base, _ = webhook_signature_base(path=path, request_id=request_id, digest=None, parameters=parameters)
        raw = _ALGORITHMS[algorithm](private_key=key).sign(base)
        return {
            "Signature-Input": legacy_signature_input(parameters),
            "Signature": f"{SIGNATURE_LABEL}={base64.b64encode(raw).decode('ascii')}",
        }
    digest = content_digest(body)
    base, signature_params = webhook_signature_base(
        path=path, request_id=request_id, digest=digest, parameters=parameters
    )
    raw = _ALGORITHMS[algorithm](private_key=key).sign(base)
    return {
        "Content-Digest": digest,
        "Signature-Input": f"{SIGNATURE_LABEL}={signature_params}",
        # A dictionary of one byte sequence, as http_sf.ser({SIGNATURE_LABEL: (raw, {})}) writes it.
        "Signature": f"{SIGNATURE_LABEL}=:{base64.b64encode(raw).decode('ascii')}:",
    }


def webhook_signature_base(
    *, path: str, request_id: str, digest: str | None, parameters: SignatureParameters
) -> tuple[bytes, str]:
    """The RFC 9421 §2.5 signature base of a webhook POST to `path`, and its `@signature-params` value.

    The same bytes `sign_message` gets from the general signer of `http-message-signatures` for these
    components (a test holds the two together), built directly: the general signer parses and serializes
    every structured field several times over, which cost more than the rest of a delivery. What changes per
    request (the request id, the digest) is filled into lines made once per path and parameters.
    """
    head, signature_params = _base_frame(path, digest is not None, parameters)
    if digest is None:
        return f"{head}{request_id.strip()}\n{signature_params[1]}".encode(), signature_params[0]
    return (
        f"{head}{request_id.strip()}\n{_DIGEST_LINE}{digest.strip()}\n{signature_params[1]}".encode(),
        signature_params[0],
    )


_DIGEST_LINE = f"{http_sf.ser('content-digest')}: "


@functools.lru_cache(maxsize=256)
def _base_frame(path: str, with_digest: bool, parameters: SignatureParameters) -> tuple[str, tuple[str, str]]:
    """The lines of a signature base before the request id's value, and the `@signature-params` value with its
    line: what stays the same for every request to `path` signed with `parameters` (`created` is in seconds)."""
    components = RFC9421_COMPONENTS if with_digest else LEGACY_COMPONENTS
    members: list[ItemType] = [(name, {}) for name in components]
    covered: InnerListType = (members, _sf_parameters(parameters))
    signature_params = http_sf.ser([covered])
    lines = [
        f"{http_sf.ser(name)}: {value.strip()}" for name, value in zip(components[:2], ("POST", path), strict=True)
    ]
    head = "\n".join(lines) + f"\n{http_sf.ser(components[2])}: "
    return head, (signature_params, f'"@signature-params": {signature_params}')


def _sf_parameters(parameters: SignatureParameters) -> ParamsType:
    # RFC 9421 §2.3 leaves the order to the signer; ours is the general signer's: created, keyid, alg, nonce.
    values: ParamsType = {"created": parameters.created, "keyid": parameters.key_id}
    if parameters.alg is not None:
        values["alg"] = parameters.alg.value
    if parameters.nonce is not None:
        values["nonce"] = parameters.nonce
    return values


def legacy_signature_input(parameters: SignatureParameters) -> str:
    """decisions.md §2's unquoted legacy `Signature-Input` value for `parameters`."""
    alg = parameters.alg.value if parameters.alg else ""
    return (
        f"{SIGNATURE_LABEL}=created={parameters.created};keyId={parameters.key_id};alg={alg};"
        f"headers={' '.join(LEGACY_COMPONENTS)}"
    )
