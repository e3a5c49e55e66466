"""ACT (seed 002): act without an explicit reasoning trace.

The model picks a tool straight away, with native tool calls where the backend supports them
and otherwise as `ACTION: tool(param)`. `respond(answer)` ends the episode; an unclear
question gets a clarifying question through respond (allowed before any search, unlike an
answer). Prompt: prompts/<lang>/act.md.
"""

from .spec import ModeSpec

ACT = ModeSpec(
    name="act",
    reasoning=None,                 # no THOUGHT step: reasoning stays in the model weights
    start_status="getting_action",
    lists_respond=True,             # stop rule: respond(answer)
    native_tools=True,
    search_first=True,              # respond(answer) before any search: search first
    preview_chars=200,              # seed 002: result[:200]
)
