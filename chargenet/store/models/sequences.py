"""Named counters shared by every process on the database (transaction ids of the edge and the meters)."""

from __future__ import annotations

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base


class IdSequence(Base):
    __tablename__ = "id_sequences"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_value: Mapped[int] = mapped_column(BigInteger, default=0)
