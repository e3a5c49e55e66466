"""Search inside PostgreSQL (postings, BM25 and vector moments in tables, pgvector HNSW) gives
what the SQLite file gives: after edits and removals as on a fresh ingest, with the HNSW index
as with an exact scan, and after the upgrade of a KB stored by schema version 1."""

from __future__ import annotations

import random

import psycopg
import pytest
from kb_fixtures import HashingEmbedder

from agentmodes.knowledge.backends import postgres_vectors
from agentmodes.knowledge.base import KnowledgeBase
from pg_support import pg_server, pg_url  # noqa: F401

WORDS = ("harbour ferry timetable ticket island volcano lava crater eruption ash museum "
         "exhibition painting garden orchid greenhouse library archive manuscript council "
         "budget school teacher pupil bridge river bicycle tram station platform winter "
         "summer festival concert violin orchestra bakery bread flour market cheese").split()
GERMAN = ("Fähre Hafen Fahrplan Öffnungszeiten Bibliothek Ausstellung Rathaus Haushalt Schule "
          "Brücke Fluss Straßenbahn Bahnhof Winter Sommer Konzert Bäckerei Markt").split()
QUERIES = ("ferry timetable in winter", "volcano eruption ash", "Öffnungszeiten der Bibliothek",
           "orchestra concert violin", "cheese market bakery", "Fähre im Hafen")


def write_corpus(folder, count: int, seed: int = 7, start: int = 0) -> None:
    """`count` text files of two paragraphs each, a tenth of them German."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        vocab = GERMAN if i % 10 == 3 else WORDS
        paragraphs = [" ".join(rng.choice(vocab) for _ in range(rng.randint(12, 40))) + "."
                      for _ in range(2)]
        (folder / f"doc{i:03d}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")


def hits(kb: KnowledgeBase, modes=("lexical", "semantic", "hybrid")) -> dict:
    # Chunk ids differ between KBs; the text, the score and the confidence must not. Equal
    # scores rank by chunk id, so two chunks of one text may swap: compared in text order.
    return {(mode, query): sorted((-h.score, h.text, h.confidence)
                                  for h in kb.search(query, mode=mode, k=6))
            for mode in modes for query in QUERIES}


def assert_same(got: dict, expected: dict) -> None:
    """The same texts in the same order, scores and confidences up to float32 rounding
    (pgvector and numpy sum a dot product in different orders)."""
    for key, want in expected.items():
        assert [text for _, text, _ in got[key]] == [text for _, text, _ in want], key
        assert [v for s, _, c in got[key] for v in (s, c)] == pytest.approx(
            [v for s, _, c in want for v in (s, c)], abs=1e-4), key


def test_edited_and_removed_documents_search_as_a_fresh_ingest_of_the_result(pg_url, tmp_path):
    docs = tmp_path / "docs"
    write_corpus(docs, 60)
    with KnowledgeBase.open(pg_url + "&kb=edited", embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
        before = hits(kb)
        write_corpus(docs, 8, seed=99, start=10)           # eight documents rewritten
        for i in (3, 21, 40, 41):
            (docs / f"doc{i:03d}.txt").unlink()            # four removed (one German)
        write_corpus(docs, 5, seed=5, start=60)            # five added
        (docs / "doc050.txt").write_text((docs / "doc051.txt").read_text(encoding="utf-8"),
                                         encoding="utf-8")  # a duplicate text: one vector
        kb.ingest(docs)
        edited = hits(kb)
        assert kb.check() == []
    assert edited != before
    with KnowledgeBase.open(pg_url + "&kb=fresh", embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
        assert_same(hits(kb), edited)
    with KnowledgeBase.open(str(tmp_path / "kb.db"), embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
        assert_same(hits(kb), edited)


def _hnsw_indexes(url: str, schema: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexdef LIKE "
            "'%%USING hnsw%%'", (schema,)).fetchall()]


def test_the_hnsw_index_is_built_at_its_threshold_and_kept_up_to_date(pg_url, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(postgres_vectors, "HNSW_MIN", 50)
    docs = tmp_path / "docs"
    write_corpus(docs, 20)
    with KnowledgeBase.open(pg_url + "&kb=graph", embedder=HashingEmbedder()) as kb, \
            KnowledgeBase.open(str(tmp_path / "kb.db"), embedder=HashingEmbedder()) as lite:
        kb.ingest(docs)
        assert kb.stats()["vectors"] < 50 and _hnsw_indexes(pg_url, "kb_graph") == []
        write_corpus(docs, 50, start=20)
        kb.ingest(docs)
        assert kb.stats()["vectors"] >= 50
        assert len(_hnsw_indexes(pg_url, "kb_graph")) == 1
        lite.ingest(docs)
        assert_same(hits(kb), hits(lite))
        # A document added after the build is in the graph (pgvector inserts into it).
        (docs / "new.txt").write_text("Zeppelin hangar airship mooring mast.", encoding="utf-8")
        kb.ingest(docs)
        assert kb.search("zeppelin airship hangar", mode="semantic", k=1)[0].source.endswith(
            "new.txt")


def test_a_kb_stored_by_schema_version_1_is_upgraded_and_searches_as_a_new_one(pg_url,
                                                                              tmp_path):
    docs = tmp_path / "docs"
    write_corpus(docs, 30)
    url = pg_url + "&kb=old"
    with KnowledgeBase.open(url, embedder=HashingEmbedder()) as kb:
        kb.ingest(docs)
        expected = hits(kb)
    # What version 1 had: documents, chunks and vectors, no search tables.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET search_path TO kb_old")
        conn.execute("DROP TABLE postings, terms, vector_moments")
        conn.execute("ALTER TABLE chunks DROP COLUMN lang, DROP COLUMN doclen, "
                     "DROP COLUMN terms")
        conn.execute("DELETE FROM meta WHERE key LIKE 'lexical\\_%'")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with KnowledgeBase.open(url, embedder=HashingEmbedder()) as kb:
        assert_same(hits(kb), expected)
        assert kb.check() == []

