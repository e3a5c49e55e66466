"""The answer composer: the answer a user reads, on any model, for every face.

    composition = Composer(embedder=kb.embedder).compose(model_answer, question, sources,
                                                         lang="de", prompt_texts=[system])
    composition.text          # the direct answer first, every statement cited
    composition.statements    # each with its origin ("model" or "extracted") and sources

The model's answer is cut into statements (sentences, list items; modes/statements.py).
Text copied from the prompt, labels, placeholders, loops, junk, the question echoed and
sentences in another language are removed (modes/cleanup.py); every remaining statement is
kept only when a source it cites, or another gathered source, supports it (modes/
support.py: its numbers all occur there, and its new words do or the embedder finds it
close to a source sentence). A kept statement without a citation gets the number of the
source that supports it; one that cites the wrong source gets the right one.

When nothing the model wrote survives, the answer is extractive: the sentences of the
gathered sources that best answer the question, ranked with the KB's own lexical and dense
scoring at sentence level and the question's type in mind (modes/extractive.py), at most
about three, each with its [n]. When the model's statements survive but do not contain what
was asked (no time for a "when" question, no contact for "how do I reach you"), the best
extracted statement leads and the model's follow. An answer that passes intact from a
capable model is returned byte for byte.

Why here and not in each face: the step modes' loop calls the composer once where the final
answer is produced, so Agent.run/stream, the service (WebSocket, SSE, REST), /v1 chat
completions and Reflection's and Reflexion's text answers all show the same composed text.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..knowledge.analysis import Analyzer, detect_language
from .answer_types import evidence, has_evidence, question_types, values
from .cleanup import (PromptCopy, collapse_repeats, junk_reason, strip_labels,
                      strip_placeholders, words)
from .extractive import Candidate, candidates, rank, select
from .statements import Statement, block_citations, recite, split_statements
from .support import SupportJudge, numbers_of

MAX_CHARS = 600            # an extractive or repaired answer, before the sources
MODEL_MAX_CHARS = 1500     # an answer the model wrote that passed whole
LEAD_MARGIN = 1.5          # how far the model's best statement may rank below the best
                           # source sentence before that sentence leads (calibrated)
_CACHE_SIZE = 4096


@dataclass(slots=True)
class Composed:
    text: str
    origin: str                      # "model" | "extracted"
    sources: list[int]
    support: Optional[dict] = None


@dataclass(slots=True)
class Composition:
    text: str
    statements: list[Composed] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)     # {"text", "reason"}
    extractive: bool = False          # nothing the model wrote survived
    model_answer: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"extractive": self.extractive,
                "statements": [{"text": s.text, "origin": s.origin, "sources": s.sources,
                                **({"support": s.support} if s.support else {})}
                               for s in self.statements],
                "dropped": self.dropped}


class Composer:
    """One per agent (it caches sentence vectors); thread-safe enough for reuse: the cache
    is the only shared state and a lost race only embeds a sentence twice."""

    def __init__(self, embedder: Any = None, *, language: str = "auto",
                 max_chars: int = MAX_CHARS, model_max_chars: int = MODEL_MAX_CHARS,
                 judge: Optional[SupportJudge] = None, lead_margin: float = LEAD_MARGIN):
        self._embedder = embedder          # an Embedder, a zero-argument callable, or None
        self.analyzer = Analyzer(language if language in ("de", "en", "auto") else "auto")
        self.judge = judge or SupportJudge(self.analyzer, embed=self._embed)
        if self.judge.embed is None:
            self.judge.embed = self._embed
        self.max_chars, self.model_max_chars = max_chars, model_max_chars
        self.lead_margin = lead_margin
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._failed = False

    # -- embedder ------------------------------------------------------------------------
    def _model(self) -> Any:
        if self._failed or self._embedder is None:
            return None
        if callable(self._embedder) and not hasattr(self._embedder, "embed_passages"):
            try:
                self._embedder = self._embedder()
            except Exception:      # noqa: BLE001 - no embedder: words and numbers only
                self._failed, self._embedder = True, None
        return self._embedder

    def _embed(self, texts: Sequence[str]) -> Optional[np.ndarray]:
        model = self._model()
        if model is None or not texts:
            return None
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            try:
                rows = model.embed_passages(missing)
            except Exception:      # noqa: BLE001 - a failing embedder must not lose the answer
                self._failed = True
                return None
            for text, row in zip(missing, rows):
                self._vectors[text] = np.asarray(row, dtype=np.float32)
            while len(self._vectors) > _CACHE_SIZE:
                self._vectors.popitem(last=False)
        return np.vstack([self._vectors[t] for t in texts])

    def _embed_query(self, text: str) -> Optional[np.ndarray]:
        model = self._model()
        if model is None:
            return None
        try:
            return np.asarray(model.embed_query(text), dtype=np.float32)
        except Exception:          # noqa: BLE001
            self._failed = True
            return None

    # -- composing -----------------------------------------------------------------------
    def compose(self, answer: str, question: str, sources: Sequence[Any], *, lang: str = "en",
                prompt_texts: Sequence[str] = (), not_found: str = "") -> Composition:
        """The answer to show for `question`, from the model's `answer` and the run's
        `sources` (numbered 1..n as the answer cites them)."""
        answer = answer or ""
        sources = [_as_source(s) for s in sources]
        work = _Work(self, question, sources, lang, prompt_texts)
        kept = work.judge_model(answer)
        if not sources:
            text = work.render_model(answer, kept, cap=self.model_max_chars) if kept else ""
            return Composition(text or not_found, [Composed(k.text, "model", []) for k in kept],
                               work.dropped, extractive=not kept, model_answer=answer)
        lead, kept = work.lead_for(kept)
        intact = bool(kept) and not work.dropped and not work.changed and not lead
        cap = self.model_max_chars if intact else self.max_chars
        lead_text = work.render_extracts(lead, cap=cap)     # the direct answer comes first
        model_text = answer.strip() if intact else \
            work.render_model(answer, kept, cap=cap - len(lead_text) - 2)
        text = "\n\n".join(p for p in (lead_text, model_text) if p)
        statements = [Composed(e.text + f" [{e.source}]", "extracted", [e.source])
                      for e in lead] + [Composed(k.text, "model", list(k.cites), k.support)
                                        for k in kept]
        return Composition(text or not_found, statements, work.dropped,
                           extractive=not kept, model_answer=answer)


@dataclass(slots=True)
class _Kept:
    statement: Statement
    text: str                      # as it will be shown (citations included)
    cites: tuple[int, ...]
    support: Optional[dict]
    plain: str


class _Work:
    """The state of one composition (kept for its cached analyses of the sources)."""

    def __init__(self, composer: Composer, question: str, sources: Sequence[Any], lang: str,
                 prompt_texts: Sequence[str]):
        self.c, self.question, self.sources, self.lang = composer, question, sources, lang
        # Sentences in another language are only judged wrong when the question itself
        # shows its language ("Frage drei?" gives no evidence either way).
        self.strict_language = detect_language(question) == lang
        self.judge = composer.judge
        self.q_terms = self.judge.terms(question)
        self.q_numbers = numbers_of(question)
        self.kinds = question_types(question)
        self.prompt = PromptCopy(composer.analyzer, prompt_texts)
        self.dropped: list[dict] = []
        self.changed = False
        self._cands: Optional[list[Candidate]] = None
        self._evidence: Optional[list] = None
        self._ranked_cache: Optional[list[Candidate]] = None

    # sources, analysed once
    @property
    def cands(self) -> list[Candidate]:
        if self._cands is None:
            self._cands = candidates(self.sources)
        return self._cands

    @property
    def evidence(self) -> list:
        if self._evidence is None:
            by_source: dict[int, list[str]] = {}
            for cand in self.cands:
                by_source.setdefault(cand.source, []).append(cand.text)
            self._evidence = [self.judge.evidence(getattr(s, "title", "") or "",
                                                  by_source.get(n, []))
                              for n, s in enumerate(self.sources, start=1)]
        return self._evidence

    def drop(self, statement: Statement, reason: str) -> None:
        text = statement.text if len(statement.text) <= 200 else statement.text[:197] + "..."
        self.dropped.append({"text": text, "reason": reason})

    # the model's statements
    def judge_model(self, answer: str) -> list[_Kept]:
        statements = split_statements(answer, self.lang)
        covering = block_citations(statements)
        kept: list[_Kept] = []
        seen: list[frozenset] = []
        pending_headings: list[tuple[Statement, str]] = []
        for st, cover in zip(statements, covering):
            text = collapse_repeats(strip_placeholders(strip_labels(st.text)))
            if text != st.text:
                self.changed = True
            plain = _plain(text)
            if st.kind == "heading":
                pending_headings.append((st, text))
                continue
            reason = self._reject(text, plain, seen)
            support = None
            cites = tuple(n for n in cover if 1 <= n <= len(self.sources))
            if reason is None and self.sources and not plain.rstrip().endswith("?"):
                reason, cites, support = self._ground(plain, cites)
            if reason is None and self._foreign(plain, support):
                reason = "language"
            if reason is not None:
                self.drop(st, reason)
                continue
            if cites and cites != (st.cites or cover):
                # uncited, or citing a source that does not say it: cite the one that does
                text = recite(text, cites)
                self.changed = True
            for head, head_text in pending_headings:
                if head.block == st.block:
                    kept.append(_Kept(head, head_text, (), None, _plain(head_text)))
                else:
                    self.drop(head, "heading")
            pending_headings = []
            seen.append(self.judge.terms(plain))
            kept.append(_Kept(st, text, cites, support, plain))
        for head, _ in pending_headings:
            self.drop(head, "heading")
        return kept

    def _foreign(self, plain: str, support: Optional[dict]) -> bool:
        """A sentence of six or more words in another language than the question's, unless
        it quotes a source (a German name in an English answer is not a wrong language)."""
        if not self.strict_language or len(words(plain)) < 6:
            return False
        other = detect_language(plain)
        return other is not None and other != self.lang and \
            (support is None or support["lexical"] < 0.9)

    def _reject(self, text: str, plain: str, seen: list[frozenset]) -> Optional[str]:
        reason = junk_reason(plain)
        if reason:
            return reason
        if self.prompt.copied(plain):
            return "prompt"
        terms = self.judge.terms(plain)
        new = terms - self.q_terms
        if not new and not (numbers_of(plain) - self.q_numbers):
            return "question"
        names = self.judge.terms(" ".join(_CAPITALISED.findall(plain))) - self.q_terms
        if len(new) < 3 and not numbers_of(plain) and not names and len(terms) > 2 * len(new):
            return "thin"              # the question restated with a word or two added
        # the same sentence again, or a part of it (an answer cut off by the token limit
        # often ends in the first words of a sentence it already wrote)
        if any(terms and len(terms & s) / len(terms) >= 0.8 for s in seen):
            return "repeated"
        return None

    def _ground(self, plain: str, cites: tuple[int, ...]):
        """(reason to drop or None, the citations that support it, support figures)."""
        vector = None
        if self.c._model() is not None:
            rows = self.c._embed([plain])
            vector = rows[0] if rows is not None else None
        ev = self.evidence
        if cites:
            support = self.judge.judge(plain, self.q_terms, self.q_numbers,
                                       [ev[n - 1] for n in cites], vector)
            if support.supported:
                return None, cites, _support_dict(support)
        best, best_support = None, None
        for n in range(1, len(self.sources) + 1):
            support = self.judge.judge(plain, self.q_terms, self.q_numbers, [ev[n - 1]], vector)
            if support.supported and (best_support is None or
                                      (support.lexical, support.dense) >
                                      (best_support.lexical, best_support.dense)):
                best, best_support = n, support
        if best is None:
            whole = self.judge.judge(plain, self.q_terms, self.q_numbers, ev, vector)
            reason = "numbers" if whole.missing_numbers else "unsupported"
            return reason, cites, _support_dict(whole)
        return None, (best,), _support_dict(best_support)

    # the lead
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
        vectors = self.c._embed([c.text for c in cands]) if cands else None
        q_vector = self.c._embed_query(self.question) if vectors is not None else None
        return rank(self.question, cands, self.kinds,
                    lang=self.lang if self.strict_language else None,
                    analyzer=self.c.analyzer, q_vector=q_vector, vectors=vectors)

    # rendering
    def render_model(self, answer: str, kept: list[_Kept], cap: int) -> str:
        if cap < 40:                       # no room left after the lead
            return ""
        parts: list[str] = []
        length, last_block = 0, None
        for k in kept:
            sep = "" if not parts else "\n\n" if k.statement.block != last_block else \
                "\n" if k.statement.kind in ("item", "heading") else " "
            if parts and length + len(sep) + len(k.text) > cap:
                break
            parts.append(sep + (k.text if len(k.text) <= cap else _cut(k.text, cap)))
            length += len(parts[-1])
            last_block = k.statement.block
        return "".join(parts).strip()

    def render_extracts(self, extracts: list, cap: int) -> str:
        lines: list[str] = []
        length = 0
        for e in extracts:
            line = f"{e.text} [{e.source}]"
            if lines and length + len(line) + 1 > cap:
                break
            if len(line) > cap:
                line = _cut(e.text, max(40, cap - 6)) + f" [{e.source}]"
            lines.append(line)
            length += len(line) + 1
        return "\n".join(lines)


@dataclass(slots=True)
class _Source:
    title: str
    text: str
    confidence: float


def _agrees(said: str, ranked: list[Candidate], kind: str, top: int = 3) -> bool:
    """Whether the model's answer gives what one of the best-ranked source sentences with
    content of the kind asked for gives (the same number, date or name)."""
    mine = values(said, kind)
    best = [c for c in ranked if has_evidence(c.text, kind)][:top]
    return any(mine & values(c.text, kind) for c in best)


def _as_source(src: Any) -> Any:
    """Sources as the loop has them (Source objects) or as events carry them (dicts)."""
    if isinstance(src, dict):
        return _Source(str(src.get("title") or ""), str(src.get("text") or ""),
                       float(src.get("confidence") or 0.0))
    return src


def _plain(text: str) -> str:
    return Statement(text, 0, len(text), "sentence", 0, ()).plain


_CAPITALISED = re.compile(r"(?<=\s)[A-ZÄÖÜ][\w-]+")


def _overlap(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a) if a else 0.0


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[:cut if cut > limit // 2 else limit - 2].rstrip(",;: ") + " …"


def _support_dict(support) -> dict:
    return {"lexical": support.lexical, "dense": support.dense,
            **({"missing_numbers": list(support.missing_numbers)}
               if support.missing_numbers else {})}


def compose(answer: str, question: str, sources: Sequence[Any], *, lang: str = "en",
            embedder: Any = None, prompt_texts: Sequence[str] = ()) -> Composition:
    """One-off composition (a Composer per call: no vector cache across calls)."""
    return Composer(embedder).compose(answer, question, sources, lang=lang,
                                      prompt_texts=prompt_texts)

