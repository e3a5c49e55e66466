"""Issue 11, items 5 and 9: documents and folders that used to stall or abort an ingest.

Replays: a 160 KB PDF whose 1,000 pages share one content stream of 1.6 M tokens (pypdf
needs hours for it: before, every later document waited behind it), a folder holding a
file whose name is not UTF-8 (before: a traceback, nothing ingested), and a subfolder that
cannot be read (before: skipped without a word).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from agentmodes.knowledge.base import KnowledgeBase
from server_support import ROOT

MD = "# Öffnungszeiten\n\nDie Agentur hat montags bis freitags von 9 bis 18 Uhr geöffnet.\n"


def shared_stream_pdf(pages: int = 1000, ops: int = 200_000) -> bytes:
    """Every page draws the same content stream: small on disk, a day of pypdf's time."""
    stream = zlib.compress(b"BT /F1 1 Tf " + b"(a) Tj 0 1 Td " * ops + b"ET", 9)
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
               + b"\nendstream"]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                b"/Resources << /Font << /F1 3 0 R >> >> >>"] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def _ingest_cli(folder: Path, kb: Path, env: dict, timeout: float):
    return subprocess.run([sys.executable, "-c", "from agentmodes.cli.main import run; run()",
                           "ingest", str(folder), "--kb", str(kb), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})


def test_a_pdf_that_would_take_hours_is_skipped_and_later_documents_still_ingest(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a-bomb.pdf").write_bytes(shared_stream_pdf())
    assert (docs / "a-bomb.pdf").stat().st_size < 200_000
    (docs / "b-later.md").write_text(MD, encoding="utf-8")
    try:
        # The CPU limit, not the wall clock, must stop it (however loaded the machine is).
        limits = {"AGENTMODES_EXTRACT_CPU_S": "3", "AGENTMODES_EXTRACT_WALL_S": "600"}
        result = _ingest_cli(docs, tmp_path / "kb.db", limits,
                             timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the ingest was still busy with the PDF after 4 minutes")
    assert result.returncode == 0, result.stderr
    assert "CPU time" in result.stdout and "a-bomb.pdf" in result.stdout
    with KnowledgeBase.open(str(tmp_path / "kb.db"), embedder=None) as kb:
        [hit] = kb.search("Öffnungszeiten", mode="lexical", k=1)
        assert hit.source.endswith("b-later.md")


def test_a_document_over_the_memory_limit_is_skipped(tmp_path, monkeypatch):
    from agentmodes.knowledge import extract_pool
    monkeypatch.setenv("AGENTMODES_EXTRACT_MEMORY_MB", "300")
    docs = tmp_path / "docs"
    docs.mkdir()
    # 150 MB of text: decoding and splitting it needs several times that.
    (docs / "huge.txt").write_bytes(b"wort " * 30_000_000)
    (docs / "small.md").write_text(MD, encoding="utf-8")
    with KnowledgeBase.open(str(tmp_path / "kb.db"), embedder=None) as kb:
        report = kb.ingest([str(docs)], embed=False)
    assert [Path(p).name for p in report.added] == ["small.md"]
    [skipped] = report.skipped
    assert skipped.path.endswith("huge.txt") and "memory" in skipped.reason
    assert extract_pool.shared_pool().limits.memory_mb == 300


def test_a_file_name_that_is_not_utf8_is_skipped_not_fatal(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gut.md").write_text(MD, encoding="utf-8")
    with open(os.path.join(os.fsencode(docs), b"caf\xe9-latin1.md"), "wb") as handle:
        handle.write(b"# Caf\xc3\xa9\n\nText.\n")
    result = _ingest_cli(docs, tmp_path / "kb.db", {}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "gut.md" in result.stdout
    assert "not valid UTF-8" in result.stdout and "caf\ufffd-latin1.md" in result.stdout


UNREADABLE_SCRIPT = """
import json, sys
from agentmodes.knowledge.base import KnowledgeBase
with KnowledgeBase.open(sys.argv[2], embedder=None) as kb:
    report = kb.ingest([sys.argv[1]], embed=False)
print(json.dumps({"added": report.added,
                  "skipped": [[s.path, s.reason] for s in report.skipped]}))
"""


def test_an_unreadable_subfolder_is_reported(tmp_path):
    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "open.md").write_text(MD, encoding="utf-8")
    (docs / "locked" / "secret.md").write_text(MD, encoding="utf-8")
    (docs / "locked").chmod(0o000)
    command = [sys.executable, "-c", UNREADABLE_SCRIPT, str(docs), str(tmp_path / "kb.db")]
    if os.geteuid() == 0:
        # Root reads any folder; without the two capabilities that allow it, it obeys modes.
        if not shutil.which("setpriv"):
            pytest.skip("as root, needs setpriv to drop CAP_DAC_OVERRIDE")
        command = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search", *command]
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        (docs / "locked").chmod(0o755)
    assert result.returncode == 0, result.stderr
    import json
    report = json.loads(result.stdout)
    assert [Path(p).name for p in report["added"]] == ["open.md"]
    assert [[Path(p).name, reason] for p, reason in report["skipped"]] == \
        [["locked", "cannot read folder: Permission denied"]]
