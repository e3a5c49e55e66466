"""How a step-mode episode ends: the answer, and the done event every face reads.

Two ways to an answer: the model gave one (FINAL ANSWER, respond, Finish[...]) and it is
cleaned up (`_finish`), or the loop stopped for another reason (adaptive exit, the
iteration limit, repeats, errors) and one more call writes it from the observations
(`_final_call`). Either way the answer goes through the answer composer (compose.py): the
statements the sources support, the direct answer first, cited, and the sources' own best
sentences when nothing the model wrote survives; never empty.

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
from ..parsing import LABEL_RE, clean_answer, parse_step
from .grounding import RepetitionGuard
from .sources import clean_citations

ANSWER_MAX_TOKENS = 768
ANSWER_STOP = ["\nOBSERVATION", "\nObservation", "\nBEOBACHTUNG", "\nBeobachtung"]


class AnswerWriter:
    """Mixed into Episode: the final answer and the done event."""

    def _finish(self, answer: str, it: int) -> Iterator[Event]:
        yield {"status": "final_answer", "iteration": it, "usage": self.last_usage}
        yield from self._composed(clean_answer(answer))

    def _composed(self, answer: str) -> Iterator[Event]:
        """The answer the user reads (modes/compose.py): only statements the sources
        support, the direct answer first, cited; extractive when nothing survives."""
        answer = clean_citations(answer, len(self.book)).strip()
        composition = self.composer.compose(
            answer, self.question, self.book.sources, lang=self.lang,
            prompt_texts=(self.messages[0]["content"], prompts.load("final_answer", self.lang)),
            not_found=prompts.fill(prompts.load("not_found", self.lang), QUESTION=self.question),
            more_sources=self._question_sources)
        yield {"delta": composition.text}
        done = self._done(composition.text)
        done["model_answer"] = answer
        done["composition"] = composition.as_dict()
        yield done

    def _question_sources(self) -> list:
        """For the composer (when the model's answer does not pass intact): what a search
        of the user's own question adds to what the run gathered. Only after the run did
        search (an answer from the conversation alone is not judged against documents)
        and did not search the question itself; a failing search adds nothing."""
        tool = self.tools.search_tool()
        if tool is None or self.searched_question or not len(self.book):
            return []
        self.searched_question = True
        try:
            result = tool(self.question)
        except Exception:  # noqa: BLE001 - the answer must not be lost to a search
            return []
        before = len(self.book)
        self.book.add(result.sources or [])
        return self.book.sources[before:]

    def _final_call(self, reason: str) -> Iterator[Event]:
        """Answer from what was gathered (adaptive exit, limit, repeats): never empty."""
        yield {"status": "final_answer", "iteration": self.iterations, "reason": reason,
               "usage": self.last_usage}
        self.messages.append({"role": "user", "content": prompts.fill(
            prompts.load("final_answer", self.lang), QUESTION=self.question)})
        options = GenerationOptions(stop=ANSWER_STOP, max_tokens=ANSWER_MAX_TOKENS)
        # The reply is composed before it is shown (a small model's text may not survive),
        # so it is read whole rather than streamed as deltas.
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
                text += chunk.text
                if guard.feed(text):                    # looping: stop generating
                    getattr(stream, "close", lambda: None)()
                    break
            self._count(usage)
        except LLMError as err:
            yield {"status": "error", "message": str(err), "usage": self.last_usage}
            parts = []
        step = parse_step("".join(parts))
        answer = step.final_answer if step.final_answer is not None else unlabelled_answer(parts)
        yield from self._composed(answer)

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
