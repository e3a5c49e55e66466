"""Reflection (seed 001): draft, critique by an independent reviewer, refine; repeat.

    O_0 = actor(task)
    F_i = reflect(task, O_i)                 the reviewer prompt, with its own role and focus
    O_{i+1} = refine(task, O_i, F_i)

The loop stops when the reviewer finds nothing more to improve, or after `max_iterations`
critiques. Two ways to say so, read by parse_verdict:
- the seed's: the reviewer writes "无需改进" ("no improvement needed"), in the prompt's
  language or a close variant ("No improvement needed", "Keine Verbesserung nötig",
  "不需要进一步改进", ...), as the seed's reviewer does in its second critique of the primes
  example ("一般情况下无需改进") after naming further refinements;
- a JSON verdict {"verdict": "pass"|"revise", "issues": [...]} at the end of the critique,
  which the default reviewer asks for; a backend that enforces grammars gets a GBNF grammar
  so even a small model emits one. Where both appear, the JSON verdict decides (a reviewer
  quoting the phrase while asking for a revision has not passed the work).
`focus="efficiency"` is the seed's own reviewer for code (prompts/selfcorrect/
review_efficiency.*.md, verbatim in Chinese): extremely strict, analyses the time
complexity, proposes an algorithmically better solution such as a sieve, and says "no
improvement needed" only when the code is optimal. If an evaluator (tests) is given, its
result is shown to the reviewer and a failing test overrides a "pass": the work is not done
while its tests fail.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from ..errors import AgentModesError
from ..events import Event, Usage, final_event, status
from ..evaluators.base import Evaluation
from ..llm.base import ChatModel
from .actors import Actor, LLMActor
from .compose import Composer
from .memory import Memory
from .self_correction import (Attempt, complete, evaluate_attempt, extract_code, prompt,
                              resolve_language, sources_as_dicts, usage_of)

HISTORY_RECORDS = 4     # earlier records the reviewer sees: about the last two rounds
DEFAULT_FOCUS = "factual errors, logic gaps, missed edge cases, and efficiency"
CODE_FOCUS = "correctness, edge cases, and algorithmic efficiency (time complexity)"
EFFICIENCY = "efficiency"           # --focus efficiency: the seed's reviewer

# "No improvement needed" as reviewers write it (seed 001: "无需改进"), in each prompt language.
_NO_IMPROVEMENT = re.compile(
    r"无[需须](?:再|进一步|任何)?(?:的)?改进|不(?:再)?需要(?:再|进一步|任何)?(?:的)?改进"
    r"|没有(?:什么|任何)?(?:需要|可以)(?:再)?改进"
    r"|\bno (?:further |more )?improvements? (?:is |are )?(?:needed|necessary|required)\b"
    r"|\bno need for (?:any )?(?:further )?improvements?\b|\bnothing (?:left )?to improve\b"
    r"|\bkeine (?:weitere[n]? )?verbesserung(?:en)? (?:ist |sind )?(?:mehr )?"
    r"(?:nötig|notwendig|erforderlich)\b|\bnichts (?:mehr )?zu verbessern\b",
    re.IGNORECASE)


def no_improvement_needed(text: str) -> bool:
    """Seed 001's convergence test, in any prompt language and close variants."""
    return bool(_NO_IMPROVEMENT.search(text or ""))

# The reviewer's verdict as JSON only: issues first, so the model names problems before it
# decides. Bounded lengths keep a small model from rambling until max_tokens.
VERDICT_GRAMMAR = r'''
root    ::= "{\"issues\": [" issues? "], \"verdict\": " verdict "}"
issues  ::= issue (", " issue){0,4}
issue   ::= "\"" char{1,300} "\""
char    ::= [^"\\\n] | "\\" ["\\/nt]
verdict ::= "\"pass\"" | "\"revise\""
'''

_PASS = {"pass", "passed", "ok", "approve", "approved", "accept", "accepted", "done", "good",
         "no_issues", "lgtm"}
_REVISE = {"revise", "fail", "failed", "reject", "improve", "needs_revision", "revision", "change"}


@dataclass(slots=True)
class Verdict:
    verdict: Optional[str]        # "pass", "revise", or None when none could be read
    issues: list[str]
    critique: str                 # the feedback text handed to the refiner
    source: Optional[str] = None  # how it was read: "json", "phrase", "line"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def _norm_verdict(value: Any) -> Optional[str]:
    word = re.sub(r"[^a-z_]", "", str(value).lower().replace(" ", "_"))
    if word in _PASS:
        return "pass"
    if word in _REVISE:
        return "revise"
    return None


def parse_verdict(text: str) -> Verdict:
    """Read the reviewer's reply: the last JSON object with a "verdict" key (code fences and
    surrounding prose allowed), else the seed's "no improvement needed" phrase (a pass),
    else a "verdict: pass" line. When no verdict can be read, `verdict` is None, which
    never counts as a pass: the loop keeps refining to its limit."""
    decoder = json.JSONDecoder()
    found: Optional[tuple[int, dict]] = None
    for match in re.finditer(r"\{", text):
        try:
            obj, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and any(k.lower() == "verdict" for k in obj):
            found = (match.start(), obj)
    if found is not None:
        start, obj = found
        lower = {k.lower(): v for k, v in obj.items()}
        issues = lower.get("issues") or []
        issues = [str(i) for i in (issues if isinstance(issues, list) else [issues]) if str(i).strip()]
        prose = re.sub(r"```(?:json)?\s*$", "", text[:start].rstrip()).strip()
        # The refiner needs both: the prose explains, the issues list what to change.
        missing = [i for i in issues if i not in prose]
        critique = "\n".join(p for p in (prose, "\n".join(f"- {i}" for i in missing)) if p)
        return Verdict(_norm_verdict(lower.get("verdict")), issues, critique, "json")
    if no_improvement_needed(text):
        return Verdict("pass", [], text.strip(), "phrase")
    line = re.search(r"verdict\W{0,3}\s*([A-Za-z_][A-Za-z_ ]{1,19})", text, re.IGNORECASE)
    verdict = _norm_verdict(line.group(1).split()[0]) if line else None
    return Verdict(verdict, [], text.strip(), "line" if verdict else None)


class Reviewer:
    """The independent critic of seed 001: its own role, its own focus, and a structured
    verdict. Also usable as an Evaluator (an LLM judge), e.g. for Reflexion on text tasks
    that have no tests: it passes when the verdict is "pass"."""

    def __init__(self, llm: ChatModel, *, kind: str = "text", focus: Optional[str] = None,
                 language: str = "auto", max_tokens: int = 768):
        self.llm, self.kind, self.language, self.max_tokens = llm, kind, language, max_tokens
        # The seed's efficiency reviewer is a code reviewer; for text it is just a focus.
        self.seed_reviewer = (focus or "").strip().lower() == EFFICIENCY and kind == "code"
        self.focus = focus or (CODE_FOCUS if kind == "code" else DEFAULT_FOCUS)

    def review(self, task: str, attempt: Attempt, evaluation: Optional[Evaluation] = None,
               history: str = "") -> tuple[Verdict, Usage]:
        """Critique one attempt; `history` (earlier attempts and critiques) lets the reviewer
        check that old issues were fixed instead of raising them again."""
        lang = resolve_language(self.language, task)
        body = f"```python\n{attempt.output.strip()}\n```" if self.kind == "code" else attempt.output
        context = prompt("context", lang, sources=attempt.context) if attempt.context else ""
        tests = prompt("evaluation", lang, feedback=evaluation.feedback) if evaluation else ""
        earlier = prompt("history", lang, trajectory=history) if history.strip() else ""
        if self.seed_reviewer:          # free text; it converges with "no improvement needed"
            reply = complete(self.llm, prompt("review_efficiency", lang, task=task.strip(),
                                              history=earlier, code=attempt.output.strip(),
                                              evaluation=tests), max_tokens=self.max_tokens)
            return parse_verdict(reply.text), reply.usage
        reply = complete(self.llm, prompt("review", lang, focus=self.focus, task=task.strip(),
                                          context=context, history=earlier, attempt=body,
                                          evaluation=tests),
                         max_tokens=self.max_tokens, grammar=VERDICT_GRAMMAR)
        return parse_verdict(reply.text), reply.usage

    def __call__(self, task: Any, candidate: str) -> Evaluation:
        verdict, usage = self.review(str(task), Attempt(output=str(candidate)))
        return Evaluation(verdict.passed, 1.0 if verdict.passed else 0.0, verdict.critique,
                          {"verdict": verdict.verdict, "issues": verdict.issues,
                           "usage": usage.as_dict()})


@dataclass(slots=True)
class ReflectionResult:
    answer: str
    iterations: int               # refinements made
    stop_reason: str              # "verdict" | "max_iterations" | "error"
    usage: Usage
    elapsed_s: float
    attempts: list[str] = field(default_factory=list)
    critiques: list[str] = field(default_factory=list)
    evaluation: Optional[dict] = None
    sources: list[dict] = field(default_factory=list)
    trajectory: list[dict] = field(default_factory=list)


class Reflection:
    """The execute-reflect-refine loop over any actor (code prompt, text prompt, Agent)."""

    def __init__(self, llm: ChatModel, actor: Optional[Actor] = None, *, kind: str = "code",
                 max_iterations: int = 3, focus: Optional[str] = None,
                 evaluator: Any = None, reviewer_llm: Optional[ChatModel] = None,
                 language: str = "auto", max_tokens: int = 768):
        if max_iterations < 0:
            raise AgentModesError(f"max_iterations must be >= 0, got {max_iterations}")
        self.llm = llm
        self.actor = actor or LLMActor(llm, kind=kind, language=language, max_tokens=max_tokens)
        self.kind = getattr(self.actor, "kind", kind)
        self.max_iterations = max_iterations
        self.reviewer = Reviewer(reviewer_llm or llm, kind=self.kind, focus=focus,
                                 language=language, max_tokens=max_tokens)
        self.evaluator = evaluator
        self.language = language
        self.max_tokens = max_tokens
        # Refined answers over documents go through the step modes' answer composer, with
        # the actor's knowledge base's embedder when it has one (AgentActor).
        self.composer = Composer(embedder=lambda: self.actor.knowledge.embedder)

    def run(self, task: str, *, eval_task: Any = None) -> ReflectionResult:
        done = final_event(self.stream(task, eval_task=eval_task))
        return ReflectionResult(
            answer=done["full_response"], iterations=done["iterations"],
            stop_reason=done["stop_reason"], usage=Usage(**done["usage"]),
            elapsed_s=done["elapsed_s"], attempts=done["attempts"], critiques=done["critiques"],
            evaluation=done.get("evaluation"), sources=done["sources"],
            trajectory=done["trajectory"])

    def stream(self, task: str, *, eval_task: Any = None) -> Iterator[Event]:
        if not task or not task.strip():
            raise AgentModesError("the task is empty; say what the answer or code should do")
        started = time.perf_counter()
        lang = resolve_language(self.language, task)
        memory, total = Memory(lang), Usage()
        critiques: list[str] = []
        evaluations: list[Evaluation] = []
        stop_reason, iterations = "max_iterations", 0
        yield status("starting", strategy="reflection", task=task, kind=self.kind,
                     max_iterations=self.max_iterations)
        try:
            attempt = self.actor.act(task)
        except AgentModesError as err:
            yield status("error", message=f"the draft failed: {err}")
            raise
        total += attempt.usage
        current = len(memory.records)          # index of the attempt under review
        memory.add_record("execution", attempt.output, iteration=0)
        yield status("draft", iteration=0, content=attempt.output,
                     sources=sources_as_dicts(attempt.sources), usage=attempt.usage.as_dict(),
                     **({"plan": attempt.plan} if attempt.plan else {}))
        for i in range(1, self.max_iterations + 1):
            evaluation = self._evaluate(eval_task if eval_task is not None else task, attempt)
            if evaluation is not None:
                total += usage_of(evaluation.details.get("usage"))
                evaluations.append(evaluation)
                memory.add_record("evaluation", evaluation.feedback, iteration=i - 1)
                yield status("evaluation", iteration=i - 1, **evaluation.as_dict())
            try:
                verdict, review_usage = self.reviewer.review(
                    task, attempt, evaluation,
                    memory.get_trajectory(HISTORY_RECORDS, before=current))
            except AgentModesError as err:
                yield status("error", message=f"the critique failed: {err}")
                stop_reason = "error"
                break
            total += review_usage
            tests_fail = evaluation is not None and not evaluation.passed
            critique = verdict.critique
            if tests_fail:
                critique = f"{critique}\n\nThe tests still fail:\n{evaluation.feedback}".strip()
            critiques.append(critique)
            memory.add_record("reflection", critique, iteration=i, verdict=verdict.verdict)
            yield status("critique", iteration=i, content=critique, verdict=verdict.verdict,
                         verdict_source=verdict.source, issues=verdict.issues,
                         usage=review_usage.as_dict())
            if verdict.passed and not tests_fail:
                stop_reason = "verdict"
                break
            try:
                attempt = self._refine(task, attempt, critique, lang)
            except AgentModesError as err:
                yield status("error", message=f"the refinement failed: {err}")
                stop_reason = "error"
                break
            total += attempt.usage
            iterations = i
            current = len(memory.records)
            memory.add_record("execution", attempt.output, iteration=i)
            yield status("refinement", iteration=i, content=attempt.output,
                         usage=attempt.usage.as_dict())
        else:
            # The last refinement has not been tested yet; tests decide which attempt wins.
            evaluation = self._evaluate(eval_task if eval_task is not None else task, attempt)
            if evaluation is not None:
                total += usage_of(evaluation.details.get("usage"))
                evaluations.append(evaluation)
                memory.add_record("evaluation", evaluation.feedback, iteration=iterations)
                yield status("evaluation", iteration=iterations, **evaluation.as_dict())
        if stop_reason == "max_iterations" and self.max_iterations:
            yield status("max_iterations_reached", iterations=iterations)
        answer, chosen = self._choose(memory.executions(), evaluations)
        yield {"done": True, "full_response": answer, "sources": sources_as_dicts(attempt.sources),
               "goal": task, "strategy": "reflection", "iterations": iterations,
               "stop_reason": stop_reason, "usage": total.as_dict(),
               "elapsed_s": round(time.perf_counter() - started, 3),
               "attempts": memory.executions(), "critiques": critiques,
               "evaluation": chosen.as_dict() if chosen else None,
               "trajectory": memory.as_list()}

    def _evaluate(self, eval_task: Any, attempt: Attempt) -> Optional[Evaluation]:
        if self.evaluator is None:
            return None
        return evaluate_attempt(self.evaluator, eval_task, attempt)

    def _refine(self, task: str, last: Attempt, critique: str, lang: str) -> Attempt:
        if self.kind == "code":
            code = f"```python\n{last.output.strip()}\n```"
            # attempt: our templates' name; last_code_attempt: the seed's (refine_code.zh.md)
            reply = complete(self.llm, prompt("refine_code", lang, task=task.strip(),
                                              attempt=code, last_code_attempt=code,
                                              feedback=critique), max_tokens=self.max_tokens)
            output = extract_code(reply.text)
        else:
            context = prompt("context", lang, sources=last.context) if last.context else ""
            reply = complete(self.llm, prompt("refine_text", lang, task=task.strip(),
                                              context=context, attempt=last.output,
                                              feedback=critique), max_tokens=self.max_tokens)
            output = reply.text
            if last.sources:          # an answer from documents: composed as the modes' are
                output = self.composer.compose(output, task, last.sources, lang=lang).text
        return Attempt(output=output, usage=reply.usage, context=last.context,
                       sources=last.sources, raw=reply.text, trajectory=output)

    @staticmethod
    def _choose(outputs: list[str], evaluations: list[Evaluation]
                ) -> tuple[str, Optional[Evaluation]]:
        """Without tests the last attempt wins (each refines the one before). With tests,
        the best-scoring attempt wins, the later one on a tie: a refinement that breaks
        passing code must not replace it."""
        if not evaluations or len(evaluations) != len(outputs):
            return outputs[-1], (evaluations[-1] if evaluations else None)
        best = max(range(len(outputs)), key=lambda j: (evaluations[j].score, j))
        return outputs[best], evaluations[best]
