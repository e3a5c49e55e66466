"""What the composed answer begins with: the model's own statement or the sources' best.

The issue's rule is "the direct answer first". A capable model's answer is the direct
answer and leads as written; a small model's often is not, though every word of it may be
true: it lacks the kind of content asked for (no time for a "when" question), or it gives a
value the best source sentences do not ("1 point" where the source says "gave up just 308
points"), or it ranks well below the best source sentence by the extractive ranking itself
(LEAD_MARGIN, fitted on held-out questions: bench/compose_calibration.py). Then the best
extracted statements lead and the model's statements that still answer follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..knowledge.analysis import detect_language
from .answer_types import evidence, has_evidence, values
from .extractive import Candidate, rank, select
from .statements import Statement

if TYPE_CHECKING:
    from .compose import _Kept

# How far the model's best statement may rank below the best source sentence before that
# sentence leads. Calibrated (compose_calibration.md): the mean over capable and off-point
# simulated answers is flat from 0.75 to 1.5 (0.778-0.780 on 600 questions), within noise.
LEAD_MARGIN = 1.0


class LeadChooser:
    """Mixed into the composer's per-answer state (compose._Work): uses its question,
    kinds, sources, candidates, judge and composer settings."""

    def lead_for(self, kept: list[_Kept]) -> tuple[list, list[_Kept]]:
        """(extracted statements to put before the model's, the model's that stay).

        When the model's answer does not contain the first kind of content asked for, it
        did not answer the question: its statements without any wanted kind go too (true
        but beside the point), and the sources' best sentences for every kind it missed
        lead."""
        facts = [k for k in kept if k.statement.kind != "heading"]
        if facts and not self._lead_needed(facts):
            return [], kept
        ranked = self._ranked()
        if not ranked:
            return [], kept
        kinds = self.kinds
        if facts and self.kinds:
            for k in facts:
                if not evidence(k.plain, self.kinds):
                    self.drop(k.statement, "off-question")
            kept = [k for k in kept if evidence(k.plain, self.kinds)]
            have = evidence(" ".join(k.plain for k in kept), self.kinds)
            kinds = [k for k in self.kinds if k not in have] or self.kinds
        extracts = select(ranked, kinds, max_chars=self.c.max_chars)
        if kept:                   # the model's statements follow: no extract repeats them
            model_terms = [self.judge.terms(k.plain) for k in kept]
            extracts = [e for e in extracts if not any(
                _overlap(self.judge.terms(e.text), t) >= 0.6 for t in model_terms)]
            if not self.kinds:
                extracts = extracts[:1]
        return extracts, kept

    def _lead_needed(self, facts: list[_Kept]) -> bool:
        """The model's statements lead unless they lack the kind of content asked for, or
        rank well below the best source sentence for the question (then they are true but
        beside the point: a number, but not the one asked for, "1 point" where the source
        says "gave up just 308 points"; on the embedded model's XQuAD-en runs every
        kind-bearing answer that led this way missed the gold answer)."""
        said = " ".join(k.plain for k in facts)
        if self.kinds and not evidence(said, self.kinds[:1]):
            return True
        ranked = self._ranked()
        if not ranked:
            return False
        if self.kinds and _agrees(said, ranked, self.kinds[0]):
            return False               # the same answer the best source sentences give
        probes = [Candidate(0, Statement(k.plain, 0, len(k.plain), "sentence", 0, ()), i,
                            frozenset(), detect_language(k.plain),
                            max((self.sources[n - 1].confidence for n in k.cites), default=0.0))
                  for i, k in enumerate(facts)]
        scored = self._score(probes + [Candidate(c.source, c.statement, c.position, c.kinds,
                                                 c.language, c.confidence, c.order)
                                       for c in ranked])
        best_model = max(c.score for c in scored if c.source == 0)
        best_source = max(c.score for c in scored if c.source != 0)
        return best_model < best_source - self.c.lead_margin

    def _ranked(self) -> list[Candidate]:
        if self._ranked_cache is None:
            self._ranked_cache = self._score(list(self.cands))
        return self._ranked_cache

    def _score(self, cands: list[Candidate]) -> list[Candidate]:
        vectors = self.c.vectors.embed([c.text for c in cands]) if cands else None
        q_vector = self.c.vectors.embed_query(self.question) if vectors is not None else None
        return rank(self.question, cands, self.kinds,
                    lang=self.lang if self.strict_language else None,
                    analyzer=self.c.analyzer, q_vector=q_vector, vectors=vectors)



def _agrees(said: str, ranked: list[Candidate], kind: str, top: int = 3) -> bool:
    """Whether the model's answer gives what one of the best-ranked source sentences with
    content of the kind asked for gives (the same number, date or name)."""
    mine = values(said, kind)
    best = [c for c in ranked if has_evidence(c.text, kind)][:top]
    return any(mine & values(c.text, kind) for c in best)



def _overlap(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a) if a else 0.0

