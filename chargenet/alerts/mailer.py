"""The worker that mails alerts: it leases the mails that are due, sends each through its company's SMTP server
outside any transaction, and records the outcome.

A lease is taken in one short transaction (on PostgreSQL `FOR UPDATE SKIP LOCKED`, so two processes never take the
same mail) and lasts `LEASE`, longer than an SMTP conversation may take; a process that dies holding one leaves the
mail to be sent by another once it expires. A failure (no server set, refused, slow, down) is written on the mail,
where the console shows it, and the mail is tried again `retry_delay` later, for as long as it takes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update

from chargenet.alerts.smtp import SMTP_TIMEOUT, MailFailed, Outgoing, SmtpServer, send
from chargenet.clock import Clock
from chargenet.domain.alerts import MAIL_RETRY_DELAY, TlsMode
from chargenet.keys import CredentialCipher
from chargenet.store.db import Store
from chargenet.store.models import AlertMail, MailSettings
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

LEASE = timedelta(minutes=5)
BATCH = 20
NO_SERVER = "no SMTP server is set for this company (Alerts, Mail server)"


@dataclass(frozen=True, slots=True)
class Leased:
    mail_id: int
    company_id: str
    mail: Outgoing
    server: SmtpServer | None


class AlertMailer(LoopWorker):
    name = "alert-mailer"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cipher: CredentialCipher,
        owner: str,
        interval: float = 5.0,
        *,
        retry_delay: timedelta = MAIL_RETRY_DELAY,
        timeout: float = SMTP_TIMEOUT,
    ) -> None:
        super().__init__(clock, interval)
        self.store = store
        self.cipher = cipher
        self.owner = owner
        self.retry_delay = retry_delay
        self.timeout = timeout

    async def run_once(self) -> None:
        by_company: dict[str, list[Leased]] = {}
        for leased in await self.lease(self.clock.now()):
            by_company.setdefault(leased.company_id, []).append(leased)
        # Each company's server on its own: one that is slow holds up no other company's mails.
        await asyncio.gather(*(self.send_all(mails) for mails in by_company.values()))

    async def send_all(self, mails: list[Leased]) -> None:
        """One company's mails, in order, through its server. Once the server fails, the rest wait for the next
        attempt with the same error instead of each waiting out the same failure now."""
        for index, leased in enumerate(mails):
            error: str | None = None
            if leased.server is None:
                error = NO_SERVER
            else:
                try:
                    await send(leased.server, leased.mail, reply_timeout=self.timeout)
                except MailFailed as exc:
                    error = exc.reason
            await self.record(leased.mail_id, error, self.clock.now())
            if error is not None:
                await self.defer([rest.mail_id for rest in mails[index + 1 :]], error, self.clock.now())
                return

    async def lease(self, now: datetime) -> list[Leased]:
        due = (
            AlertMail.next_attempt_at <= now,
            or_(AlertMail.lease_owner.is_(None), AlertMail.lease_expires_at <= now),
        )
        # Looked for in a read first: on SQLite a transaction every few seconds for nothing would take the writer's
        # lock the stations' messages wait for.
        async with self.store.read() as session:
            if await session.scalar(select(AlertMail.id).where(*due).limit(1)) is None:
                return []
        async with self.store.transaction() as session:
            mails = list(
                await session.scalars(
                    select(AlertMail).where(*due).order_by(AlertMail.id).limit(BATCH).with_for_update(skip_locked=True)
                )
            )
            if not mails:
                return []
            await session.execute(
                update(AlertMail)
                .where(AlertMail.id.in_([mail.id for mail in mails]))
                .values(lease_owner=self.owner, lease_expires_at=now + LEASE)
            )
            companies = {mail.company_id for mail in mails}
            settings = {
                row.company_id: row
                for row in await session.scalars(select(MailSettings).where(MailSettings.company_id.in_(companies)))
            }
            taken = [
                (
                    mail.id,
                    mail.company_id,
                    Outgoing(tuple(mail.recipients.split(",")), mail.subject, mail.body),
                    settings.get(mail.company_id),
                )
                for mail in mails
            ]
        return [Leased(mail_id, company, outgoing, self._server(row)) for mail_id, company, outgoing, row in taken]

    def _server(self, row: MailSettings | None) -> SmtpServer | None:
        if row is None:
            return None
        password = self.cipher.decrypt(row.password) if row.password is not None else None
        return SmtpServer(row.host, row.port, TlsMode(row.tls), row.sender, row.username, password)

    async def defer(self, mail_ids: list[int], error: str, now: datetime) -> None:
        """Mails not tried because their server just failed: due again with the failed one, no attempt counted."""
        if not mail_ids:
            return
        async with self.store.transaction() as session:
            await session.execute(
                update(AlertMail)
                .where(AlertMail.id.in_(mail_ids), AlertMail.lease_owner == self.owner)
                .values(
                    lease_owner=None, lease_expires_at=None, next_attempt_at=now + self.retry_delay, last_error=error
                )
            )

    async def record(self, mail_id: int, error: str | None, now: datetime) -> None:
        """The attempt's outcome, if the lease is still ours (else whoever took it over records theirs)."""
        outcome: dict[str, object] = {"lease_owner": None, "lease_expires_at": None, "last_attempt_at": now}
        if error is None:
            outcome |= {"sent_at": now, "next_attempt_at": None, "last_error": None}
        else:
            outcome |= {"next_attempt_at": now + self.retry_delay, "last_error": error}
            log.warning("alert mail failed", extra={"fields": {"mail": mail_id, "error": error}})
        async with self.store.transaction() as session:
            await session.execute(
                update(AlertMail)
                .where(AlertMail.id == mail_id, AlertMail.lease_owner == self.owner)
                .values(attempts=AlertMail.attempts + 1, **outcome)
            )
