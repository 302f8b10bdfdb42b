"""A company's SMTP server, through which its alerts are mailed: read and set it (admins and owners).

The password is encrypted with the credential key, like an upstream's, and never comes back out through a view: a
form learns only whether one is set. Setting the server again without a password keeps the one stored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import alerts as rules
from chargenet.errors import InvalidInput
from chargenet.keys import CredentialCipher
from chargenet.services import audit
from chargenet.services.alert_rules import alerting_company
from chargenet.services.callers import Caller
from chargenet.services.versions import check_version
from chargenet.services.views import View, optional
from chargenet.store.models import MailSettings

MAX_USERNAME = 254
MAX_PASSWORD = 1000


class MailSettingsView(View):
    company_id: str
    host: str
    port: int
    tls: rules.TlsMode
    username: str | None = optional()
    password_set: bool
    sender: str
    version: int


def _view(row: MailSettings) -> MailSettingsView:
    return MailSettingsView(
        company_id=row.company_id,
        host=row.host,
        port=row.port,
        tls=rules.TlsMode(row.tls),
        username=row.username,
        password_set=row.password is not None,
        sender=row.sender,
        version=row.version,
    )


async def get_mail_settings(session: AsyncSession, caller: Caller, *, company_id: str) -> MailSettingsView | None:
    """The company's SMTP server, None while none is set."""
    await alerting_company(session, caller, company_id, change="see the mail server")
    row = await session.get(MailSettings, company_id)
    return _view(row) if row is not None else None


async def set_mail_settings(
    session: AsyncSession,
    caller: Caller,
    cipher: CredentialCipher,
    *,
    company_id: str,
    host: str,
    port: int,
    tls: str,
    sender: str,
    now: datetime,
    username: str | None = None,
    password: str | None = None,
    clear_password: bool = False,
    expected_version: int | None = None,
) -> MailSettingsView:
    """Set the server; `password` None keeps the stored one, `clear_password` drops it. Everything is checked
    before anything changes."""
    await alerting_company(session, caller, company_id, change="set the mail server")
    checked_host = rules.validate_host(host)
    checked_port = rules.validate_port(port)
    mode = rules.parse_tls_mode(tls)
    checked_sender = rules.validate_address(sender, field="sender")
    if username is not None and (len(username) > MAX_USERNAME or any(ch in username for ch in "\r\n\x00")):
        raise InvalidInput(f"at most {MAX_USERNAME} characters on one line", field="username")
    if password is not None and (len(password) > MAX_PASSWORD or any(ch in password for ch in "\r\n\x00")):
        raise InvalidInput(f"at most {MAX_PASSWORD} characters on one line", field="password")
    row = await session.get(MailSettings, company_id)
    if row is None:
        row = MailSettings(company_id=company_id, version=0)
        session.add(row)
    else:
        check_version("mail server of", company_id, row.version, expected_version)
    row.host = checked_host
    row.port = checked_port
    row.tls = mode.value
    row.sender = checked_sender
    row.username = username or None
    if clear_password:
        row.password = None
    elif password:
        row.password = cipher.encrypt(password)
    row.version += 1
    row.updated_at = now
    await session.flush()
    detail = {"host": f"{row.host}:{row.port}", "tls": row.tls, "sender": row.sender}
    detail["login"] = "set" if row.password is not None else "none"
    await audit.record_change(session, caller, "mail_settings.set", row, now=now, detail=detail)
    return _view(row)
