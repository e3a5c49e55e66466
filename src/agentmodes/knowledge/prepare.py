"""A document made ready for storing in the extraction worker: chunked and analysed there.

Ingesting text used one core: the ingesting process chunked every document, stored it, and
its index analysed every chunk again (tokens, language, stems, term keys) when it caught up
with the file. The extraction workers (extract_pool.py) sat idle meanwhile. So a worker that
is asked to (`PrepareSpec`) chunks what it extracted and analyses each chunk with the KB's
own analyser settings; the ingesting process only writes rows and hands the term keys to the
index (SQLiteBackend.pending_analysis), which then skips its own analysis of those chunks.

Analysis is a pure function of the text and the analyser's settings (the memo in Analyzer
is only a cache), so keys made here are the keys the index would make; `signature` carries
the settings, and an index whose analyser differs ignores them and analyses itself.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass

from .chunking import Chunk, chunk_blocks, text_hash

KEY_TYPE = "q"  # signed 64-bit, as term_key makes them; array, not numpy: a lean worker


@dataclass(frozen=True, slots=True)
class PrepareSpec:
    """What the worker needs to chunk and analyse like the ingesting KB."""
    chunk_size: int
    chunk_overlap: int
    language: str               # the KB's analyser setting: "en", "de" or "auto"


@dataclass(slots=True)
class Prepared:
    """An extracted document's chunks as the chunks table stores them (`rows`: position,
    title, heading path as JSON, text, hash of the index text) and their analysed term keys
    (language, int64 keys as bytes: compact to pickle and to hold until the index takes
    them)."""
    title: str
    rows: list[tuple[int, str, str, str, str]]
    analysed: list[tuple[str, bytes]]
    signature: tuple


def chunk_rows(chunks: list[Chunk]) -> list[tuple[int, str, str, str, str]]:
    """The chunks table's columns (after doc_id) of each chunk."""
    return [(c.position, c.title, json.dumps(c.heading_path, ensure_ascii=False), c.text,
             text_hash(c.index_text)) for c in chunks]


def analyzer_signature(analyzer) -> tuple:
    """The settings that decide an Analyzer's output."""
    return (analyzer.language, analyzer.fallback, analyzer.use_stopwords)


_analyzers: dict[str, object] = {}


def prepare(title: str, blocks: list, spec: PrepareSpec) -> Prepared:
    """Chunk and analyse one extracted document (raises what chunk_blocks raises)."""
    from .analysis import Analyzer

    analyzer = _analyzers.get(spec.language)
    if analyzer is None:                    # one per worker: its memo serves every document
        analyzer = _analyzers[spec.language] = Analyzer(spec.language)
    chunks = chunk_blocks(title, blocks, spec.chunk_size, spec.chunk_overlap)
    rows, analysed = [], []
    for chunk in chunks:
        text = chunk.index_text
        language, keys = analyzer.analyse_keys(text)
        analysed.append((language, array(KEY_TYPE, keys).tobytes()))
        rows.append((chunk.position, chunk.title,
                     json.dumps(chunk.heading_path, ensure_ascii=False), chunk.text,
                     text_hash(text)))
    return Prepared(title, rows, analysed, analyzer_signature(analyzer))


def keys_array(analysed: tuple[str, bytes]):
    """(language, term keys as an int64 numpy array): what the index builds segments from
    (postings.Segment.build), without a Python int per key."""
    import numpy as np

    language, raw = analysed
    return language, np.frombuffer(raw, dtype=np.int64)
