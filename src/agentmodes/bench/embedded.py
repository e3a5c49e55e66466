"""Benchmarks of the embedded model's two crutches: KV prefix reuse and step grammars.

prefix_reuse: a 4-iteration ReflAct episode (the real system prompt, a HotpotQA question,
each iteration adding the model's step and an observation made of that question's own
context paragraphs, formatted as rag_search formats them) run twice on the same prompts:
once evaluating every prompt from scratch, once keeping the KV cache's common prefix. The
count of evaluated prompt tokens is exact (prompt_tokens - cached_tokens); llama.cpp's own
perf counter (n_p_eval) is reported beside it as an independent check.

wellformed: the first step of each of the 100 HotpotQA questions, with and without the
ReflAct (or ReAct/ACT) grammar, read by the project's tolerant `parse_step` and by a strict
regex of the seed's exact format. A step counts as parsed when parse_step finds no error and
an action or a final answer.
"""

from __future__ import annotations

import re
import statistics
import time
from typing import Any, Callable, Optional

from ..llm.base import GenerationOptions, Message
from ..llm.completion import collect
from ..llm.grammars import step_grammar
from ..llm.llamacpp import LlamaCppModel

TOOLS = [("rag_search", "query", "Semantic document search"),
         ("lexical_search", "query", "Keyword search")]
TOOL_NAMES = [name for name, _, _ in TOOLS]
STRICT = {
    "reflact": r'REFLECTION: [^\n]+\n(ACTION: (rag_search|lexical_search)\("[^"\n]+"\)'
               r'|FINAL ANSWER: .+)',
    "react": r'THOUGHT: [^\n]+\n(ACTION: (rag_search|lexical_search)\("[^"\n]+"\)'
             r'|FINAL ANSWER: .+)',
    "act": r'ACTION: (rag_search|lexical_search|respond)\("[^"\n]+"\)',
}
Progress = Callable[[str], None]


def system_prompt(mode: str) -> str:
    """The system prompt the agent itself would send (prompts/ as the Agent assembles it)."""
    from .. import prompts
    from ..settings import ChatbotSettings

    tools = TOOLS + ([("respond", "answer", "Give the final answer")] if mode == "act" else [])
    return prompts.system_prompt(mode, ChatbotSettings(agent_mode=mode), "en", tools)


def observation(paragraphs: list[tuple[str, str]], first_number: int) -> str:
    """Paragraphs formatted as a rag_search observation ("[n] title: snippet (relevance)")."""
    from ..tools.base import Source
    from ..tools.observation import format_sources

    sources = [Source(title=t, source=f"{t}.md", text=x, confidence=0.5) for t, x in paragraphs]
    numbers = range(first_number, first_number + len(sources))
    return "OBSERVATION: " + format_sources(sources, list(numbers))


# -- prefix reuse ---------------------------------------------------------------------------

def _perf(model: LlamaCppModel) -> tuple[int, float]:
    import llama_cpp

    data = llama_cpp.llama_perf_context(model._llm._ctx.ctx)
    return int(data.n_p_eval), float(data.t_p_eval_ms)


def run_prefix_reuse(question: Any, *, iterations: int = 4, max_tokens: int = 160,
                     model_path: Optional[str] = None, progress: Progress = lambda _: None
                     ) -> dict:
    """Both variants over the same prompts; the transcript comes from the first variant."""
    grammar = step_grammar("reflact", TOOL_NAMES)
    options = GenerationOptions(max_tokens=max_tokens, grammar=grammar)
    base: list[Message] = [{"role": "system", "content": system_prompt("reflact")},
                           {"role": "user", "content": question.question}]
    paragraphs = list(question.paragraphs)
    prompts: list[list[Message]] = []
    variants = {}
    import llama_cpp

    for reuse in (False, True):
        name = "with prefix reuse" if reuse else "without prefix reuse"
        progress(name)
        model = LlamaCppModel(model_path, prefix_reuse=reuse)
        rows = []
        messages = list(base)
        for i in range(iterations):
            if reuse:
                messages = prompts[i]       # exactly the prompts the other variant saw
            else:
                prompts.append(list(messages))
            llama_cpp.llama_perf_context_reset(model._llm._ctx.ctx)
            start = time.perf_counter()
            result = collect(model.stream(messages, options))
            wall = time.perf_counter() - start
            n_p_eval, t_p_eval_ms = _perf(model)
            usage = result.usage
            rows.append({"iteration": i + 1, "prompt_tokens": usage.prompt_tokens,
                         "cached_tokens": usage.cached_tokens,
                         "evaluated_tokens": usage.prompt_tokens - usage.cached_tokens,
                         "llama_n_p_eval": n_p_eval, "prompt_eval_ms": round(t_p_eval_ms, 1),
                         "completion_tokens": usage.completion_tokens,
                         "wall_s": round(wall, 3)})
            if not reuse:
                messages = messages + [
                    {"role": "assistant", "content": result.text},
                    {"role": "user", "content": observation(paragraphs[2 * i:2 * i + 2],
                                                            2 * i + 1)}]
        model.close()
        variants[name] = {
            "iterations": rows,
            "evaluated_tokens": sum(r["evaluated_tokens"] for r in rows),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "llama_n_p_eval": sum(r["llama_n_p_eval"] for r in rows),
            "prompt_eval_ms": round(sum(r["prompt_eval_ms"] for r in rows), 1),
            "wall_s": round(sum(r["wall_s"] for r in rows), 3),
        }
    without, with_ = variants["without prefix reuse"], variants["with prefix reuse"]
    return {
        "benchmark": "prefix_reuse", "question": question.question,
        "iterations": iterations, "max_tokens": max_tokens, "variants": variants,
        "evaluated_ratio": round(without["evaluated_tokens"] / max(1, with_["evaluated_tokens"]), 2),
        "prompt_eval_time_ratio": round(without["prompt_eval_ms"] / max(1e-9, with_["prompt_eval_ms"]), 2),
        "wall_ratio": round(without["wall_s"] / max(1e-9, with_["wall_s"]), 2),
        "target": "evaluated_ratio >= 2",
    }


def prefix_reuse_markdown(report: dict) -> str:
    lines = [f"# Embedded model: KV prefix reuse over a {report['iterations']}-iteration "
             "ReflAct episode", "",
             f"Question: {report['question']}  ",
             f"Model: SmolLM2-135M-Instruct Q4_1 (llama.cpp), grammar on, "
             f"max_tokens {report['max_tokens']} per step.", "",
             "| variant | prompt tokens | evaluated | llama.cpp n_p_eval | prompt eval ms "
             "| wall s |", "|---|---:|---:|---:|---:|---:|"]
    for name, v in report["variants"].items():
        lines.append(f"| {name} | {v['prompt_tokens']} | {v['evaluated_tokens']} | "
                     f"{v['llama_n_p_eval']} | {v['prompt_eval_ms']} | {v['wall_s']} |")
    lines += ["", f"Evaluated prompt tokens: **{report['evaluated_ratio']}x fewer** with reuse "
              f"(target >= 2x); prompt-eval time {report['prompt_eval_time_ratio']}x, "
              f"wall time {report['wall_ratio']}x.", "", "Per iteration (evaluated / prompt):", "",
              "| iteration | without | with |", "|---:|---:|---:|"]
    rows = zip(*(v["iterations"] for v in report["variants"].values()))
    for a, b in rows:
        lines.append(f"| {a['iteration']} | {a['evaluated_tokens']} / {a['prompt_tokens']} | "
                     f"{b['evaluated_tokens']} / {b['prompt_tokens']} |")
    return "\n".join(lines) + "\n"


# -- well-formed steps ----------------------------------------------------------------------

def judge(text: str, mode: str) -> dict:
    from ..parsing import parse_step

    step = parse_step(text, reflact=(mode == "reflact"))
    parsed = step.ok and (step.action is not None or step.final_answer is not None)
    return {"parsed": parsed, "strict": bool(re.fullmatch(STRICT[mode], text.strip())),
            "error": step.error.code if step.error else None}


def run_wellformed(questions: list, *, mode: str = "reflact", max_tokens: int = 512,
                   model_path: Optional[str] = None,
                   progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """First step of every question, without then with the grammar, on one model."""
    from ..modes.loop import STOP

    model = LlamaCppModel(model_path)
    system = system_prompt(mode)
    grammar = step_grammar(mode, TOOL_NAMES + (["respond"] if mode == "act" else []))
    total = 2 * len(questions)
    variants: dict[str, dict] = {}
    samples: dict[str, list] = {}
    done = 0
    for name, g in (("without grammar", None), ("with grammar", grammar)):
        records = []
        for q in questions:
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": q.question}]
            start = time.perf_counter()
            result = collect(model.stream(messages, GenerationOptions(
                stop=STOP, max_tokens=max_tokens, grammar=g)))
            verdict = judge(result.text, mode)
            records.append({"id": q.id, "text": result.text, **verdict,
                            "completion_tokens": result.usage.completion_tokens,
                            "finish": result.finish_reason,
                            "wall_s": time.perf_counter() - start})
            done += 1
            progress(done, total)
        n = len(records)
        variants[name] = {
            "steps": n,
            "parsed": sum(r["parsed"] for r in records),
            "parsed_share": round(sum(r["parsed"] for r in records) / n, 3),
            "strict": sum(r["strict"] for r in records),
            "strict_share": round(sum(r["strict"] for r in records) / n, 3),
            "hit_max_tokens": sum(r["finish"] == "length" for r in records),
            "median_completion_tokens": statistics.median(r["completion_tokens"] for r in records),
            "median_step_s": round(statistics.median(r["wall_s"] for r in records), 2),
            "errors": _count(r["error"] for r in records if r["error"]),
        }
        samples[name] = [{k: r[k] for k in ("id", "text", "parsed", "strict", "finish",
                                            "completion_tokens")} for r in records]
    model.close()
    return {"benchmark": "wellformed", "mode": mode, "questions": len(questions),
            "max_tokens": max_tokens, "variants": variants, "samples": samples,
            "target": "parsed_share == 1.0 with grammar"}


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def wellformed_markdown(report: dict) -> str:
    lines = [f"# Embedded model: well-formed first steps ({report['mode']}, "
             f"{report['questions']} HotpotQA questions)", "",
             "SmolLM2-135M-Instruct Q4_1, the agent's own system prompt, stop sequences as in "
             f"the loop, max_tokens {report['max_tokens']}. *parsed*: `parse_step` (tolerant) "
             "finds an action or a final answer; *strict*: the seed's exact format.", "",
             "| variant | parsed | strict format | hit max_tokens | median tokens "
             "| median s/step | parse errors |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, v in report["variants"].items():
        errors = ", ".join(f"{k} {n}" for k, n in sorted(v["errors"].items())) or "-"
        lines.append(f"| {name} | {v['parsed']}/{v['steps']} ({v['parsed_share']:.0%}) | "
                     f"{v['strict']}/{v['steps']} ({v['strict_share']:.0%}) | "
                     f"{v['hit_max_tokens']} | {v['median_completion_tokens']} | "
                     f"{v['median_step_s']} | {errors} |")
    lines += ["", "First replies (without grammar, then with):", ""]
    for name, rows in report["samples"].items():
        for r in rows[:3]:     # the JSON has every reply
            text = " ".join(r["text"].split())[:160]
            lines.append(f"- {name}: `{text}`")
    return "\n".join(lines) + "\n"
