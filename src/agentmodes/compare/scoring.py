"""How good an answer is: against gold answers when the user has them, else as a model
judges it.

With gold: exact match and token F1 (SQuAD/HotpotQA normalisation, evaluators/text.py) of
the answer's first line without citation markers (the short answer, the rule `bench
hotpotqa` scores by), and gold-in-answer: a gold answer's normalised words appear, in
order, anywhere in the whole answer (long, cited answers that contain the right fact).

Without gold: seed 001's independent Reviewer (modes/reflection.py) as a judge, asked two
things separately so that one verdict cannot hide the other: is every statement supported
by the sources the run found (grounded), and does the answer address every part of the
question (complete). This is a model's judgement, not a measurement: reports label it with
the judging model's name, and a 135M model's verdicts are close to noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..evaluators.text import exact_match, f1_score, normalize_answer, strip_citations
from ..modes.reflection import Reviewer
from ..modes.self_correction import Attempt, render_sources

GROUNDED_FOCUS = ("grounding only: is every statement in the work supported by the "
                  "sources given above? Ignore style, length and completeness.")
COMPLETE_FOCUS = ("completeness only: does the work answer every part of the original task? "
                  "Ignore style and length.")


def short_answer(answer: str) -> str:
    """The answer's first line without citation markers."""
    text = strip_citations(answer or "")
    return text.splitlines()[0].strip() if text else ""


def gold_scores(answer: str, golds: Sequence[str]) -> dict[str, Any]:
    """em, f1 (of the short answer) and gold_in_answer (anywhere in the answer)."""
    short = short_answer(answer)
    whole = f" {normalize_answer(strip_citations(answer or ''))} "
    return {"em": any(exact_match(short, g) for g in golds),
            "f1": round(max((f1_score(short, g) for g in golds), default=0.0), 4),
            "gold_in_answer": any(normalize_answer(g) and f" {normalize_answer(g)} " in whole
                                  for g in golds)}


@dataclass(slots=True)
class Judgement:
    grounded: Optional[bool]       # None: the judge's verdict could not be read
    complete: Optional[bool]
    issues: list[str]
    prompt_tokens: int
    completion_tokens: int
    calls: int

    def as_dict(self) -> dict[str, Any]:
        return {"judge_grounded": self.grounded, "judge_complete": self.complete,
                "judge_issues": self.issues, "judge_prompt_tokens": self.prompt_tokens,
                "judge_completion_tokens": self.completion_tokens, "judge_calls": self.calls}


class Judge:
    """The Reviewer as a judge of finished answers; `label` names the judging model."""

    def __init__(self, llm: Any, label: str, language: str = "auto"):
        self.label = label
        self.grounding = Reviewer(llm, kind="text", focus=GROUNDED_FOCUS, language=language)
        self.completeness = Reviewer(llm, kind="text", focus=COMPLETE_FOCUS, language=language)

    def judge(self, question: str, answer: str, sources: list[dict]) -> Judgement:
        attempt = Attempt(output=answer, context=render_sources(sources), sources=sources)
        grounded, used_g = self.grounding.review(question, attempt)
        complete, used_c = self.completeness.review(question, attempt)
        issues = [f"grounding: {i}" for i in grounded.issues] + \
                 [f"completeness: {i}" for i in complete.issues]
        used = used_g + used_c
        return Judgement(_verdict(grounded.verdict), _verdict(complete.verdict), issues,
                         used.prompt_tokens, used.completion_tokens, used.calls)


def _verdict(value: Optional[str]) -> Optional[bool]:
    return None if value is None else value == "pass"
