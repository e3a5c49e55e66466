"""Benchmark: does the sandbox score reference solutions right, and how fast?

    python -m agentmodes.bench.sandbox_canonical [--workers 2] [--data DIR]

Sets: HumanEval canonical (164, must all pass), HumanEval `return None` and HumanEval with
each task given the next task's solution (must all fail), MBPP sanitized reference code
(427; the test split 11-510 is reported separately) and MBPP shifted. The peer is a plain
unisolated `python -c` per program (what a naive harness does): same pass counts expected,
its time shows what the isolation costs. Writes sandbox_canonical.json/.md under --out (bench/results.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from ..errors import AgentModesError
from ..evaluators.code import SCORING_LIMITS, CodeTask, reference_program
from ..tools.sandbox import isolation_level
from ..tools.sandbox.runner import sandbox_interpreter
from .codedata import MBPP_TEST_SPLIT, load_humaneval, load_mbpp
from .results import OUT_HELP, results_dir, write_results
from .score_samples import Sample, score_samples



def _unisolated(tasks: list[CodeTask], completions: list[str], workers: int) -> dict[str, Any]:
    """The peer: each program in a bare subprocess, no namespaces, no limits but the same
    wall clock (it has no CPU-time limit)."""
    def one(pair: tuple[CodeTask, str]) -> bool:
        try:
            return subprocess.run([sandbox_interpreter(), "-I", "-S", "-c",
                                   reference_program(*pair)], capture_output=True,
                                  timeout=SCORING_LIMITS.timeout_s,
                                  stdin=subprocess.DEVNULL).returncode == 0
        except subprocess.TimeoutExpired:
            return False
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(one, zip(tasks, completions)))
    return {"passed": sum(outcomes), "seconds": round(time.monotonic() - started, 2),
            "failed_ids": [t.task_id for t, ok in zip(tasks, outcomes) if not ok]}


def _sandboxed(benchmark: str, tasks: list[CodeTask], completions: list[str],
               workers: int) -> dict[str, Any]:
    samples = [Sample(i + 1, t.task_id, c) for i, (t, c) in enumerate(zip(tasks, completions))]
    report = score_samples(benchmark, tasks, samples, workers=workers)
    failed = [r["task_id"] for r in report.results if not r["passed"]]
    return {"passed": report.passed, "seconds": round(report.duration_s, 2),
            "failed_ids": failed, "ids_passed": [r["task_id"] for r in report.results
                                                 if r["passed"]]}


def _shifted(tasks: list[CodeTask]) -> list[str]:
    return [t.reference for t in tasks[1:] + tasks[:1]]


def run(workers: int = 2, data: Optional[str] = None) -> dict[str, Any]:
    load = os.getloadavg()[0]
    humaneval = load_humaneval(data)
    mbpp = load_mbpp(data, split="all")
    sets = [
        ("HumanEval canonical", "humaneval", humaneval, [t.reference for t in humaneval],
         "all pass"),
        ("HumanEval `return None`", "humaneval", humaneval,
         ["    return None\n"] * len(humaneval), "all fail"),
        ("HumanEval next task's solution", "humaneval", humaneval, _shifted(humaneval), "all fail"),
        ("MBPP sanitized reference (all 427)", "mbpp", mbpp, [t.reference for t in mbpp],
         "all pass"),
        ("MBPP next task's solution", "mbpp", mbpp, _shifted(mbpp), "all fail"),
    ]
    rows = []
    for name, benchmark, tasks, completions, target in sets:
        print(f"scoring {name} ...", flush=True)
        sandbox = _sandboxed(benchmark, tasks, completions, workers)
        row = {"set": name, "target": target, "total": len(tasks),
               "sandbox_passed": sandbox["passed"], "sandbox_s": sandbox["seconds"],
               "sandbox_failed_ids": sandbox["failed_ids"] if target == "all pass"
               else [], "unexpected_passes": sandbox["ids_passed"] if target == "all fail" else []}
        if target == "all pass":
            peer = _unisolated(tasks, completions, workers)
            row.update(peer_passed=peer["passed"], peer_s=peer["seconds"],
                       peer_failed_ids=peer["failed_ids"],
                       overhead_ratio=round(sandbox["seconds"] / max(peer["seconds"], 1e-9), 2))
        if benchmark == "mbpp" and target == "all pass":
            test_ids = {t.task_id for t in tasks if int(t.task_id.split("/")[1]) in MBPP_TEST_SPLIT}
            row["test_split_total"] = len(test_ids)
            row["test_split_passed"] = len(test_ids - set(sandbox["failed_ids"]))
        row["met"] = (row["sandbox_passed"] == len(tasks)) if target == "all pass" \
            else row["sandbox_passed"] == 0
        rows.append(row)
    return {"workers": workers, "cpus": os.cpu_count(), "isolation": isolation_level(),
            "python": platform.python_version(), "machine": platform.machine(),
            "cpu_s": SCORING_LIMITS.cpu_seconds(), "timeout_s": SCORING_LIMITS.timeout_s,
            "load_average": round(load, 2), "rows": rows,
            "humaneval_under_60s": rows[0]["sandbox_s"] < 60}


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# Sandbox on reference solutions ({result['workers']} workers, "
             f"{result['cpus']} CPUs, isolation: {result['isolation']}, "
             f"{result['cpu_s']} CPU s / {result['timeout_s']} wall s per program)", "",
             "| set | target | total | sandbox passed | sandbox s | unisolated passed | "
             "unisolated s | time ratio sandbox/unisolated | met |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['set']} | {r['target']} | {r['total']} | {r['sandbox_passed']} | "
                     f"{r['sandbox_s']} | {r.get('peer_passed', '-')} | {r.get('peer_s', '-')} | "
                     f"{r.get('overhead_ratio', '-')} | {'yes' if r['met'] else 'NO'} |")
    mbpp = next(r for r in result["rows"] if "test_split_total" in r)
    lines += ["", f"MBPP test split (task ids 11-510): {mbpp['test_split_passed']}/"
              f"{mbpp['test_split_total']} reference solutions pass.",
              f"HumanEval canonical scored in {result['rows'][0]['sandbox_s']} s "
              f"(target: under 60 s).",
              f"Machine load average at the start: {result['load_average']} (shared machine; "
              "a failure of the unisolated peer is a slow solution missing the deadline).",
              f"Unisolated failures: {[r.get('peer_failed_ids') for r in result['rows']]}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", type=Path, default=None, help=OUT_HELP)
    args = parser.parse_args()
    try:
        result = run(args.workers, args.data)
    except AgentModesError as err:
        raise SystemExit(f"agentmodes: error: {err}") from None
    table = markdown(result)
    write_results(results_dir(args.out), "sandbox_canonical", result, table)
    print(table)


if __name__ == "__main__":
    main()
