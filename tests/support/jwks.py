"""Test helpers: JWKs of cryptography keys and a real JWKS server on loopback."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk(kid: str, key: ed25519.Ed25519PublicKey | rsa.RSAPublicKey) -> dict[str, Any]:
    if isinstance(key, ed25519.Ed25519PublicKey):
        raw = key.public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA", "use": "sig", "x": _b64url(raw)}
    numbers = key.public_numbers()
    return {
        "kty": "RSA",
        "kid": kid,
        "alg": "PS512",
        "use": "sig",
        "n": _b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
        "e": _b64url(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")),
    }


@dataclass
class JwksServer:
    document: dict[str, Any]
    requests: int = 0
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def serve_jwks(document: dict[str, Any]) -> Iterator[JwksServer]:
    state = JwksServer(document)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with state._lock:
                state.requests += 1
                body = json.dumps(state.document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/auth/.well-known/jwks.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
