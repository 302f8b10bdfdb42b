from __future__ import annotations

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base


class StoreSetting(Base):
    """Facts about the store itself, such as the fingerprint of the keys it was set up with."""

    __tablename__ = "store_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
