"""The composed answer's text: extracted statements with their [n], then the model's kept
statements with the separators the model used (paragraphs, list lines), within a budget."""

from __future__ import annotations


def render_model(kept: list, cap: int) -> str:
    """The kept statements of the model's answer, in its own layout, up to `cap` chars."""
    if cap < 40:                       # no room left after the lead
        return ""
    parts: list[str] = []
    length, last_block = 0, None
    for k in kept:
        sep = "" if not parts else "\n\n" if k.statement.block != last_block else \
            "\n" if k.statement.kind in ("item", "heading") else " "
        if parts and length + len(sep) + len(k.text) > cap:
            break
        parts.append(sep + (k.text if len(k.text) <= cap else _cut(k.text, cap)))
        length += len(parts[-1])
        last_block = k.statement.block
    return "".join(parts).strip()


def render_extracts(extracts: list, cap: int) -> str:
    """One line per extracted statement with its [n], up to `cap` chars."""
    lines: list[str] = []
    length = 0
    for e in extracts:
        line = f"{e.text} [{e.source}]"
        if lines and length + len(line) + 1 > cap:
            break
        if len(line) > cap:
            line = _cut(e.text, max(40, cap - 6)) + f" [{e.source}]"
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)
    return text[:cut if cut > limit // 2 else limit - 2].rstrip(",;: ") + " …"

