"""An Environment as the step loop's Toolbox (modes/acting.py).

The loop acts on a Toolbox: the knowledge base's tools (tools/registry.ToolSet) for the chat
modes, or this adapter for an environment. It offers one tool, named after the environment,
whose argument is the command; the loop's parser reads the model's ACTION line as that
command (parse_step(command=...)). Each command's Transition becomes the ToolResult the loop
already understands: the observation text, `effect` and `location` (for seed 004's rule
heuristic), and `ends_episode` when the game is over.

The adapter also keeps the trajectory as (command, location, had_effect) steps, the form
evaluators.heuristics.RuleHeuristic reads, and can end a hopeless episode early: with a
`stop_rule` (RuleHeuristic().stuck) an episode stops as soon as the rule fires, as the
Reflexion code stops a trial that is stuck instead of running it to the step limit.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..tools.base import ToolResult
from .base import Environment, Transition

StopRule = Callable[[list[tuple[str, Optional[str], bool]]], Any]


class CommandTool:
    """The environment's one tool: the argument is the command."""

    parameter = "command"

    def __init__(self, box: "EnvironmentToolbox"):
        self.box = box
        self.name = box.env.name
        self.description = f"A command for the {self.name} environment"
        self.description_de = f"Ein Befehl für die Umgebung {self.name}"

    def __call__(self, argument: str) -> ToolResult:
        return self.box.execute(argument)


class EnvironmentToolbox:
    """One environment behind the four Toolbox methods, plus its trajectory and outcome."""

    def __init__(self, env: Environment, *, stop_rule: Optional[StopRule] = None,
                 show_admissible: bool = False):
        self.env = env
        self.stop_rule = stop_rule
        self.show_admissible = show_admissible
        self.tool = CommandTool(self)
        self.trajectory: list[tuple[str, Optional[str], bool]] = []
        self.transitions: list[Transition] = []
        self.outcome: Optional[str] = None         # won | lost | stuck (None: still going)
        self.feedback = ""                         # why a stop rule ended the episode

    # -- Toolbox ------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [self.env.name]

    def get(self, name: str) -> Optional[CommandTool]:
        return self.tool if name == self.env.name else None

    def search_tool(self) -> None:
        return None                                # nothing to search: the loop never forces one

    def specs(self) -> list:
        return []                                  # commands are text steps, not native calls

    # -- one command ------------------------------------------------------------------------
    def execute(self, command: str) -> ToolResult:
        t = self.env.act(command)
        self.transitions.append(t)
        self.trajectory.append((command.strip(), t.location, t.effect))
        text = t.observation
        if self.show_admissible and t.admissible and not t.done:
            text += "\nAdmissible commands: " + ", ".join(t.admissible)
        ends = t.done
        if t.done:
            self.outcome = "won" if t.won else "lost"
        elif self.stop_rule is not None:
            verdict = self.stop_rule(self.trajectory)
            if verdict is not None:
                self.outcome, ends = "stuck", True
                self.feedback = getattr(verdict, "feedback", str(verdict))
        return ToolResult(text, effect=t.effect, location=t.location, ends_episode=ends)

    @property
    def won(self) -> bool:
        return self.outcome == "won"
