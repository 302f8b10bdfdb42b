"""chargenet's own TLS listener: it asks every client for a certificate and takes whatever chain it is shown.

Stations of profile 3 and everyone else (the console, stations of profiles 1 and 2) share the one port, so a
certificate is asked for but not required (`CERT_OPTIONAL`). OpenSSL would then refuse at the TLS layer any chain
that does not verify against the context's CAs, which would leave the station without an answer it can read, the
refusal without a reason in the log, and a CA imported a moment ago unknown until a restart. So the context's
verification is told to accept every chain (the verify callback below, through `ctypes`: the `ssl` module of Python
3.11 has no way to set one), and the station endpoint checks the certificate itself against the company's station
CA (`edge.admission`), as decisions.md "Security profiles" says.

The client's certificate reaches the ASGI application in the `tls` scope extension (`client_cert_chain`, PEM), set
by `transport.StationWebSocketProtocol` from the connection's `ssl_object`. The chain is the leaf alone: the `ssl`
module of Python 3.11 does not hand out the rest of what the client sent.
"""

from __future__ import annotations

import _ssl
import ctypes
import ssl
from collections.abc import Callable
from typing import Any

# int (*verify_callback)(int preverify_ok, X509_STORE_CTX *ctx)
_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_SSL_VERIFY_PEER = 0x01


def _accept(_preverify_ok: int, _store: int | None) -> int:
    return 1


# Kept for the life of the process: OpenSSL holds a pointer to it.
_accept_every_chain = _VERIFY_CALLBACK(_accept)


def _libssl() -> ctypes.CDLL:
    # `_ssl`'s own handle: its symbols resolve through the libssl it was linked with, the one holding the context.
    return ctypes.CDLL(_ssl.__file__)


def _ssl_ctx_pointer(context: ssl.SSLContext) -> int:
    """The `SSL_CTX *` of a Python `SSLContext`: the first field after the object header (CPython's `PySSLContext`)."""
    header = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    pointer = ctypes.c_void_p.from_address(id(context) + header).value
    if not pointer:
        raise RuntimeError("this Python's SSLContext does not hold an OpenSSL context where expected")
    return pointer


def ask_for_any_client_certificate(context: ssl.SSLContext) -> None:
    """Ask clients for a certificate, accept the handshake whatever they show (or none), and leave checking it to
    the application."""
    context.verify_mode = ssl.CERT_OPTIONAL
    library = _libssl()
    pointer = _ssl_ctx_pointer(context)
    get_mode = library.SSL_CTX_get_verify_mode
    get_mode.argtypes = [ctypes.c_void_p]
    get_mode.restype = ctypes.c_int
    # The mode Python has just set, read back through the pointer: the pointer is this context's.
    if get_mode(pointer) != _SSL_VERIFY_PEER:
        raise RuntimeError("this Python's SSLContext does not hold an OpenSSL context where expected")
    set_verify = library.SSL_CTX_set_verify
    set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
    set_verify.restype = None
    set_verify(pointer, _SSL_VERIFY_PEER, _accept_every_chain)


def station_context_factory(config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """uvicorn's `ssl_context_factory`: its context from `--tls-cert`/`--tls-key`, asking for client certificates."""
    context = default()
    ask_for_any_client_certificate(context)
    return context


def peer_certificate_pem(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The client's certificate on a TLS connection as PEM, or None when it showed none."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return ssl.DER_cert_to_PEM_cert(der) if der else None
