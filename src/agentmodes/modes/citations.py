"""The [n] citation marker, defined once for everything that writes or reads answers.

"[2]" or "[1, 3]": one to three digits each (a source number, never a year like "[2014]").
statements.py cuts answers at them, sources.py drops numbers outside the run's sources,
support.py keeps them out of the words and numbers a sentence is judged by.
"""

from __future__ import annotations

import re

CITATION = r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]"
CITATION_RE = re.compile(CITATION)
# with the spaces or tabs a writer puts before it ("geöffnet [1]"), removed with it
SPACED_CITATION_RE = re.compile(r"[ \t]*" + CITATION)


def citations(text: str) -> tuple[int, ...]:
    """The source numbers `text` cites, in the order first cited, each once."""
    return tuple(dict.fromkeys(int(n) for m in CITATION_RE.finditer(text)
                               for n in m.group(1).split(",")))
