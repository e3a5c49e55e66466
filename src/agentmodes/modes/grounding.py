"""Stop a final answer that loops: a small model repeats one line until max_tokens.

RepetitionGuard watches the text as it streams and says when it starts repeating itself,
so the loop stops generating (and saves the tokens). What is left of the loop is removed by
the answer composer (modes/compose.py), which also replaced the old "findings appended
below an ungrounded answer" guard: every sentence is now checked against the sources.
"""

from __future__ import annotations

from collections import Counter

REPEATS = 3            # the same line (or tail) three times: the model is looping


class RepetitionGuard:
    """Fed the growing text; `looping` turns true when it starts repeating itself."""

    __slots__ = ("lines", "looping", "_done")

    def __init__(self) -> None:
        self.lines: Counter = Counter()
        self.looping = False
        self._done = 0                      # characters already split into complete lines

    def feed(self, text: str) -> bool:
        end = text.rfind("\n")
        if end > self._done:
            for line in text[self._done:end].split("\n"):
                key = " ".join(line.split())
                if len(key) >= 8:
                    self.lines[key] += 1
                    if self.lines[key] >= REPEATS:
                        self.looping = True
            self._done = end + 1
        tail = text[-40:]
        if not self.looping and len(text) >= 200 and len(tail) == 40 \
                and text.count(tail) >= REPEATS:
            self.looping = True
        return self.looping
