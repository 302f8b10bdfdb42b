from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base


class StoreSetting(Base):
    """Facts about the store itself, such as the fingerprint of the keys it was set up with."""

    __tablename__ = "store_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class DirectoryVersion(Base):
    """One row, whose `version` the store's own triggers (migration 0018) bump in every transaction that changes
    what the charge point list is made of: which charge points and connectors exist and where, a site's company,
    and the meters in front of them. A process keeping the list in memory compares it on each request, so a change
    committed by any process, this one included, is never served from an older copy. What changes by the minute
    (statuses, heartbeats, readings) does not bump it."""

    __tablename__ = "directory_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
