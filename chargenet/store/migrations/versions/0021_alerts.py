"""alerts: rules per company, the alerts they raise, the company's SMTP server and the mails to send

Revision ID: 0021
Revises: 0019
Create Date: 2026-11-29 06:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import chargenet.store.models.base

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_AT = chargenet.store.models.base.UtcDateTime


def upgrade() -> None:
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("company_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("threshold_minutes", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("recipients", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("created_at", _AT(timezone=True), nullable=False),
        sa.Column("updated_at", _AT(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id"], ["companies.id"], name=op.f("fk_alert_rules_company_id_companies"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_rules")),
    )
    with op.batch_alter_table("alert_rules", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_rules_company_id"), ["company_id"], unique=False)

    op.create_table(
        "alerts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("rule_id", sa.String(length=64), nullable=False),
        sa.Column("company_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject_id", sa.String(length=200), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("since", _AT(timezone=True), nullable=False),
        sa.Column("raised_at", _AT(timezone=True), nullable=True),
        sa.Column("gone_since", _AT(timezone=True), nullable=True),
        sa.Column("cleared_at", _AT(timezone=True), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=300), nullable=True),
        sa.Column("acknowledged_at", _AT(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["rule_id"], ["alert_rules.id"], name=op.f("fk_alerts_rule_id_alert_rules"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index("ix_alerts_company_id_id", ["company_id", "id"], unique=False)
        batch_op.create_index(
            "uq_alerts_open_subject",
            ["rule_id", "subject_id"],
            unique=True,
            sqlite_where=sa.text("cleared_at IS NULL"),
            postgresql_where=sa.text("cleared_at IS NULL"),
        )

    op.create_table(
        "mail_settings",
        sa.Column("company_id", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=253), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("tls", sa.String(length=16), nullable=False),
        sa.Column("username", sa.String(length=254), nullable=True),
        sa.Column("password", sa.LargeBinary(), nullable=True),
        sa.Column("sender", sa.String(length=254), nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("updated_at", _AT(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id"], ["companies.id"], name=op.f("fk_mail_settings_company_id_companies"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("company_id", name=op.f("pk_mail_settings")),
    )

    op.create_table(
        "alert_mails",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("alert_id", _ID, nullable=False),
        sa.Column("company_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("recipients", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("queued_at", _AT(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", _AT(timezone=True), nullable=True),
        sa.Column("last_attempt_at", _AT(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", _AT(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", _AT(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["alert_id"], ["alerts.id"], name=op.f("fk_alert_mails_alert_id_alerts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_mails")),
    )
    with op.batch_alter_table("alert_mails", schema=None) as batch_op:
        batch_op.create_index("ix_alert_mails_next_attempt_at", ["next_attempt_at"], unique=False)
        batch_op.create_index("ix_alert_mails_alert_id", ["alert_id"], unique=False)


def downgrade() -> None:
    op.drop_table("alert_mails")
    op.drop_table("mail_settings")
    op.drop_table("alerts")
    op.drop_table("alert_rules")
