"""CSV and TSV with the csv module: any text encoding (decoded like every text file), the
delimiter sniffed from the first lines, each row with its column names (rows.py)."""

from __future__ import annotations

import csv
import io

from ..extract_types import Extracted


def read_delimited(stem: str, data: bytes) -> Extracted:
    from ..extract import decode_text
    from .rows import row_blocks

    text = decode_text(data)
    sample = text[:8192]
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if sample.count("\t") > sample.count(",") else csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    return Extracted(stem, row_blocks(reader, [stem]))
