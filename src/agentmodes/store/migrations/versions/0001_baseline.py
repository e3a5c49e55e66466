"""Baseline: the tables of the first release (chatbots, conversations, messages, ingest
jobs, Reflexion memory).

Databases made before migrations existed were created by `metadata.create_all`, so some or
all of these tables may already be there: only the missing ones are created, which makes
this revision the upgrade path of those files too. The definitions are frozen copies, not
the live Table objects, so later changes to the code never rewrite history.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def _tables():
    yield "chatbots", lambda: op.create_table(
        "chatbots",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("kb_path", sa.Text, nullable=True),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False))
    yield "conversations", lambda: op.create_table(
        "conversations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("chatbot_id", sa.Integer, sa.ForeignKey("chatbots.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False))
    yield "chatbot_messages", lambda: op.create_table(
        "chatbot_messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("conversation_id", sa.String(32),
                  sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(16), nullable=True),
        sa.Column("agent_trace", sa.JSON, nullable=True),
        sa.Column("stream_metadata", sa.JSON, nullable=True),
        sa.Column("usage", sa.JSON, nullable=True),
        sa.Column("sources", sa.JSON, nullable=True),
        sa.Column("timings", sa.JSON, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", TZ, nullable=False))
    yield "ingest_jobs", lambda: op.create_table(
        "ingest_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("chatbot_id", sa.Integer, sa.ForeignKey("chatbots.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("files", sa.JSON, nullable=False),
        sa.Column("progress", sa.JSON, nullable=False),
        sa.Column("report", sa.JSON, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("owner", sa.String(300), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False))
    yield "reflexion_memory", lambda: op.create_table(
        "reflexion_memory",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_key", sa.String(255), nullable=False, index=True),
        sa.Column("reflection", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False))


def upgrade() -> None:
    present = set(sa.inspect(op.get_bind()).get_table_names())
    for name, create in _tables():
        if name not in present:
            create()


def downgrade() -> None:
    for name in ("reflexion_memory", "ingest_jobs", "chatbot_messages", "conversations",
                 "chatbots"):
        op.drop_table(name)
