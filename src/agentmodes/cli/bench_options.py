"""Options every benchmark command shares, defined once: where the data is read from,
where the results go (bench/results.py), and whether earlier runs are resumed."""

from __future__ import annotations

import typer

from ..bench.results import FRESH_HELP, OUT_HELP

DATA_HELP = ("Benchmark data folder (default: $AGENTMODES_DATA, else ../shared/data beside "
             "the checkout; the README's 'Benchmark data' says where each set comes from).")

DATA_OPTION = typer.Option(None, "--data", help=DATA_HELP)
# --out-dir: the name `bench prefix-reuse | wellformed | overhead` had first.
OUT_OPTION = typer.Option(None, "--out", "--out-dir", help=OUT_HELP)
FRESH_OPTION = typer.Option(False, "--fresh", help=FRESH_HELP)
