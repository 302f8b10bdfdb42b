"""private_key_jwt client authentication (RFC 7523 §2.2 and §3, RFC 7521 §4.2), checked without I/O.

An application registers public keys (a JWKS document, or the URL of one); it authenticates by sending a JWT it
signed with the private half. `public_key_set` decides which documents may be registered; `verify_assertion`
checks one assertion against them. Whether its `jti` was seen before needs the store, so the shell checks that.

Rules of an assertion, in this order, so that nothing the sender controls picks the key or the algorithm:
Rule 1: a compact JWS of at most MAX_ASSERTION_LENGTH characters whose header is a JSON object.
Rule 2: `alg` is one of ALLOWED_ALGORITHMS, all asymmetric: `none` and the HMAC family are refused, since an HMAC
        key is a shared secret, which is what this method exists to do without.
Rule 3: no header that carries or points at a key (`jwk`, `jku`, `x5u`, `x5c`) or asks for extensions (`crit`):
        keys come only from what the application registered, by `kid` when the header names one.
Rule 4: the signature verifies with such a key before any claim is read.
Rule 5: `iss` and `sub` are the client id; `aud` names the issuer or the token endpoint's URL (decisions.md §5);
        `exp` is in the future and at most MAX_ASSERTION_LIFETIME ahead (so a used `jti` need only be kept that
        long); `iat` and `nbf` are not in the future; `jti` is present. Each time check allows LEEWAY seconds.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from chargenet.auth.errors import InvalidClientAssertion, UnknownSigningKey

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
)
FORBIDDEN_HEADERS = ("jwk", "jku", "x5u", "x5c", "crit")
MAX_ASSERTION_LENGTH = 8192
MAX_ASSERTION_LIFETIME = 300
MAX_JTI_LENGTH = 200
LEEWAY = 30
MAX_KEYS = 10
MAX_KEY_SET_SIZE = 65_536
MIN_RSA_BITS = 2048
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
_KEY_TYPES = {"RSA": RSAKey, "EC": ECKey, "OKP": OKPKey}
# The members each key type needs, and the curves allowed (signatures only: no X25519).
_MEMBERS = {"RSA": ("n", "e"), "EC": ("crv", "x", "y"), "OKP": ("crv", "x")}
_CURVES = {"EC": ("P-256", "P-384", "P-521"), "OKP": ("Ed25519",)}
_FAMILY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


@dataclass(frozen=True, slots=True)
class VerifiedAssertion:
    client_id: str
    jti: str
    expires_at: int  # epoch seconds


def _b64json(segment: str, what: str) -> dict[str, Any]:
    if not segment or "=" in segment:
        raise InvalidClientAssertion(f"malformed {what}")
    try:
        value = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidClientAssertion(f"{what} is not base64url JSON") from None
    if not isinstance(value, dict):
        raise InvalidClientAssertion(f"{what} is not a JSON object")
    return value


def _segments(assertion: str) -> list[str]:
    if not assertion or len(assertion) > MAX_ASSERTION_LENGTH or not assertion.isascii():
        raise InvalidClientAssertion("malformed assertion")
    segments = assertion.split(".")
    if len(segments) != 3:
        raise InvalidClientAssertion("the assertion is not a compact JWS")
    return segments


def assertion_subject(assertion: str) -> str | None:
    """The client the assertion claims to be (its `sub`, unverified), to find that client's keys; None when the
    assertion cannot be read at all."""
    try:
        claims = _b64json(_segments(assertion)[1], "payload")
    except InvalidClientAssertion:
        return None
    subject = claims.get("sub")
    return subject if isinstance(subject, str) and subject else None


def public_key_set(document: str | dict[str, Any]) -> KeySet:
    """The public keys of a JWKS document an application registers or publishes, or `InvalidClientAssertion`
    saying why it cannot be used: not a key set, a private or symmetric key, a short RSA key, too many keys."""
    if isinstance(document, str):
        if len(document) > MAX_KEY_SET_SIZE:
            raise InvalidClientAssertion("the key set is larger than 64 KiB")
        try:
            document = json.loads(document)
        except ValueError:
            raise InvalidClientAssertion("the key set is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list) or not document["keys"]:
        raise InvalidClientAssertion('the key set is not a JSON object with a non-empty "keys" list')
    keys = document["keys"]
    if len(keys) > MAX_KEYS:
        raise InvalidClientAssertion(f"the key set holds more than {MAX_KEYS} keys")
    for key in keys:
        if not isinstance(key, dict) or key.get("kty") not in _KEY_TYPES:
            raise InvalidClientAssertion("every key must be an RSA, EC or OKP public key")
        if any(member in key for member in PRIVATE_MEMBERS):
            raise InvalidClientAssertion("the key set holds a private key: register only the public keys")
        if "kid" in key and not isinstance(key["kid"], str):
            raise InvalidClientAssertion("a kid must be a string")
        kty = key["kty"]
        if not all(isinstance(key.get(member), str) for member in _MEMBERS[kty]):
            raise InvalidClientAssertion(f"an {kty} key needs {', '.join(_MEMBERS[kty])} as strings")
        if kty in _CURVES and key["crv"] not in _CURVES[kty]:
            raise InvalidClientAssertion(f"the curve of an {kty} key must be one of {', '.join(_CURVES[kty])}")
        if key["kty"] == "RSA" and _bits(key.get("n")) < MIN_RSA_BITS:
            raise InvalidClientAssertion(f"RSA keys must have at least {MIN_RSA_BITS} bits")
    try:
        key_set = KeySet.import_key_set(document)  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        # The members were checked above; what is left is joserfc's own reading of their values.
        raise InvalidClientAssertion(f"the key set cannot be read ({exc})") from None
    return key_set


def _bits(modulus: object) -> int:
    if not isinstance(modulus, str) or "=" in modulus:
        return 0
    try:
        raw = base64.urlsafe_b64decode(modulus + "=" * (-len(modulus) % 4))
    except (binascii.Error, ValueError):
        return 0
    return int.from_bytes(raw, "big").bit_length()


def _candidates(key_set: KeySet, header: dict[str, Any], alg: str) -> list[Any]:
    family = _KEY_TYPES[_FAMILY[alg[:2]]]
    kid = header.get("kid")
    if kid is not None:
        if not isinstance(kid, str):
            raise InvalidClientAssertion("kid is not a string")
        return [key for key in key_set.keys if key.kid == kid and isinstance(key, family)]
    return [key for key in key_set.keys if isinstance(key, family)]


def _verified_payload(assertion: str, segments: list[str], key: Any, alg: str) -> bytes | None:
    if alg in ("EdDSA", "Ed25519"):
        # Checked here: joserfc warns on the name EdDSA (RFC 9864 deprecates it), which clients still send.
        public = key.raw_value
        if not isinstance(public, Ed25519PublicKey | Ed25519PrivateKey):
            return None
        verifier = public if isinstance(public, Ed25519PublicKey) else public.public_key()
        try:
            signature = base64.urlsafe_b64decode(segments[2] + "=" * (-len(segments[2]) % 4))
            verifier.verify(signature, f"{segments[0]}.{segments[1]}".encode("ascii"))
            return base64.urlsafe_b64decode(segments[1] + "=" * (-len(segments[1]) % 4))
        except (InvalidSignature, binascii.Error, ValueError):
            return None
    try:
        return jws.deserialize_compact(assertion, key, algorithms=[alg]).payload
    except (JoseError, ValueError):
        return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def verify_assertion(
    assertion: str, *, client_id: str, key_set: KeySet, audiences: Collection[str], now: int
) -> VerifiedAssertion:
    """The verified assertion of `client_id`, or `InvalidClientAssertion` naming the first rule it broke."""
    segments = _segments(assertion)
    header = _b64json(segments[0], "header")
    alg = header.get("alg")
    if alg not in ALLOWED_ALGORITHMS:
        raise InvalidClientAssertion(f"algorithm {alg!r} not allowed")
    assert isinstance(alg, str)
    for name in FORBIDDEN_HEADERS:
        if name in header:
            raise InvalidClientAssertion(f"header {name!r} refused")
    payload: bytes | None = None
    for key in _candidates(key_set, header, alg):
        payload = _verified_payload(assertion, segments, key, alg)
        if payload is not None:
            break
    if payload is None:
        raise UnknownSigningKey()
    try:
        claims = json.loads(payload)
    except (UnicodeDecodeError, ValueError):
        raise InvalidClientAssertion("the payload is not JSON") from None
    if not isinstance(claims, dict):
        raise InvalidClientAssertion("the payload is not a JSON object")
    return _claims(claims, client_id=client_id, audiences=audiences, now=now)


def _claims(claims: dict[str, Any], *, client_id: str, audiences: Collection[str], now: int) -> VerifiedAssertion:
    if claims.get("iss") != client_id or claims.get("sub") != client_id:
        raise InvalidClientAssertion("iss and sub must both be the client id")
    aud = claims.get("aud")
    named = aud if isinstance(aud, list) else [aud]
    if not any(isinstance(a, str) and a in audiences for a in named):
        raise InvalidClientAssertion("aud names neither the issuer nor the token endpoint")
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
    if not _is_number(exp):
        raise InvalidClientAssertion("exp is missing")
    assert isinstance(exp, int | float)
    if now >= exp + LEEWAY:
        raise InvalidClientAssertion("expired")
    if exp > now + MAX_ASSERTION_LIFETIME + LEEWAY:
        raise InvalidClientAssertion(f"exp is more than {MAX_ASSERTION_LIFETIME} s ahead")
    for name, value in (("iat", iat), ("nbf", nbf)):
        if value is not None and (not _is_number(value) or value > now + LEEWAY):
            raise InvalidClientAssertion(f"{name} is in the future")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI_LENGTH:
        raise InvalidClientAssertion("jti is missing or longer than 200 characters")
    return VerifiedAssertion(client_id=client_id, jti=jti, expires_at=int(exp))
