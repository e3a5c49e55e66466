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
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..knowledge.analysis import Analyzer, detect_language
from .answer_types import question_types
from .cleanup import (PromptCopy, collapse_repeats, junk_reason, strip_labels,
                      strip_placeholders, words)
from .extractive import Candidate, candidates
from .lead import LEAD_MARGIN, LeadChooser
from .render import render_extracts, render_model
from .statements import Statement, block_citations, recite, split_statements
from .support import SupportJudge, numbers_of
from .vectors import SentenceVectors

MAX_CHARS = 600            # an extractive or repaired answer, before the sources
MODEL_MAX_CHARS = 1500     # an answer the model wrote that passed whole


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
    intact: bool = False              # the model's answer, byte for byte

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
        self.vectors = SentenceVectors(embedder)   # an Embedder, a zero-arg callable, or None
        self.analyzer = Analyzer(language if language in ("de", "en", "auto") else "auto")
        self.judge = judge or SupportJudge(self.analyzer, embed=self.vectors.embed)
        if self.judge.embed is None:
            self.judge.embed = self.vectors.embed
        self.max_chars, self.model_max_chars = max_chars, model_max_chars
        self.lead_margin = lead_margin

    # -- composing -----------------------------------------------------------------------
    def compose(self, answer: str, question: str, sources: Sequence[Any], *, lang: str = "en",
                prompt_texts: Sequence[str] = (), not_found: str = "",
                more_sources: Optional[Callable[[], Sequence[Any]]] = None) -> Composition:
        """The answer to show for `question`, from the model's `answer` and the run's
        `sources` (numbered 1..n as the answer cites them).

        `more_sources` (the loop passes a search of the user's own question) is asked only
        when the model's answer does not pass intact: what it returns is numbered on from
        n+1 and the answer composed again. A small model's search queries often miss the
        passage the question itself finds (XQuAD-en, embedded model: the gold passage was
        among the gathered sources for 85% of the questions); an answer that passes intact
        is never recomposed, so a capable model's answer stays byte for byte."""
        first = self._compose(answer, question, sources, lang, prompt_texts, not_found)
        if first.intact or more_sources is None:
            return first
        extra = list(more_sources() or ())
        if not extra:
            return first
        return self._compose(answer, question, [*sources, *extra], lang, prompt_texts,
                             not_found)

    def _compose(self, answer: str, question: str, sources: Sequence[Any], lang: str,
                 prompt_texts: Sequence[str], not_found: str) -> Composition:
        answer = answer or ""
        sources = [_as_source(s) for s in sources]
        work = _Work(self, question, sources, lang, prompt_texts)
        kept = work.judge_model(answer)
        if not sources:
            text = render_model(kept, cap=self.model_max_chars) if kept else ""
            return Composition(text or not_found, [Composed(k.text, "model", []) for k in kept],
                               work.dropped, extractive=not kept, model_answer=answer)
        lead, kept = work.lead_for(kept)
        intact = bool(kept) and not work.dropped and not work.changed and not lead
        cap = self.model_max_chars if intact else self.max_chars
        lead_text = render_extracts(lead, cap=cap)     # the direct answer comes first
        model_text = answer.strip() if intact else \
            render_model(kept, cap=cap - len(lead_text) - 2)
        text = "\n\n".join(p for p in (lead_text, model_text) if p)
        statements = [Composed(e.text + f" [{e.source}]", "extracted", [e.source])
                      for e in lead] + [Composed(k.text, "model", list(k.cites), k.support)
                                        for k in kept]
        return Composition(text or not_found, statements, work.dropped,
                           extractive=not kept, model_answer=answer, intact=intact)


@dataclass(slots=True)
class _Kept:
    statement: Statement
    text: str                      # as it will be shown (citations included)
    cites: tuple[int, ...]
    support: Optional[dict]
    plain: str


class _Work(LeadChooser):
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
        if self.c.vectors.model() is not None:
            rows = self.c.vectors.embed([plain])
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

@dataclass(slots=True)
class _Source:
    title: str
    text: str
    confidence: float


def _as_source(src: Any) -> Any:
    """Sources as the loop has them (Source objects) or as events carry them (dicts)."""
    if isinstance(src, dict):
        return _Source(str(src.get("title") or ""), str(src.get("text") or ""),
                       float(src.get("confidence") or 0.0))
    return src


def _plain(text: str) -> str:
    return Statement(text, 0, len(text), "sentence", 0, ()).plain


_CAPITALISED = re.compile(r"(?<=\s)[A-ZÄÖÜ][\w-]+")


def _support_dict(support) -> dict:
    return {"lexical": support.lexical, "dense": support.dense,
            **({"missing_numbers": list(support.missing_numbers)}
               if support.missing_numbers else {})}


def compose(answer: str, question: str, sources: Sequence[Any], *, lang: str = "en",
            embedder: Any = None, prompt_texts: Sequence[str] = ()) -> Composition:
    """One-off composition (a Composer per call: no vector cache across calls)."""
    return Composer(embedder).compose(answer, question, sources, lang=lang,
                                      prompt_texts=prompt_texts)

