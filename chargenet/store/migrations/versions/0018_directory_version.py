"""directory version: a counter the store bumps whenever the charge point list's structure changes

A process serves the charge point list from memory and reads this one row per request to know its copy is
current. Triggers bump it, rather than the services that write, so that every writer is counted: the API, the
command line, a bulk import, another process, and the cascades of a delete. What they watch is what the list is
made of: charge points (added, removed, moved), connectors (added, removed), a site's company, and meters (added,
removed, moved, enabled or not). Statuses, heartbeats and meter readings change by the second and are followed
otherwise.

On PostgreSQL a trigger fires once per statement, so a bulk import bumps once; the row's lock orders the writers
that change the structure, which commit one after the other (SQLite's writers always do). Those are rare (the
edge's only one is a batch of statuses that creates a connector a station reported unannounced), but two of them
locking rows in opposite orders can deadlock: a station deleted (its connectors, then the version) while another
process's batch creates a connector (the version) and then records that station's statuses. PostgreSQL then
aborts one of the two transactions, as it would for any other pair of writers locking in opposite orders.

On SQLite a trigger fires per row. A later migration that rebuilds one of these tables in SQLite's batch mode
drops its triggers: it must create them again (`tests/integration/services/test_directory.py` fails otherwise).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 04:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# (table, the events that change the list's structure, and for UPDATE the columns that do)
WATCHED = (
    ("charge_points", ("INSERT", "DELETE"), ("id", "site_id", "station_id")),
    ("connectors", ("INSERT", "DELETE"), ("charge_point_id", "connector_id")),
    ("sites", ("DELETE",), ("company_id",)),
    ("meters", ("INSERT", "DELETE"), ("station_id", "charge_point_id", "connector_id", "enabled")),
)
BUMP = "UPDATE directory_version SET version = version + 1 WHERE id = 1"


def _triggers() -> list[tuple[str, str, str]]:
    """(name, table, event clause) of every trigger."""
    made = []
    for table, events, columns in WATCHED:
        for event in events:
            made.append((f"directory_{table}_{event.lower()}", table, event))
        made.append((f"directory_{table}_update", table, f"UPDATE OF {', '.join(columns)}"))
    return made


def upgrade() -> None:
    op.create_table(
        "directory_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_directory_version")),
    )
    op.execute(sa.text("INSERT INTO directory_version (id, version) VALUES (1, 0)"))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            sa.text(
                "CREATE FUNCTION directory_bump() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$ BEGIN {BUMP}; RETURN NULL; END $$"
            )
        )
        for name, table, event in _triggers():
            op.execute(
                sa.text(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION directory_bump()"
                )
            )
    else:
        for name, table, event in _triggers():
            op.execute(sa.text(f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN {BUMP}; END"))


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, table, _ in _triggers():
        op.execute(sa.text(f"DROP TRIGGER {name} ON {table}" if postgresql else f"DROP TRIGGER {name}"))
    if postgresql:
        op.execute(sa.text("DROP FUNCTION directory_bump()"))
    op.drop_table("directory_version")
