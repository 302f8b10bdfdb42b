"""Alerts: the rules of each company, the alerts they raise, the company's SMTP server and the mails to send.

An alert not yet cleared is unique per rule and subject (a partial unique index): two processes evaluating the same
rule at once cannot both start one, whatever else went wrong. A mail is a row of its own, written in the transaction
that raised or cleared its alert, and sent after that commit by whichever process leases it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, LargeBinary, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime

_BIGINT_ID = BigInteger().with_variant(Integer, "sqlite")


class AlertRule(Base):
    __tablename__ = "alert_rules"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    threshold_minutes: Mapped[int] = mapped_column(Integer)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Plain addresses separated by commas, each checked when the rule was saved.
    recipients: Mapped[str] = mapped_column(Text)
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Alert(Base):
    """One alert of a rule about one subject: pending while `raised_at` is NULL (never shown), raised, cleared."""

    __tablename__ = "alerts"
    __table_args__ = (
        Index(
            "uq_alerts_open_subject",
            "rule_id",
            "subject_id",
            unique=True,
            sqlite_where=text("cleared_at IS NULL"),
            postgresql_where=text("cleared_at IS NULL"),
        ),
        Index("ix_alerts_company_id_id", "company_id", "id"),
    )

    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    rule_id: Mapped[str] = mapped_column(ForeignKey("alert_rules.id", ondelete="CASCADE"))
    company_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    subject_id: Mapped[str] = mapped_column(String(200))
    subject: Mapped[str] = mapped_column(String(300))  # as the console and the mail name it
    since: Mapped[datetime] = mapped_column(UtcDateTime())
    raised_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    gone_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    cleared_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    acknowledged_by: Mapped[str | None] = mapped_column(String(300), default=None)
    acknowledged_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class MailSettings(Base):
    """A company's SMTP server; the password is encrypted with the credential key and never shown again."""

    __tablename__ = "mail_settings"

    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"), primary_key=True)
    host: Mapped[str] = mapped_column(String(253))
    port: Mapped[int] = mapped_column(Integer)
    tls: Mapped[str] = mapped_column(String(16))
    username: Mapped[str | None] = mapped_column(String(254), default=None)
    password: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    sender: Mapped[str] = mapped_column(String(254))
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AlertMail(Base):
    """A mail about an alert, its text fixed when queued. Due while `next_attempt_at` is set; the process named in
    `lease_owner` is sending it until `lease_expires_at`."""

    __tablename__ = "alert_mails"
    __table_args__ = (
        Index("ix_alert_mails_next_attempt_at", "next_attempt_at"),
        Index("ix_alert_mails_alert_id", "alert_id"),
    )

    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    company_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    recipients: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    queued_at: Mapped[datetime] = mapped_column(UtcDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    lease_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
