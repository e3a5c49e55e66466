"""Print rich tables without ever cutting a name or a number.

rich fits a table to the console's width, 80 columns when stdout is a pipe or a file, by
wrapping cells and then cropping them with an ellipsis: "reflection" and "reflexion" both
became "refle…" in a benchmark table, and a cropped number is a wrong number. A table
wider than the console is therefore printed at its natural width instead (the terminal
wraps the long lines; a file or pipe receives them whole).
"""

from __future__ import annotations

from typing import Optional

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

_UNBOUNDED = 10_000


def natural_width(table: Table, console: Console) -> int:
    """The width at which no cell of the table wraps or is cropped."""
    options = console.options.update(width=_UNBOUNDED, max_width=_UNBOUNDED)
    return Measurement.get(console, options, table).maximum


def print_table(table: Table, console: Optional[Console] = None) -> None:
    console = console or Console()
    width = natural_width(table, console)
    if width > console.width:   # rich clamps print(width=...) to the console: widen a copy
        console = Console(file=console.file, width=width, color_system=console.color_system,
                          force_terminal=console.is_terminal, highlight=False)
    console.print(table)
