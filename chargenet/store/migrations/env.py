"""Alembic environment: always handed a live connection by `chargenet.store.schema`, never run offline."""

from __future__ import annotations

from alembic import context

from chargenet.store.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies the table instead
    transaction_per_migration=False,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
