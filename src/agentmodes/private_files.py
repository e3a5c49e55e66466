"""Files agentmodes creates hold people's documents and conversations: owner-only.

Knowledge bases, chat databases (and with them Reflexion memory), uploads and the folders
holding them are created 0600 / 0700 whatever the umask, so that another account on the
machine, or a sandboxed program running as another uid, cannot read them. SQLite gives a
database's -wal, -shm and -journal files the mode of the database file, so creating that
one right is enough. Files that already exist keep their mode: they may be shared on
purpose (`chmod 600` tightens an older one).
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: str | os.PathLike) -> Path:
    """`path` as a folder; the folders this creates are owner-only."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True)
    for created in missing:
        try:
            os.chmod(created, DIR_MODE)     # mkdir's mode is filtered by the umask
        except OSError:
            pass
    return path


def create_private_file(path: str | os.PathLike) -> bool:
    """Create an empty owner-only file at `path` if there is none; True if it was created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    return True
