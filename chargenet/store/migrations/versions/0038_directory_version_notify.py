"""directory version notified: on PostgreSQL each bump of the directory version is also a NOTIFY of the new version

A process serving the charge point list from memory read the version row once a page to know its copy was current:
on PostgreSQL a pooled connection and a round trip, which pages under load waited for longer than for anything
else. The bump now notifies `chargenet_directory` (`store.notify.DIRECTORY`) with the version it wrote, delivered
when the transaction commits, so that a process that listens knows the version without asking. The trigger sends
it, not the services, for the reason the triggers bump the version: every writer is counted.

SQLite has no notifications: nothing changes there.

Revision ID: 0038
Revises: 0036
Create Date: 2026-11-29 20:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0038"
down_revision = "0036"
branch_labels = None
depends_on = None

CHANNEL = "chargenet_directory"
BUMP = "UPDATE directory_version SET version = version + 1 WHERE id = 1"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        sa.text(
            "CREATE OR REPLACE FUNCTION directory_bump() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "DECLARE bumped bigint; "
            f"BEGIN {BUMP} RETURNING version INTO bumped; "
            f"PERFORM pg_notify('{CHANNEL}', bumped::text); "
            "RETURN NULL; END $$"
        )
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        sa.text(
            "CREATE OR REPLACE FUNCTION directory_bump() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN {BUMP}; RETURN NULL; END $$"
        )
    )
