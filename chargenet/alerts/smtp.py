"""Sending one mail through an SMTP server with the standard library's client, in a thread of its own: the
conversation blocks, and the event loop serves stations and requests meanwhile.

Each attempt connects, sends and quits; alerts are few, and a connection kept open would only go stale between them.
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from chargenet.domain.alerts import TlsMode

SMTP_TIMEOUT = 30.0  # seconds for connecting and for each reply: a slow server fails the attempt, which is retried


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    port: int
    tls: TlsMode
    sender: str
    username: str | None = None
    password: str | None = None


@dataclass(frozen=True, slots=True)
class Outgoing:
    recipients: tuple[str, ...]
    subject: str
    body: str


class MailFailed(Exception):
    """The server could not be reached or did not take the mail; `reason` is what the console shows."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def message(server: SmtpServer, mail: Outgoing) -> EmailMessage:
    built = EmailMessage()  # refuses a header value holding a line break, a last guard behind the checked input
    built["From"] = server.sender
    built["To"] = ", ".join(mail.recipients)
    built["Subject"] = mail.subject
    built["Date"] = formatdate(localtime=False)
    built["Message-ID"] = make_msgid(domain=server.sender.rpartition("@")[2])
    built.set_content(mail.body)
    return built


def send_now(server: SmtpServer, mail: Outgoing, *, timeout: float = SMTP_TIMEOUT) -> None:
    """Blocking: one SMTP conversation. Raises MailFailed with the reason."""
    context = ssl.create_default_context()
    try:
        client: smtplib.SMTP
        if server.tls is TlsMode.TLS:
            client = smtplib.SMTP_SSL(server.host, server.port, timeout=timeout, context=context)
        else:
            client = smtplib.SMTP(server.host, server.port, timeout=timeout)
        with client:
            if server.tls is TlsMode.STARTTLS:
                client.starttls(context=context)
            if server.username and server.password:
                client.login(server.username, server.password)
            client.send_message(message(server, mail))
    except smtplib.SMTPRecipientsRefused as exc:
        refused = ", ".join(f"{address} ({code})" for address, (code, _) in exc.recipients.items())
        raise MailFailed(f"the server refused the recipients {refused}") from None
    except smtplib.SMTPResponseException as exc:
        said = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        raise MailFailed(f"the server answered {exc.smtp_code} {said}"[:300]) from None
    except smtplib.SMTPException as exc:
        if isinstance(exc.__context__, TimeoutError):  # smtplib reports a reply that never came as a disconnection
            raise MailFailed(f"the server did not answer within {timeout:g} s") from None
        raise MailFailed(f"SMTP failed: {exc}"[:300]) from None
    except TimeoutError:
        raise MailFailed(f"the server did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise MailFailed(f"could not reach {server.host}:{server.port}: {exc.strerror or exc}"[:300]) from None


async def send(server: SmtpServer, mail: Outgoing, *, reply_timeout: float = SMTP_TIMEOUT) -> None:
    await asyncio.to_thread(send_now, server, mail, timeout=reply_timeout)
