"""Where every benchmark writes its results: `<stem>.json` and `<stem>.md` side by side.

One writer so that all result files share their encoding (UTF-8, non-ASCII kept: German
queries and names stay readable), their JSON layout and the created folder.

The folder is the command's `--out`, else $AGENTMODES_RESULTS, else a user directory
($XDG_DATA_HOME/agentmodes/bench, i.e. ~/.local/share/agentmodes/bench). Never the
project's tracked `benchmarks/results/` by default: a smoke run (`--limit 5`) must not
overwrite the published figures, nor resume from the committed run logs; to re-measure
those, name the folder explicitly (`--out benchmarks/results`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

PROJECT_ROOT = Path(__file__).resolve().parents[3]
COMMITTED_RESULTS = PROJECT_ROOT / "benchmarks" / "results"
OUT_HELP = ("Results folder (default: $AGENTMODES_RESULTS, else "
            "$XDG_DATA_HOME/agentmodes/bench, i.e. ~/.local/share/agentmodes/bench). The "
            "committed figures are rewritten only with --out benchmarks/results.")
FRESH_HELP = "Ignore earlier runs in --out (their log is kept aside) and run every task again."


def default_results_dir() -> Path:
    env = os.environ.get("AGENTMODES_RESULTS", "").strip()
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME", "").strip() or Path.home() / ".local" / "share"
    return Path(data) / "agentmodes" / "bench"


def results_dir(out: Optional[str | os.PathLike] = None) -> Path:
    """The folder a benchmark writes to: `out` if given, else the default above."""
    return Path(out).expanduser() if out else default_results_dir()


def write_results(out_dir: Path, stem: str, data: Any, markdown: str) -> tuple[Path, Path]:
    """Write data as `<stem>.json` and the table as `<stem>.md`; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n",
                         encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path
