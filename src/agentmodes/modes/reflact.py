"""ReflAct (seed 000; Kim et al. 2025): REFLECTION on the state relative to the goal, ACTION.

Each REFLECTION has three parts: current state, last discovery, relation to the goal; when
the model labels them (as in the seed's trace) the reflection event carries them separately.
The goal travels in every iteration event so a viewer sees what each reflection measures
against; a THOUGHT label is read as REFLECTION (seed: backward compatible). Stop rule:
FINAL ANSWER once the reflection finds the goal reached. Prompt: prompts/<lang>/reflact.md.
"""

from __future__ import annotations

import re

from .spec import ModeSpec

_PART_RE = re.compile(
    r"(?im)^[ \t]*(?:\d\.[ \t]*)?(?:[-*][ \t]*)?\**(?P<label>aktueller zustand|current state|"
    r"letzte entdeckung|last discovery|ziel-relation|zielrelation|relation to (?:the )?goal|"
    r"goal relation|当前状态|最新发现|目标关系)\**[ \t]*[:：]")
_PART_NAMES = {"aktueller zustand": "state", "current state": "state", "当前状态": "state",
               "letzte entdeckung": "discovery", "last discovery": "discovery",
               "最新发现": "discovery"}


def reflection_parts(text: str) -> dict[str, str]:
    """{"state", "discovery", "goal_relation"} from a labelled reflection ({} if unlabelled)."""
    matches = list(_PART_RE.finditer(text))
    parts: dict[str, str] = {}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        name = _PART_NAMES.get(m.group("label").lower(), "goal_relation")
        body = " ".join(text[m.end():end].split())
        parts.setdefault(name, body)
    return parts


REFLACT = ModeSpec(
    name="reflact",
    reasoning="reflection",
    start_status="reflecting",
    reflact_labels=True,
    goal_in_events=True,
    search_first=True,              # no answer before the documents were searched
    reasoning_parts=reflection_parts,
)
