"""Answers whose process died: a run's answer row is written `running` when it starts, with
the host:pid writing it, and finished in place. A server killed mid-answer (kill -9, a
crash, the machine going down) leaves that row; the next start on the same database marks
it `error`, so no question stays without an answer row. A running answer of another live
process (a second worker on the same file, another host) is left alone.
"""

from __future__ import annotations

import os
import socket

from sqlalchemy import select, update


def this_process() -> str:
    """host:pid of the calling process (computed per call: server workers are forked)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_alive(owner: str | None) -> bool:
    """Whether host:pid may still run (another host's: assume so)."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunningAnswers:
    """Mixed into ChatStore (which provides `engine`)."""

    def fail_orphaned_runs(self) -> int:
        """Mark `running` answers whose process is gone as errors; how many there were."""
        from .chat import messages
        with self.engine.connect() as conn:
            rows = conn.execute(select(messages.c.id, messages.c.worker).where(
                messages.c.status == "running")).all()
        orphans = [r.id for r in rows if not process_alive(r.worker)]
        if orphans:
            with self.engine.begin() as conn:
                conn.execute(update(messages).where(messages.c.id.in_(orphans)).values(
                    status="error", error="the server stopped before this answer was finished"))
        return len(orphans)
