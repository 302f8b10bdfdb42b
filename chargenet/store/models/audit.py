"""The audit log of every face: its own area, so a use case that records a change maps no operator tables."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class AuditRecord(Base):
    """Who did what to which object, when and from where; never a secret (services/audit.py checks)."""

    __tablename__ = "audit_records"
    __table_args__ = (Index("ix_audit_records_company_id_id", "company_id", "id"),)

    # The keyset of the audit log's pages: newest first by this increasing id.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    # NULL for what belongs to no company (a company created from the command line).
    company_id: Mapped[str | None] = mapped_column(String(64), default=None)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    actor: Mapped[str] = mapped_column(String(300))
    face: Mapped[str] = mapped_column(String(16))
    address: Mapped[str | None] = mapped_column(String(64), default=None)
    action: Mapped[str] = mapped_column(String(64))
    object_type: Mapped[str] = mapped_column(String(32))
    object_id: Mapped[str] = mapped_column(String(128))
    detail: Mapped[str] = mapped_column(Text, default="{}")
