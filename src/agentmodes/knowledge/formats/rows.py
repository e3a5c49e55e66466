"""Table rows as text that still says what each value is.

A bare "Berlin | 12 | 2019" row loses its meaning once it sits alone in a chunk; with the
header folded in ("City: Berlin; Staff: 12; Since: 2019") a search for "staff in Berlin"
finds it and the model can read it. The first non-empty row is taken as the header.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..extract_types import Block

MAX_ROWS = 100_000          # a larger sheet is cut (said in a block) rather than read forever


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def row_blocks(rows: Iterable[Sequence[object]], heading_path: list[str]) -> list[Block]:
    blocks: list[Block] = []
    header: list[str] | None = None
    for n, row in enumerate(rows):
        cells = [cell_text(v) for v in row]
        if not any(cells):
            continue
        if n >= MAX_ROWS:
            blocks.append(Block(f"(table cut after {MAX_ROWS} rows)", heading_path))
            break
        if header is None:
            header = cells
            blocks.append(Block(" | ".join(c for c in cells if c), heading_path))
            continue
        pairs = [f"{name}: {value}" if name else value
                 for name, value in zip(header + [""] * (len(cells) - len(header)), cells)
                 if value]
        blocks.append(Block("; ".join(pairs), heading_path))
    return blocks
