"""What a step mode acts in besides the knowledge base's tools.

- base.py: the Environment protocol (reset, act/step, admissible actions) and Transition
  (observation, done, won, effect, location);
- toolbox.py: an Environment as the loop's Toolbox, so ACT, ReAct and ReflAct run in it
  through the same loop as over documents (modes/environment.py);
- alfworld.py: ALFWorld's text games (ALFWorldEnv); alfworld_data.py finds the 134 standard
  games; fewshot.py, reflact_fewshot.py and alfworld_prompts.py hold the papers' prompts.
"""

from .base import Environment, Transition

__all__ = ["Environment", "Transition"]
