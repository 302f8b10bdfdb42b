"""The console's request protections as pure functions (sans-IO): what a request must carry to change anything,
which headers every answer gets, and how the session cookie is written.

Cross-site request forgery is refused in layers (decisions.md, "Public URL"):
Rule 1: a request that may change state (anything but GET, HEAD, OPTIONS) carrying an `Origin` header must come
        from the public URL's origin exactly. Behind a TLS proxy that is the `https://` public URL, not whatever
        Host header the proxy passes on.
Rule 2: without `Origin`, a `Sec-Fetch-Site` header must say `same-origin` (or `none`: typed by the user).
        A request with neither does not come from a browser that could be tricked, and still needs rule 3.
Rule 3: a signed-in change carries the session's CSRF token, in the form field `csrf_token` or (from htmx) the
        header `X-CSRF-Token`, compared in constant time.
Rule 4: the session cookie is HttpOnly, SameSite=Lax, limited to the console's path, and Secure when the public
        URL is https; SameSite is the third layer, not the only one.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
COOKIE_NAME = "chargenet_console"

# No inline script or style anywhere, nothing from another origin, never framed (clickjacking).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

SECURITY_HEADERS: Mapping[str, str] = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


class RequestRefused(Exception):
    """A state-changing request that fails a protection rule; answered 403 without saying more."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CrossOriginRequest(RequestRefused):
    pass


class CsrfTokenMismatch(RequestRefused):
    pass


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, lower case, the default port left out, as browsers send `Origin`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port is None or port == default else f"{scheme}://{host}:{port}"


def check_origin(method: str, headers: Mapping[str, str], expected_origin: str) -> None:
    """Rules 1 and 2. `headers` keys are lower case (as Starlette's are)."""
    if method.upper() in SAFE_METHODS:
        return
    origin = headers.get("origin")
    if origin is not None:
        if origin == "null" or origin_of(origin) != expected_origin:
            raise CrossOriginRequest(f"Origin {origin!r} is not {expected_origin!r}")
        return
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise CrossOriginRequest(f"Sec-Fetch-Site is {site!r}")


def check_csrf_token(expected: str, given: str | None) -> None:
    """Rule 3."""
    if not given or not secrets.compare_digest(expected.encode(), given.encode()):
        raise CsrfTokenMismatch("the CSRF token is missing or wrong")


@dataclass(frozen=True, slots=True)
class CookiePolicy:
    """Rule 4, derived from the public URL."""

    path: str
    secure: bool

    @classmethod
    def for_public_url(cls, public_url: str) -> CookiePolicy:
        parts = urlsplit(public_url)
        return cls(path=parts.path.rstrip("/") + "/console", secure=parts.scheme == "https")

    def set_cookie(self, value: str) -> str:
        """A `Set-Cookie` value for a session cookie (no Max-Age: it also ends when the browser closes)."""
        flags = f"Path={self.path}; HttpOnly; SameSite=Lax"
        return f"{COOKIE_NAME}={value}; {flags}{'; Secure' if self.secure else ''}"

    def clear_cookie(self) -> str:
        flags = f"Path={self.path}; HttpOnly; SameSite=Lax; Max-Age=0"
        return f'{COOKIE_NAME}=""; {flags}{"; Secure" if self.secure else ""}'
