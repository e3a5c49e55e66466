"""Uploaded documents: a safe file name, a type check, and a path inside the upload dir.

A request never chooses a path: the client's file name is reduced to a plain base name
(no directories, no leading dots, a small character set), the extension must be one the
knowledge base ingests, the first bytes must match it (a PDF starts with %PDF-, an office
file is a zip, text may be in any encoding but holds no binary content), and the final path
is checked to lie inside the chatbot's upload dir.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import AgentModesError
from ..knowledge.extract import SUPPORTED_SUFFIXES, content_problem

# What the knowledge base can read.
ALLOWED_EXTENSIONS = set(SUPPORTED_SUFFIXES)
_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")


class UploadError(AgentModesError):
    """An upload with a bad name, an unsupported type, or content that does not match it."""


def safe_filename(name: str) -> str:
    """A base name safe to create in any directory, or UploadError."""
    # Strip directories the way both POSIX and Windows clients might send them.
    base = PureWindowsPath(PurePosixPath(name or "").name).name
    base = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode()
    base = _UNSAFE.sub("_", base).strip(" .")
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem:
        raise UploadError(f"upload {name!r} has no file extension; allowed: "
                          f"{', '.join(sorted(ALLOWED_EXTENSIONS))}")
    return f"{stem[:120]}.{ext.lower()}"


def check_content(filename: str, head: bytes) -> None:
    """Reject content that does not look like its extension says (first bytes only)."""
    ext = Path(filename).suffix.lower()
    if ext not in ALLOWED_EXTENSIONS:
        raise UploadError(f"{filename}: type {ext or '(none)'} is not accepted; allowed: "
                          f"{', '.join(sorted(ALLOWED_EXTENSIONS))}")
    # The same rules ingest reads files by: signatures of the binary formats, and text in
    # any encoding (decoded like the CLI's files) but never binary content.
    problem = content_problem(ext, head)
    if problem is not None:
        raise UploadError(f"{filename}: {problem}")


def target_path(upload_dir: Path, filename: str) -> Path:
    """Where an upload is stored; refuses anything that would land outside upload_dir."""
    root = upload_dir.resolve()
    path = (root / safe_filename(filename)).resolve()
    if not path.is_relative_to(root) or path.parent != root:
        raise UploadError(f"upload name {filename!r} is not allowed")
    return path
