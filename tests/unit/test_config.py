from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.config import load_settings, without_final_newline
from chargenet.errors import ConfigurationError


def test_defaults_serve_the_embedded_sqlite_under_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings({}, {"XDG_DATA_HOME": str(tmp_path)})
    assert settings.host == "127.0.0.1"
    assert settings.port == 8080
    assert settings.data_dir == tmp_path / "chargenet"
    assert settings.keys_dir == tmp_path / "chargenet" / "keys"
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / 'chargenet' / 'chargenet.db'}"
    assert settings.public_url == "http://127.0.0.1:8080"
    assert settings.auth_url == "http://127.0.0.1:8080/auth"
    assert settings.base_url == "http://127.0.0.1:8080/api/v1"


def test_flag_wins_over_environment_which_wins_over_default(tmp_path: Path) -> None:
    env = {"CHARGENET_PORT": "9000", "CHARGENET_HOST": "0.0.0.0", "CHARGENET_DATA_DIR": str(tmp_path)}
    assert load_settings({}, env).port == 9000
    assert load_settings({"port": "9100"}, env).port == 9100
    assert load_settings({"port": "9100"}, env).host == "0.0.0.0"


def test_public_url_defaults_from_host_and_port_and_can_be_set(tmp_path: Path) -> None:
    env = {"CHARGENET_DATA_DIR": str(tmp_path)}
    assert load_settings({"host": "::1", "port": "8443"}, env).public_url == "http://[::1]:8443"
    settings = load_settings({"public_url": "https://cp.example.org/"}, env)
    assert settings.public_url == "https://cp.example.org"
    assert settings.base_url == "https://cp.example.org/api/v1"


def test_postgres_url_is_given_the_async_driver(tmp_path: Path) -> None:
    settings = load_settings({}, {"CHARGENET_DATABASE_URL": "postgresql://u:p@db/chargenet"})
    assert settings.database_url == "postgresql+asyncpg://u:p@db/chargenet"
    assert not settings.is_sqlite


@pytest.mark.parametrize(
    ("flags", "env", "named", "value"),
    [
        ({"port": "eighty"}, {}, "--port", "'eighty'"),
        ({}, {"CHARGENET_PORT": "70000"}, "CHARGENET_PORT", "'70000'"),
        ({}, {"CHARGENET_DATABASE_URL": "mysql://x:secret@y/z"}, "CHARGENET_DATABASE_URL", "mysql://x:***@y/z"),
        ({"public_url": "ftp://x"}, {}, "--public-url", "'ftp://x'"),
        ({}, {"CHARGENET_LOG_FORMAT": "xml"}, "CHARGENET_LOG_FORMAT", "'xml'"),
        ({}, {"CHARGENET_WEBHOOK_ALLOW_PRIVATE": "maybe"}, "CHARGENET_WEBHOOK_ALLOW_PRIVATE", "'maybe'"),
        ({}, {"CHARGENET_EVENT_RETENTION_DAYS": "0"}, "CHARGENET_EVENT_RETENTION_DAYS", "'0'"),
        ({"database_pool_size": "many"}, {}, "--database-pool-size", "'many'"),
        ({"forwarded_allow_ips": "10.0.0.1,nope"}, {}, "--forwarded-allow-ips", "'nope'"),
        ({"tls_cert": "/nonexistent/cert.pem"}, {}, "--tls-cert", "/nonexistent/cert.pem"),
    ],
)
def test_bad_setting_is_refused_naming_the_setting_and_value(
    flags: dict[str, str], env: dict[str, str], named: str, value: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings(flags, {"CHARGENET_DATA_DIR": str(tmp_path), **env})
    assert caught.value.setting == named
    assert value in caught.value.message


def test_a_database_password_never_appears_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_settings({}, {"CHARGENET_DATABASE_URL": "oracle://u:hunter2@db/x"})
    assert "hunter2" not in caught.value.message


def test_tls_needs_certificate_and_key_together(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    with pytest.raises(ConfigurationError) as caught:
        load_settings({"tls_cert": str(cert)}, {"CHARGENET_DATA_DIR": str(tmp_path)})
    assert "--tls-key" in caught.value.setting


def test_tls_makes_the_default_public_url_https(tmp_path: Path) -> None:
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    settings = load_settings(
        {"tls_cert": str(tmp_path / "cert.pem"), "tls_key": str(tmp_path / "key.pem")},
        {"CHARGENET_DATA_DIR": str(tmp_path)},
    )
    assert settings.public_url.startswith("https://")


def test_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ConfigurationError) as caught:
        load_settings({"data_dir": str(file)}, {})
    assert caught.value.setting == "--data-dir"


URL_IN_FILE = "postgresql://u:from-file@db/chargenet"


def test_database_url_comes_from_the_file_named_by_its_file_variable(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text(URL_IN_FILE + "\n")
    settings = load_settings({}, {"CHARGENET_DATABASE_URL_FILE": str(secret)})
    assert settings.database_url == "postgresql+asyncpg://u:from-file@db/chargenet"


def test_database_url_and_its_file_variable_together_are_refused_naming_both(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text(URL_IN_FILE)
    env = {"CHARGENET_DATABASE_URL": URL_IN_FILE, "CHARGENET_DATABASE_URL_FILE": str(secret)}
    with pytest.raises(ConfigurationError) as caught:
        load_settings({}, env)
    assert caught.value.setting == "CHARGENET_DATABASE_URL / CHARGENET_DATABASE_URL_FILE"


def test_the_database_url_flag_wins_over_its_file_variable(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text(URL_IN_FILE)
    settings = load_settings({"database_url": "sqlite:///x.db"}, {"CHARGENET_DATABASE_URL_FILE": str(secret)})
    assert settings.database_url == "sqlite+aiosqlite:///x.db"


def test_a_missing_secret_file_is_refused_naming_the_variable_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigurationError) as caught:
        load_settings({}, {"CHARGENET_DATABASE_URL_FILE": str(missing)})
    assert caught.value.setting == "CHARGENET_DATABASE_URL_FILE"
    assert str(missing) in caught.value.message


def test_an_empty_secret_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text("\n")
    with pytest.raises(ConfigurationError) as caught:
        load_settings({}, {"CHARGENET_DATABASE_URL_FILE": str(secret)})
    assert "empty" in caught.value.message


def test_a_bad_url_from_a_file_is_named_by_the_file_variable_and_redacted(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text("oracle://u:hunter2@db/x")
    with pytest.raises(ConfigurationError) as caught:
        load_settings({}, {"CHARGENET_DATABASE_URL_FILE": str(secret)})
    assert caught.value.setting == "CHARGENET_DATABASE_URL_FILE"
    assert "hunter2" not in caught.value.message


def test_a_setting_that_is_no_secret_takes_no_file_variable(tmp_path: Path) -> None:
    port = tmp_path / "port"
    port.write_text("9000")
    assert load_settings({}, {"CHARGENET_PORT_FILE": str(port)}).port == 8080


@pytest.mark.parametrize(("text", "stripped"), [("a\n", "a"), ("a\r\n", "a"), ("a\n\n", "a\n"), ("a", "a")])
def test_without_final_newline_drops_exactly_one_line_break(text: str, stripped: str) -> None:
    assert without_final_newline(text) == stripped


def test_the_database_pool_size_defaults_to_the_stores_and_can_be_set(tmp_path: Path) -> None:
    assert load_settings({"data_dir": str(tmp_path)}, {}).database_pool_size is None
    assert load_settings({"data_dir": str(tmp_path)}, {"CHARGENET_DATABASE_POOL_SIZE": "8"}).database_pool_size == 8


def test_the_upload_url_defaults_to_the_public_url_and_is_https_or_loopback(tmp_path: Path) -> None:
    data = {"data_dir": str(tmp_path)}
    assert load_settings(data, {}).upload_url == "http://127.0.0.1:8080"
    given = load_settings(data, {"CHARGENET_UPLOAD_URL": "https://logs.example.com/"})
    assert given.upload_url == "https://logs.example.com"
    with pytest.raises(ConfigurationError, match="CHARGENET_UPLOAD_URL"):
        load_settings(data, {"CHARGENET_UPLOAD_URL": "http://logs.example.com"})
