"""Ingest jobs as a shared queue: leases, attempts, and the uploaded documents in the database.

- ingest_jobs.lease_expires: until when (database clock, seconds since 1970) the worker
  that claimed a running job holds it; its heartbeat renews it. NULL for queued or finished
  jobs. ingest_jobs.attempts: how often the job was claimed (a job is failed after 3).
- chatbot_documents: each chatbot's uploaded files, so that any worker on any host can run
  the job that ingests them.
- an index on (status, created_at): claiming picks the oldest runnable job.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ingest_jobs") as batch:
        batch.add_column(sa.Column("lease_expires", sa.Float, nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer, nullable=False,
                                   server_default="0"))
    op.create_index("ingest_jobs_runnable", "ingest_jobs", ["status", "created_at"])
    op.create_table(
        "chatbot_documents",
        sa.Column("chatbot_id", sa.Integer, sa.ForeignKey("chatbots.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("content", sa.LargeBinary, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False))


def downgrade() -> None:
    op.drop_table("chatbot_documents")
    op.drop_index("ingest_jobs_runnable", "ingest_jobs")
    with op.batch_alter_table("ingest_jobs") as batch:
        batch.drop_column("attempts")
        batch.drop_column("lease_expires")
