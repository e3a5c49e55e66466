"""ReflAct (seed 000; Kim et al. 2025): REFLECTION on the state relative to the goal, ACTION.

Each REFLECTION has three parts: current state, last discovery, relation to the goal. The
goal travels in every iteration event so a viewer sees what each reflection measures
against; a THOUGHT label is read as REFLECTION (seed: backward compatible). Stop rule:
FINAL ANSWER once the reflection finds the goal reached. Prompt: prompts/<lang>/reflact.md.
"""

from .loop import ModeSpec

REFLACT = ModeSpec(
    name="reflact",
    reasoning="reflection",
    start_status="reflecting",
    reflact_labels=True,
    goal_in_events=True,
    search_first=True,              # no answer before the documents were searched
)
