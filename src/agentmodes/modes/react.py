"""ReAct (Yao et al. 2023): THOUGHT, ACTION, OBSERVATION until FINAL ANSWER.

The THOUGHT looks forward ("what should I do next?"). Paper-style steps (`Thought 2:`,
`Search[...]`, `Finish[...]`) parse too. Stop rule: FINAL ANSWER (or Finish[...]).
Prompt: prompts/<lang>/react.md.
"""

from .spec import ModeSpec

REACT = ModeSpec(
    name="react",
    reasoning="thought",
    start_status="getting_action",
    search_first=True,              # no answer before the documents were searched
)
