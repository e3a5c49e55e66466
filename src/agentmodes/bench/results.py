"""Where every benchmark writes its results: `<stem>.json` and `<stem>.md` side by side.

One writer so that all result files share their encoding (UTF-8, non-ASCII kept: German
queries and names stay readable), their JSON layout and the created folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(out_dir: Path, stem: str, data: Any, markdown: str) -> tuple[Path, Path]:
    """Write data as `<stem>.json` and the table as `<stem>.md`; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n",
                         encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path
