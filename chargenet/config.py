"""Settings from environment variables and command-line flags (decisions.md §1), validated at start.

A flag wins over its environment variable, which wins over the default. Every bad value is refused with a
`ConfigurationError` naming the setting as the operator typed it (`--port` or `CHARGENET_PORT`).

A setting that is a secret can also come from a file named by `CHARGENET_<NAME>_FILE`, read when
`CHARGENET_<NAME>` is unset: container secrets and systemd credentials arrive as files, and a value written in a
unit file or a compose file is read by whoever reads those.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from chargenet.domain.log_uploads import upload_base_problem
from chargenet.errors import ConfigurationError

T = TypeVar("T")

LOG_FORMATS = ("plain", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str = ""
    data_dir: Path = field(default_factory=lambda: default_data_dir({}))
    keys_dir: Path = Path()
    database_url: str = ""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    forwarded_allow_ips: str | None = None
    log_format: str = "plain"
    log_level: str = "info"
    access_log: bool = True
    webhook_allow_private: bool = False
    event_retention_days: int = 7
    ocpp_max_frame: int = 65536
    certificate_renewal_days: int = 30  # a station's certificate is renewed this long before it expires
    upload_url: str = ""  # where stations upload logs (under /uploads); "": the public URL
    log_retention_days: int = 30
    grid_meter_silent_s: int = 5  # a grid meter without an answer this long is silent: its circuit falls back
    database_pool_size: int | None = None  # None: the store's own (`store.db.POOL_SIZE`)

    @property
    def auth_url(self) -> str:
        return f"{self.public_url}/auth"

    @property
    def base_url(self) -> str:
        return f"{self.public_url}/api/v1"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


# (setting name, environment variable, flag)
_SOURCES: dict[str, tuple[str, str]] = {
    "host": ("CHARGENET_HOST", "--host"),
    "port": ("CHARGENET_PORT", "--port"),
    "public_url": ("CHARGENET_PUBLIC_URL", "--public-url"),
    "data_dir": ("CHARGENET_DATA_DIR", "--data-dir"),
    "keys_dir": ("CHARGENET_KEYS_DIR", "--keys-dir"),
    "database_url": ("CHARGENET_DATABASE_URL", "--database-url"),
    "tls_cert": ("CHARGENET_TLS_CERT", "--tls-cert"),
    "tls_key": ("CHARGENET_TLS_KEY", "--tls-key"),
    "forwarded_allow_ips": ("CHARGENET_FORWARDED_ALLOW_IPS", "--forwarded-allow-ips"),
    "log_format": ("CHARGENET_LOG_FORMAT", "--log-format"),
    "log_level": ("CHARGENET_LOG_LEVEL", "--log-level"),
    "access_log": ("CHARGENET_ACCESS_LOG", "--no-access-log"),
    "webhook_allow_private": ("CHARGENET_WEBHOOK_ALLOW_PRIVATE", "--webhook-allow-private"),
    "event_retention_days": ("CHARGENET_EVENT_RETENTION_DAYS", "--event-retention-days"),
    "ocpp_max_frame": ("CHARGENET_OCPP_MAX_FRAME", "--ocpp-max-frame"),
    "certificate_renewal_days": ("CHARGENET_CERTIFICATE_RENEWAL_DAYS", "--certificate-renewal-days"),
    "upload_url": ("CHARGENET_UPLOAD_URL", "--upload-url"),
    "log_retention_days": ("CHARGENET_LOG_RETENTION_DAYS", "--log-retention-days"),
    "grid_meter_silent_s": ("CHARGENET_GRID_METER_SILENT_S", "--grid-meter-silent"),
    "database_pool_size": ("CHARGENET_DATABASE_POOL_SIZE", "--database-pool-size"),
}

# Settings that are secrets (a database URL carries its password), so `CHARGENET_<NAME>_FILE` may name a file with
# the value.
_SECRETS = frozenset({"database_url"})


def default_data_dir(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "chargenet"


def load_settings(flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from flags (argparse dest names; None means not given) and the environment."""
    flags = flags or {}
    env = os.environ if environ is None else environ
    raw: dict[str, tuple[str, Any]] = {}
    for name, (variable, flag) in _SOURCES.items():
        if flags.get(name) is not None:
            raw[name] = (flag, flags[name])
        elif name in _SECRETS:
            found = _secret_from_environment(variable, env)
            if found is not None:
                raw[name] = found
        elif env.get(variable) not in (None, ""):
            raw[name] = (variable, env[variable])

    def pick(name: str, parse: Callable[[str, Any], T], default: T) -> T:
        return parse(*raw[name]) if name in raw else default

    host = pick("host", lambda _source, value: str(value), "127.0.0.1")
    port = pick("port", _port, 8080)
    data_dir = pick("data_dir", _directory, default_data_dir(env))
    keys_dir = pick("keys_dir", _directory, data_dir / "keys")
    tls_cert: Path | None = pick("tls_cert", _readable_file, None)
    tls_key: Path | None = pick("tls_key", _readable_file, None)
    if (tls_cert is None) != (tls_key is None):
        variable, flag = _SOURCES["tls_key" if tls_key is None else "tls_cert"]
        raise ConfigurationError(f"{flag} / {variable}", "TLS needs both a certificate and a key")
    scheme = "https" if tls_cert else "http"
    public_url = pick("public_url", _public_url, f"{scheme}://{_url_host(host)}:{port}")
    database_url = pick("database_url", _database_url, _sqlite_url(data_dir))
    log_format = pick("log_format", lambda s, v: _choice(s, v, LOG_FORMATS), "plain")
    log_level = pick("log_level", lambda s, v: _choice(s, v, LOG_LEVELS), "info")
    access_log = pick("access_log", _boolean, True)
    allow_private = pick("webhook_allow_private", _boolean, False)
    retention = pick("event_retention_days", _positive_int, 7)
    max_frame = pick("ocpp_max_frame", _positive_int, 65536)
    renewal_days = pick("certificate_renewal_days", _positive_int, 30)
    upload_url = pick("upload_url", _upload_url, public_url)
    log_retention_days = pick("log_retention_days", _positive_int, 30)
    grid_silent = pick("grid_meter_silent_s", _positive_int, 5)
    pool_size: int | None = pick("database_pool_size", _positive_int, None)
    forwarded: str | None = pick("forwarded_allow_ips", _forwarded_ips, None)
    return Settings(
        host=host,
        port=port,
        public_url=public_url,
        data_dir=data_dir,
        keys_dir=keys_dir,
        database_url=database_url,
        tls_cert=tls_cert,
        tls_key=tls_key,
        forwarded_allow_ips=forwarded,
        log_format=log_format,
        log_level=log_level,
        access_log=access_log,
        webhook_allow_private=allow_private,
        event_retention_days=retention,
        ocpp_max_frame=max_frame,
        certificate_renewal_days=renewal_days,
        upload_url=upload_url,
        log_retention_days=log_retention_days,
        grid_meter_silent_s=grid_silent,
        database_pool_size=pool_size,
    )


def _secret_from_environment(variable: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(source, value) of a secret setting from `variable` or from the file `variable_FILE` names; None: neither."""
    file_variable = f"{variable}_FILE"
    value, path = env.get(variable, ""), env.get(file_variable, "")
    if value and path:
        raise ConfigurationError(f"{variable} / {file_variable}", "both are set; give the value in one of them")
    if value:
        return variable, value
    if not path:
        return None
    return file_variable, read_secret_file(file_variable, path)


def read_secret_file(source: str, path: str) -> str:
    """A secret kept in a file, as UTF-8 without one final newline (editors and `echo` add one); a file that
    cannot be read, is not UTF-8 or holds nothing is a `ConfigurationError` naming `source` and the path."""
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ConfigurationError(source, f"cannot read {path!r} ({exc.strerror})") from None
    try:
        text = without_final_newline(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigurationError(source, f"{path!r} is not UTF-8 text") from None
    if not text:
        raise ConfigurationError(source, f"{path!r} is empty")
    return text


def without_final_newline(text: str) -> str:
    """`text` less one final line break (LF or CRLF): the one a file or a piped `echo` ends with."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _sqlite_url(data_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{data_dir / 'chargenet.db'}"


def _port(source: str, value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigurationError(source, f"{value!r} is not a port number (1-65535)") from None
    if not 1 <= port <= 65535:
        raise ConfigurationError(source, f"{value!r} is not a port number (1-65535)")
    return port


def _positive_int(source: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigurationError(source, f"{value!r} is not a whole number") from None
    if number < 1:
        raise ConfigurationError(source, f"{value!r} must be at least 1")
    return number


def _boolean(source: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(source, f"{value!r} is not a boolean (use 1 or 0)")


def _choice(source: str, value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).lower()
    if text not in choices:
        raise ConfigurationError(source, f"{value!r} is not one of {', '.join(choices)}")
    return text


def _directory(source: str, value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigurationError(source, f"{str(path)!r} exists and is not a directory")
    return path.resolve()


def _readable_file(source: str, value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if not path.is_file():
        raise ConfigurationError(source, f"{str(path)!r} is not a readable file")
    try:
        path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(source, f"{str(path)!r} cannot be read ({exc.strerror})") from None
    return path.resolve()


def _upload_url(source: str, value: Any) -> str:
    """Where stations upload their logs: https, or http on a loopback host (`domain.log_uploads`). The default,
    the public URL, is checked when a log is asked for instead, so a process serving plain http elsewhere starts."""
    text = str(value).rstrip("/")
    problem = upload_base_problem(text)
    if problem is not None:
        raise ConfigurationError(source, problem)
    return text


def _public_url(source: str, value: Any) -> str:
    text = str(value).rstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigurationError(source, f"{value!r} is not an http:// or https:// URL without query or fragment")
    return text


def _database_url(source: str, value: Any) -> str:
    text = str(value)
    if text.startswith(("postgresql+asyncpg://", "sqlite+aiosqlite://")):
        return text
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + text.split("://", 1)[1]
    if text.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + text.split("://", 1)[1]
    raise ConfigurationError(source, f"{_redact(text)!r} is not a postgresql:// or sqlite:// database URL")


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url


def _forwarded_ips(source: str, value: Any) -> str:
    for item in str(value).split(","):
        item = item.strip()
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ConfigurationError(source, f"{item!r} is not an IP address, network or '*'") from None
    return str(value)


def redacted_database_url(settings: Settings) -> str:
    return _redact(settings.database_url)
