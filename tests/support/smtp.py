"""A real SMTP server on loopback (aiosmtpd, in a thread of its own) that keeps every mail it accepts, and can be
told to refuse mails or to answer slowly."""

from __future__ import annotations

import asyncio
import email
import email.policy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from tests.support.ports import free_port


@dataclass
class Inbox:
    received: list[EmailMessage] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    refuse_with: str | None = None  # e.g. "451 4.3.0 try again later": answered to DATA instead of accepting
    delay: float = 0.0  # seconds before answering DATA

    @property
    def subjects(self) -> list[str]:
        return [str(mail["Subject"]) for mail in self.received]

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # the name aiosmtpd calls
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.refuse_with is not None:
            return self.refuse_with
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.received.append(parsed)
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"


@dataclass
class SmtpServer:
    host: str
    port: int
    inbox: Inbox


@contextmanager
def smtp_server() -> Iterator[SmtpServer]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield SmtpServer("127.0.0.1", port, inbox)
    finally:
        controller.stop()
