"""Calibrate the answer composer's thresholds and ranking weights on XQuAD-en.

    .venv/bin/python -m agentmodes.bench.compose_calibration [--questions 600] [--out DIR]

Data: XQuAD-en questions outside the `bench answers` sample (so the benchmark is not scored
on what was tuned), each with the passages a `rag_search` returns for it (hybrid, k=5), as
the agent would have them. Two things are fitted:

1. Support (modes/support.py). SQuAD's writers phrased questions as paraphrases of their
   passage, so "another question on the same passage + its answer" is a paraphrased claim
   the passage supports (positive), and "a question on another article + its answer" one it
   does not (negative); "the paraphrase with a wrong answer" is the hard negative (true
   topic, false fact). The claims are judged as the composer judges a model's sentence:
   their new words relative to the asked question, their numbers, their best cosine. The
   word threshold maximises F1 of "kept" over positives and negatives (a false keep and a
   false drop count alike); the cosine threshold is the lowest that lets through at most 5%
   of the negatives that fail the word test.
2. Ranking (modes/extractive.py): a grid over the fusion and prior weights, scored by the
   share of questions whose extractive answer has a gold answer in its first 300 characters
   and cites the gold passage.
3. The lead margin (modes/lead.py LEAD_MARGIN): how far a model's statement may rank below
   the best source sentence and still lead. Two simulated answers per question: a capable
   model's (the gold passage's sentence with the answer, cited) and a small model's
   off-point one (a retrieved sentence without the answer, cited, as the embedded model
   writes them). The margin maximises the mean share with the gold answer in the first 300
   characters and the gold passage cited over both; how often the capable answer passes
   byte for byte is reported beside it.
"""

from __future__ import annotations

import argparse
import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluators.text import normalize_answer, strip_citations
from ..modes import extractive
from ..modes.answer_types import question_types
from ..modes.compose import Composer
from ..modes.lead import LEAD_MARGIN
from ..modes.statements import citations
from ..modes.support import DENSE_SUPPORT, LEXICAL_SUPPORT, SupportJudge, numbers_of
from ..tools.search import hit_to_source
from .answer_data import BENCH_SAMPLE, QA, build_kb, load_qa, passage_of
from .results import results_dir, write_results

# RankWeights fields, then select()'s: which statements and in which order. (confidence and
# order were fitted in an earlier grid, 300 questions: flat within 0.3 points.)
GRID = {"alpha": (0.5, 0.7, 0.9), "kind": (0.5, 1.5, 3.0), "shorter_lead": (0.0, 0.5, 1.0),
        "runner_up": (1.0, 2.5)}
_SELECT = ("shorter_lead", "runner_up")
MAX_FALSE_SUPPORT = 0.10      # share of unsupported claims the support judge may accept


def _gathered(kb: Any, q: QA, stems: dict) -> list:
    sources = [hit_to_source(h) for h in kb.search(q.question, mode="hybrid", k=5)]
    for s in sources:
        s.url = passage_of(s.source, stems)       # remembered for scoring
    return sources


def support_examples(pool: list[QA], gathered: dict, by_passage: dict, rng: random.Random):
    """(question, claim, label, kind) rows; label 1 = the gathered sources support it."""
    rows = []
    others = [q for q in pool]
    for q in pool:
        sources = gathered[q.id]
        if not any(s.url in q.gold for s in sources):
            continue
        siblings = [o for p in q.gold for o in by_passage.get(p, []) if o.id != q.id]
        if not siblings:
            continue
        sib = rng.choice(siblings)
        rows.append((q, f"{sib.question.rstrip('?')} {sib.answers[0]}.", 1, "paraphrase"))
        far = rng.choice(others)
        while far.gold & q.gold or any(s.url in far.gold for s in sources):
            far = rng.choice(others)
        rows.append((q, f"{far.question.rstrip('?')} {far.answers[0]}.", 0, "other topic"))
        text = " ".join(s.text for s in sources).lower()
        wrong = next((o.answers[0] for o in rng.sample(others, 20)
                      if normalize_answer(o.answers[0]) not in normalize_answer(text)), None)
        if wrong:
            rows.append((q, f"{sib.question.rstrip('?')} {wrong}.", 0, "wrong answer"))
    return rows


def word_threshold(table: list[dict]) -> dict:
    """The row of the lowest threshold keeping at most MAX_FALSE_SUPPORT of the negatives."""
    rows = sorted(table, key=lambda row: row["threshold"])
    return next((row for row in rows if row["negatives_kept"] <= MAX_FALSE_SUPPORT), rows[-1])


def calibrate_support(rows, gathered, composer: Composer) -> dict:
    judge = SupportJudge(composer.analyzer, lexical=0.0, dense=2.0, embed=composer.vectors.embed)
    feats = []
    for q, claim, label, kind in rows:
        cands = extractive.candidates(gathered[q.id])
        by_source: dict[int, list[str]] = {}
        for c in cands:
            by_source.setdefault(c.source, []).append(c.text)
        ev = [judge.evidence(s.title, by_source.get(n, []))
              for n, s in enumerate(gathered[q.id], start=1)]
        vec = composer.vectors.embed([claim])
        sup = judge.judge(claim, judge.terms(q.question), numbers_of(q.question), ev,
                          vec[0] if vec is not None else None)
        feats.append((label, kind, sup.lexical, sup.dense, not sup.missing_numbers))
    labels = np.array([f[0] for f in feats])
    lexical = np.array([f[2] for f in feats])
    dense = np.array([f[3] for f in feats])
    numbers_ok = np.array([f[4] for f in feats])
    table = []
    for t in np.arange(0.2, 0.95, 0.05):
        accept = (lexical >= t) & numbers_ok
        tpr = float(accept[labels == 1].mean())
        fpr = float(accept[labels == 0].mean())
        table.append({"threshold": round(float(t), 2), "positives_kept": round(tpr, 3),
                      "negatives_kept": round(fpr, 3)})

    # The errors do not cost the same: a supported sentence the judge drops is replaced by
    # an extractive one from the same sources, while an unsupported sentence it keeps is a
    # wrong statement the user reads as grounded. So the word threshold is the lowest one
    # that keeps at most MAX_FALSE_SUPPORT of the negative claims (an F1 optimum would
    # accept one wrong claim in five).
    best = word_threshold(table)
    failing = ~((lexical >= best["threshold"]) & numbers_ok)
    neg = np.sort(dense[failing & (labels == 0) & numbers_ok])
    dense_t = float(neg[int(0.95 * (len(neg) - 1))]) if len(neg) else 0.9
    rescued = failing & (labels == 1) & numbers_ok & (dense >= dense_t)
    by_kind = {}
    for kind in ("paraphrase", "other topic", "wrong answer"):
        mask = np.array([f[1] == kind for f in feats])
        final = ((lexical >= best["threshold"]) & numbers_ok) | (numbers_ok & (dense >= dense_t))
        by_kind[kind] = {"claims": int(mask.sum()),
                         "kept": round(float(final[mask].mean()) if mask.any() else 0.0, 3)}
    return {"claims": len(feats), "lexical_threshold": best["threshold"],
            "shipped": {"lexical": LEXICAL_SUPPORT, "dense": DENSE_SUPPORT},
            "dense_threshold": round(dense_t, 3), "lexical_table": table,
            "rescued_by_dense": int(rescued.sum()), "kept_by_kind": by_kind}


def calibrate_ranking(pool: list[QA], gathered: dict, composer: Composer) -> dict:
    prepared = []
    for q in pool:
        sources = gathered[q.id]
        cands = extractive.candidates(sources)
        if not cands:
            continue
        vectors = composer.vectors.embed([c.text for c in cands])
        prepared.append((q, sources, cands, vectors, composer.vectors.embed_query(q.question),
                         question_types(q.question)))
    results = []
    shipped = {**{k: getattr(extractive.DEFAULT_WEIGHTS, k) for k in GRID if k not in _SELECT},
               "shorter_lead": extractive.SHORTER_LEAD, "runner_up": extractive.RUNNER_UP}
    for values in itertools.product(*GRID.values()):
        point = dict(zip(GRID, values))
        weights = replace(extractive.DEFAULT_WEIGHTS,
                          **{k: v for k, v in point.items() if k not in _SELECT})
        hits = 0
        for q, sources, cands, vectors, qv, kinds in prepared:
            ranked = extractive.rank(q.question, list(cands), kinds, lang="en",
                                     analyzer=composer.analyzer, q_vector=qv, vectors=vectors,
                                     weights=weights)
            chosen = extractive.select(ranked, kinds,
                                       **{k: v for k, v in point.items() if k in _SELECT})
            text = " ".join(f"{e.text} [{e.source}]" for e in chosen)[:300]
            lead = normalize_answer(text)
            found = any(f" {normalize_answer(a)} " in f" {lead} " for a in q.answers)
            cited = any(sources[e.source - 1].url in q.gold for e in chosen)
            hits += found and cited
        results.append({**point, "both": round(hits / max(1, len(prepared)), 4)})
    results.sort(key=lambda r: -r["both"])
    return {"questions": len(prepared), "best": results[0], "top": results[:10],
            "default": next((r for r in results if all(r[k] == shipped[k] for k in GRID)), None)}


LEAD_MARGINS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def calibrate_lead(pool: list[QA], gathered: dict, composer: Composer) -> dict:
    rng = random.Random(9)
    cases = []
    for q in pool:
        sources = gathered[q.id]
        answers = [f" {normalize_answer(a)} " for a in q.answers]
        says = lambda text: any(a in f" {normalize_answer(text)} " for a in answers)  # noqa: E731
        cands = [c for c in extractive.candidates(sources) if c.statement.kind == "sentence"]
        good = [c for c in cands if sources[c.source - 1].url in q.gold and says(c.text)]
        off = [c for c in cands if not says(c.text) and len(c.text) > 40]
        if good and off:
            cases.append((q, sources, good[0], rng.choice(off)))
    rows = []
    for margin in LEAD_MARGINS:
        composer.lead_margin = margin
        intact = good_both = off_both = 0
        for q, sources, good, off in cases:
            for cand, is_good in ((good, True), (off, False)):
                answer = f"{cand.text} [{cand.source}]"
                text = composer.compose(answer, q.question, sources, lang="en").text
                both = _both(text, q, sources)
                if is_good:
                    intact += text == answer
                    good_both += both
                else:
                    off_both += both
        n = max(1, len(cases))
        rows.append({"margin": margin, "capable_intact": round(intact / n, 4),
                     "capable_both": round(good_both / n, 4), "off_point_both": round(off_both / n, 4),
                     "mean_both": round((good_both + off_both) / (2 * n), 4)})
    best = max(rows, key=lambda r: (r["mean_both"], r["capable_intact"]))
    return {"questions": len(cases), "best": best, "table": rows}


def _both(text: str, q: QA, sources: list) -> bool:
    lead = normalize_answer(strip_citations(text[:300]))
    cited = {sources[n - 1].url for n in citations(text) if 1 <= n <= len(sources)}
    return any(f" {normalize_answer(a)} " in f" {lead} " for a in q.answers) and \
        bool(cited & set(q.gold))


def main(argv: Any = None) -> None:
    from ..knowledge.base import KnowledgeBase

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder (bench/results.py's default if not given)")
    parser.add_argument("--data", default=None)
    args = parser.parse_args(argv)
    qa = load_qa("xquad-en", args.data)
    pool = qa.split("calibration", args.questions)      # never a question the bench scores
    held_out = {q.id for q in qa.split("bench", BENCH_SAMPLE)}
    by_passage: dict[str, list[QA]] = {}
    for q in qa.questions:
        if q.id not in held_out:
            for p in q.gold:
                by_passage.setdefault(p, []).append(q)
    kb_path, stems = build_kb(qa)
    with KnowledgeBase.open(kb_path, create=False) as kb:
        composer = Composer(embedder=kb.embedder)
        gathered = {q.id: _gathered(kb, q, stems) for q in pool}
        rows = support_examples(pool, gathered, by_passage, random.Random(9))
        support = calibrate_support(rows, gathered, composer)
        ranking = calibrate_ranking(pool, gathered, composer)
        lead = calibrate_lead(pool, gathered, composer)
    data = {"data": f"XQuAD-en, {len(pool)} questions outside the {BENCH_SAMPLE}-question "
                    "bench sample; sources: hybrid top-5 per question",
            "support": support, "ranking": ranking, "lead": lead}
    write_results(results_dir(args.out), "compose_calibration", data, markdown(data))
    print(markdown(data))


def markdown(data: dict) -> str:
    s, r = data["support"], data["ranking"]
    lines = ["# Answer composer calibration", "", f"- data: {data['data']}",
             f"- support claims: {s['claims']}; chosen word threshold "
             f"{s['lexical_threshold']} (the lowest keeping at most {MAX_FALSE_SUPPORT:.0%} of "
             f"the negative claims), cosine threshold {s['dense_threshold']} "
             f"({s['rescued_by_dense']} paraphrases kept by the cosine alone); shipped in "
             f"modes/support.py: {s['shipped']['lexical']} and {s['shipped']['dense']}", "",
             "| claims | count | kept |", "|---|---|---|"]
    lines += [f"| {k} | {v['claims']} | {v['kept']:.3f} |" for k, v in s["kept_by_kind"].items()]
    lines += ["", "| word threshold | positives kept | negatives kept |", "|---|---|---|"]
    lines += [f"| {t['threshold']} | {t['positives_kept']:.3f} | {t['negatives_kept']:.3f} |"
              for t in s["lexical_table"]]
    lines += ["", f"Ranking ({r['questions']} questions): share with a gold answer in the first "
              "300 characters and the gold passage cited, best weights first", "",
              "| " + " | ".join(GRID) + " | both |", "|" + "---|" * (len(GRID) + 1)]
    lines += ["| " + " | ".join(str(t[k]) for k in GRID) + f" | {t['both']:.3f} |"
              for t in r["top"]]
    if r.get("default"):
        lines += ["", f"Shipped weights: {r['default']} (runner_up stays at 1.0: more filler "
                  "sentences score higher here but make the README's answers longer and add "
                  "other-language sentences; see modes/extractive.py)"]
    ld = data.get("lead")
    if ld:
        lines += ["", f"Lead margin ({ld['questions']} questions, simulated answers): best "
                  f"{ld['best']['margin']}; shipped in modes/lead.py: {LEAD_MARGIN}", "",
                  "| margin | capable passes intact | capable both | off-point both | mean |",
                  "|---|---|---|---|---|"]
        lines += [f"| {t['margin']} | {t['capable_intact']:.3f} | {t['capable_both']:.3f} | "
                  f"{t['off_point_both']:.3f} | {t['mean_both']:.3f} |" for t in ld["table"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
