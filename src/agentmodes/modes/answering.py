"""How a step-mode episode ends: the answer, and the done event every face reads.

Two ways to an answer: the model gave one (FINAL ANSWER, respond, Finish[...]) and it is
cleaned up (`_finish`), or the loop stopped for another reason (adaptive exit, the
iteration limit, repeats, errors) and one more call writes it from the observations
(`_final_call`), streamed token by token with citations that match no source filtered out.
Either way the answer is never empty: with nothing usable from the model, what was found is
listed (or it says that nothing was found).

AnswerWriter is the part of Episode (loop.py) that does this; it reads the episode's
messages, source book, usage and language.
"""

from __future__ import annotations

import time
from typing import Iterator

from .. import prompts
from ..errors import LLMError
from ..events import Event
from ..llm.base import GenerationOptions
from ..parsing import LABEL_RE, SectionRouter, clean_answer, parse_step
from .grounding import RepetitionGuard, findings, grounded
from .sources import CitationFilter, clean_citations

ANSWER_MAX_TOKENS = 768
ANSWER_STOP = ["\nOBSERVATION", "\nObservation", "\nBEOBACHTUNG", "\nBeobachtung"]


class AnswerWriter:
    """Mixed into Episode: the final answer and the done event."""

    def _finish(self, answer: str, it: int) -> Iterator[Event]:
        answer = clean_citations(clean_answer(answer), len(self.book)).strip()
        answer = answer + self._findings_for(answer) if answer else self._fallback_answer()
        yield {"status": "final_answer", "iteration": it, "usage": self.last_usage}
        yield {"delta": answer}
        yield self._done(answer)

    def _findings_for(self, answer: str) -> str:
        """What the documents say, appended to an answer that neither cites nor echoes them."""
        if grounded(answer, self.book.sources):
            return ""
        return "\n\n" + prompts.fill(prompts.load("findings", self.lang),
                                      FINDINGS=findings(self.book.sources))

    def _final_call(self, reason: str) -> Iterator[Event]:
        """Answer from what was gathered (adaptive exit, limit, repeats): never empty."""
        yield {"status": "final_answer", "iteration": self.iterations, "reason": reason,
               "usage": self.last_usage}
        self.messages.append({"role": "user", "content": prompts.fill(
            prompts.load("final_answer", self.lang), QUESTION=self.question)})
        options = GenerationOptions(stop=ANSWER_STOP, max_tokens=ANSWER_MAX_TOKENS)
        router = SectionRouter(initial="answer")
        cites = CitationFilter(len(self.book))
        parts: list[str] = []
        usage = None
        guard, text = RepetitionGuard(), ""
        try:
            stream = self.llm.stream(self.messages, options)
            for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                if not chunk.text:
                    continue
                parts.append(chunk.text)
                for section, piece in router.feed(chunk.text):
                    if section == "answer" and (piece := cites.feed(piece)):
                        yield {"delta": piece}
                text += chunk.text
                if guard.feed(text):                    # looping: stop generating
                    getattr(stream, "close", lambda: None)()
                    break
            self._count(usage)
        except LLMError as err:
            yield {"status": "error", "message": str(err), "usage": self.last_usage}
            parts = []
        tail = "".join(cites.feed(p) for s, p in router.feed("", final=True) if s == "answer")
        tail += cites.flush()
        if tail:
            yield {"delta": tail}
        step = parse_step("".join(parts))
        answer = step.final_answer if step.final_answer is not None else unlabelled_answer(parts)
        answer = clean_citations(answer, len(self.book)).strip()
        extra = self._findings_for(answer) if answer else self._fallback_answer()
        if extra:
            yield {"delta": extra}
        yield self._done(answer + extra)

    def _fallback_answer(self) -> str:
        """What was found, listed with citations, when the model gave no usable answer."""
        if not len(self.book):
            return prompts.fill(prompts.load("not_found", self.lang), QUESTION=self.question)
        return prompts.fill(prompts.load("fallback", self.lang),
                            FINDINGS=findings(self.book.sources))

    def _done(self, answer: str) -> Event:
        return {"done": True, "full_response": answer, "sources": self.book.as_dicts(answer),
                "goal": self.goal, "mode": self.spec.name, "iterations": self.iterations,
                "adaptive_exit": self.adaptive_exit, "usage": self.usage.as_dict(),
                "elapsed_s": round(time.perf_counter() - self.started, 6)}


def unlabelled_answer(parts: list[str]) -> str:
    """A final reply without FINAL ANSWER label: its text up to any step label."""
    text = "".join(parts)
    m = LABEL_RE.search(text)
    return text[:m.start()] if m else text
