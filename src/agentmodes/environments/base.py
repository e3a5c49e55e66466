"""What a step mode acts in: a text environment.

The knowledge base's tools answer a query; an environment such as ALFWorld is a world the
agent changes. Both meet the step loop through the same few facts about an action, which is
what the loop, the trajectory log and seed 004's rule heuristic need:

- `reset()` gives the first observation as text (for ALFWorld: the room and the task);
- an action is text: the model's ACTION is the environment's command ("go to shelf 1");
- after each action: the observation, whether the episode is done, and whether it was won;
- `effect`: did the action change anything ("Nothing happens." is ALFWorld's invalid
  action), and `location`: where the actor is afterwards (None where there are no places);
- `admissible_actions()`: the commands valid now, where the environment knows them.

`step()` keeps the gym-like tuple users of ALFWorld expect; `act()` returns the whole
Transition for the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, runtime_checkable


@dataclass(slots=True)
class Transition:
    """What one action did."""

    observation: str
    done: bool = False
    won: bool = False
    effect: bool = True                    # False: the action changed nothing (invalid)
    location: Optional[str] = None         # where the actor is after the action
    admissible: Optional[list[str]] = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"observation": self.observation, "done": self.done, "won": self.won,
                "effect": self.effect, "location": self.location}


@runtime_checkable
class Environment(Protocol):
    """A text environment a step mode can act in (ALFWorld, or any game with commands)."""

    name: str

    def reset(self) -> str:
        """Start (or restart) the episode; the first observation."""
        ...

    def act(self, action: str) -> Transition:
        """Carry out one command; never raises for a bad command (that is an observation)."""
        ...

    def step(self, action: str) -> tuple[str, bool, bool]:
        """(observation, done, won) of one command."""
        ...

    def admissible_actions(self) -> Optional[list[str]]:
        """The commands valid now, or None if the environment cannot say."""
        ...

    def close(self) -> None:
        ...
