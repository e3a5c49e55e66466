"""An immutable segment of the lexical index: posting lists and a forward index for a run of rows.

Layout (all numpy arrays, so a segment saved with `save` opens with `load` as memory maps
and costs nothing until a query touches it):

- keys    int64[T]    sorted term keys (analysis.term_key: a stable 64-bit hash of the term)
- starts  int64[T+1]  postings of keys[i] are rows[starts[i]:starts[i+1]]
- rows    uint32[P]   row numbers, local to the segment, ascending within a term
- tfs     uint16[P]   term frequency of the term in that row
- doclen  uint32[n]   terms per row (with repeats): the BM25 document length
- fwd_starts int64[n+1], fwd_keys int64[P], fwd_tfs uint16[P]: each row's distinct terms
  (and their tf) in order of first occurrence: pseudo-relevance feedback picks a hit's
  rarest terms, coverage compares sets, and take() of rows out of order sorts postings
  from them (a merge does not: it merges the already-sorted postings, see merge)
- langs   uint8[n]    the language each row was analysed in (index into analysis.LANGUAGES)

BM25 weights are NOT stored: they depend on the corpus size, the average length and each
term's document frequency, which change with every add or remove. Storing tf and length and
weighting at query time (a few numpy operations on the posting lists a query touches) is what
lets segments stay immutable while the statistics stay exact.
"""

from __future__ import annotations

import os
from itertools import chain
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ARRAYS = ("keys", "starts", "rows", "tfs", "doclen", "fwd_starts", "fwd_keys", "fwd_tfs",
          "langs")


@dataclass(slots=True)
class Segment:
    keys: np.ndarray
    starts: np.ndarray
    rows: np.ndarray
    tfs: np.ndarray
    doclen: np.ndarray
    fwd_starts: np.ndarray
    fwd_keys: np.ndarray
    fwd_tfs: np.ndarray
    langs: np.ndarray
    name: str | None = None  # its folder once saved (index_save.py keeps saved ones)
    # (path, data offset) of a saved fwd_keys.npy: row_keys reads one row from the file
    fwd_file: tuple[str, int] | None = None
    _found: tuple | None = None  # the last find's keys and spans (a search asks twice)

    @property
    def n(self) -> int:
        return len(self.doclen)

    @classmethod
    def build(cls, key_lists: list, langs: list[int]) -> "Segment":
        """A segment from each row's term keys (in text order, repeats included): lists of
        ints or int64 arrays (the worker's keys arrive as arrays, prepare.keys_array).

        Vectorised (one stable sort of the tokens) rather than a Counter per row: counting
        each row's terms in Python was a third of the ingesting process's time. Same result:
        a row's distinct terms in order of first occurrence, postings by key, rows
        ascending within a key (tests/test_kb_postings.py checks it against that reference)."""
        n = len(key_lists)
        doclen = np.fromiter(map(len, key_lists), dtype=np.int64, count=n)
        total = int(doclen.sum())
        if total and any(isinstance(k, np.ndarray) for k in key_lists):
            tokens = np.concatenate([np.asarray(k, dtype=np.int64) for k in key_lists])
        else:
            tokens = np.fromiter(chain.from_iterable(key_lists), dtype=np.int64, count=total)
        token_row = np.repeat(np.arange(n, dtype=np.uint32), doclen)
        order = np.argsort(tokens, kind="stable")   # by key; rows, then positions ascending
        sorted_keys, sorted_rows = tokens[order], token_row[order]
        new = np.ones(total, dtype=bool)
        if total:
            new[1:] = (sorted_keys[1:] != sorted_keys[:-1]) | (sorted_rows[1:] != sorted_rows[:-1])
        firsts = np.flatnonzero(new)                # one posting per (key, row)
        tfs = np.diff(np.append(firsts, total)).astype(np.uint16)
        keys, rows = sorted_keys[firsts], sorted_rows[firsts]
        # Forward order = order of each posting's first token: those positions are distinct,
        # so a scatter into token positions sorts them in O(tokens), no second sort.
        slot = np.full(total, -1, dtype=np.int64)
        slot[order[firsts]] = np.arange(len(firsts))
        forward = slot[slot >= 0]
        fwd_starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=fwd_starts[1:])
        term_firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) \
            if len(keys) else np.zeros(0, dtype=np.int64)
        return cls(keys[term_firsts], np.append(term_firsts, len(keys)).astype(np.int64), rows,
                   tfs, doclen.astype(np.uint32), fwd_starts, keys[forward], tfs[forward],
                   np.asarray(langs, dtype=np.uint8))

    @classmethod
    def _from_forward(cls, fwd_keys: np.ndarray, fwd_tfs: np.ndarray, lens: np.ndarray,
                      doclen: np.ndarray, langs: np.ndarray) -> "Segment":
        """Postings sorted out of a forward index (take() of rows in any order)."""
        fwd_starts = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=fwd_starts[1:])
        row_of = np.repeat(np.arange(len(lens), dtype=np.uint32), lens)
        order = np.argsort(fwd_keys, kind="stable")  # stable: rows stay ascending per term
        sorted_keys = fwd_keys[order]
        if len(sorted_keys):
            edges = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
            firsts = np.concatenate(([0], edges))
        else:
            firsts = np.zeros(0, dtype=np.int64)
        starts = np.append(firsts, len(sorted_keys)).astype(np.int64)
        return cls(sorted_keys[firsts], starts, row_of[order], fwd_tfs[order], doclen,
                   fwd_starts, fwd_keys, fwd_tfs, langs)

    @classmethod
    def merge(cls, segments: list["Segment"]) -> "Segment":
        """One segment with the rows of `segments` in order (row numbers shift accordingly).

        A k-way merge of postings that are already sorted: a term's merged posting list is
        its lists in segment order (rows stay ascending), so every posting's place follows
        from the merged term dictionary and a running cursor per term, written with one
        scatter per segment: O(postings), where re-sorting the whole forward index
        (O(P log P), a stable argsort) was 30-40% of the ingesting process at 100k chunks
        and grew with every merge of the big segment at 1M."""
        segments = [s for s in segments if s.n] or segments[:1]
        if len(segments) == 1:
            return segments[0]
        offsets = np.cumsum([0] + [s.n for s in segments])
        fwd_starts = np.concatenate([np.asarray(segments[0].fwd_starts[:1])] + [
            np.asarray(s.fwd_starts[1:]) + int(sum(len(t.fwd_keys) for t in segments[:i]))
            for i, s in enumerate(segments)])
        # timsort (stable) merges the k sorted runs in O(T log k)
        all_keys = np.sort(np.concatenate([np.asarray(s.keys) for s in segments]),
                           kind="stable")
        if len(all_keys):
            keys = all_keys[np.concatenate(([True], all_keys[1:] != all_keys[:-1]))]
        else:
            keys = all_keys
        places = [np.searchsorted(keys, np.asarray(s.keys)) for s in segments]
        freqs = [np.diff(np.asarray(s.starts)) for s in segments]
        df = np.zeros(len(keys), dtype=np.int64)
        for place, freq in zip(places, freqs):
            df[place] += freq                     # a segment's keys are distinct
        starts = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(df, out=starts[1:])
        total = int(starts[-1])
        rows = np.empty(total, dtype=np.uint32)
        tfs = np.empty(total, dtype=np.uint16)
        cursor = starts[:-1].copy()
        for segment, place, freq, offset in zip(segments, places, freqs, offsets):
            if not len(freq):
                continue
            # destination of posting i of term j: cursor[j] + (i - segment.starts[j])
            shift = cursor[place] - np.asarray(segment.starts[:-1])
            dest = np.repeat(shift, freq) + np.arange(len(segment.rows), dtype=np.int64)
            rows[dest] = np.asarray(segment.rows) + np.uint32(offset)
            tfs[dest] = segment.tfs
            cursor[place] += freq
        return cls(keys, starts, rows, tfs, np.concatenate([s.doclen for s in segments]),
                   fwd_starts, np.concatenate([s.fwd_keys for s in segments]),
                   np.concatenate([s.fwd_tfs for s in segments]),
                   np.concatenate([s.langs for s in segments]))

    def take(self, rows: np.ndarray) -> "Segment":
        """A segment of only these rows (renumbered 0..len-1): compaction drops dead rows.
        Rows in ascending order (compaction's) keep their postings' order, so the postings
        are filtered, not sorted again."""
        rows = np.asarray(rows, dtype=np.int64)
        lens = np.diff(self.fwd_starts)[rows]
        ends = np.cumsum(lens)
        entries = np.repeat(self.fwd_starts[rows], lens) + \
            (np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lens, lens))
        fwd_keys = np.asarray(self.fwd_keys)[entries]
        fwd_tfs = np.asarray(self.fwd_tfs)[entries]
        doclen, langs = np.asarray(self.doclen)[rows], np.asarray(self.langs)[rows]
        if len(rows) > 1 and not bool(np.all(rows[1:] > rows[:-1])):
            return Segment._from_forward(fwd_keys, fwd_tfs, lens, doclen, langs)
        renumber = np.full(self.n, -1, dtype=np.int64)
        renumber[rows] = np.arange(len(rows))
        kept = renumber[np.asarray(self.rows)]
        keep = kept >= 0
        # every term has a posting, so reduceat's segments are the terms' posting lists
        per_term = np.add.reduceat(keep.astype(np.int64), np.asarray(self.starts[:-1])) \
            if len(self.keys) else np.zeros(0, dtype=np.int64)
        alive = per_term > 0
        starts = np.zeros(int(alive.sum()) + 1, dtype=np.int64)
        np.cumsum(per_term[alive], out=starts[1:])
        fwd_starts = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=fwd_starts[1:])
        return Segment(np.asarray(self.keys)[alive], starts,
                       kept[keep].astype(np.uint32), np.asarray(self.tfs)[keep], doclen,
                       fwd_starts, fwd_keys, fwd_tfs, langs)

    # -- look-ups -------------------------------------------------------------------------

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, stop) posting offsets of each key (start == stop where a key is absent)."""
        last = self._found
        if last is not None and np.array_equal(last[0], keys):
            return last[1]  # scoring and then coverage look up the same query terms
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, len(self.keys) - 1) if len(self.keys) else pos
        hit = (self.keys[pos] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        start = np.where(hit, self.starts[pos], 0)
        stop = np.where(hit, self.starts[np.minimum(pos + 1, len(self.starts) - 1)], 0)
        self._found = (np.array(keys, copy=True), (start, stop))
        return start, stop

    def doc_freqs(self, keys: np.ndarray) -> np.ndarray:
        start, stop = self.find(keys)
        return stop - start

    def row_keys(self, row: int) -> np.ndarray:
        start, stop = int(self.fwd_starts[row]), int(self.fwd_starts[row + 1])
        if self.fwd_file is None or stop <= start:
            return np.asarray(self.fwd_keys[start:stop])
        # A saved segment reads the row with one pread instead of through the memory map: a
        # search needs the forward index of one row (feedback), and every page fault on a
        # map brings 64 KB around it into the process, so a few hundred searches made all
        # of fwd_keys (40% of a segment's bytes) resident for a few bytes each.
        path, offset = self.fwd_file
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.pread(fd, (stop - start) * 8, offset + start * 8)
        finally:
            os.close(fd)
        return np.frombuffer(data, dtype=self.fwd_keys.dtype)

    # -- files ---------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ARRAYS:
            with open(folder / f"{name}.npy", "wb") as handle:
                np.save(handle, np.ascontiguousarray(getattr(self, name)))
                handle.flush()
        self.name = folder.name

    @classmethod
    def load(cls, folder: Path) -> "Segment":
        # np.asarray drops the memmap subclass (same memory): its Python-level __getitem__
        # and __array_finalize__ cost more than the look-ups themselves.
        maps = [np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS]
        fwd = maps[ARRAYS.index("fwd_keys")]
        fwd_file = (str(folder / "fwd_keys.npy"), int(fwd.offset)) \
            if fwd.dtype == np.dtype("<i8") and fwd.flags.c_contiguous else None
        return cls(*(np.asarray(m) for m in maps), name=folder.name, fwd_file=fwd_file)
