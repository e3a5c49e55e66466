"""The step loop in a text environment (modes/environment.py): the ACTION is the
environment's command, the game ends the episode, the trajectory carries effect and
location. A small deterministic game stands in for ALFWorld here (test_env_alfworld.py runs
the real engine); the knowledge-base loop is untouched (test_loop*.py)."""

from __future__ import annotations

from typing import Optional

import pytest

from agentmodes.environments.base import Environment, Transition
from agentmodes.errors import LLMError
from agentmodes.evaluators.heuristics import RuleHeuristic
from agentmodes.llm.grammars import command_grammar
from agentmodes.llm.scripted import ScriptedModel
from agentmodes.modes.act import ACT
from agentmodes.modes.environment import EnvironmentEpisode, play
from agentmodes.modes.reflact import REFLACT
from agentmodes.parsing import parse_step


class Corridor:
    """Two rooms; the key is in room 2; `open door` with the key wins."""

    name = "corridor"

    def __init__(self):
        self.resets = 0

    def reset(self) -> str:
        self.resets += 1
        self.place, self.key, self.over = "room 1", False, False
        return "You are in room 1. There is a door.\nYour task is to: open the door."

    def act(self, action: str) -> Transition:
        command = action.strip()
        if command == "go to room 2":
            self.place = "room 2"
            return Transition("You are in room 2. You see a key 1.", location=self.place)
        if command == "go to room 1":
            self.place = "room 1"
            return Transition("You are in room 1.", location=self.place)
        if command == "take key 1" and self.place == "room 2":
            self.key = True
            return Transition("You pick up the key 1.", location=self.place)
        if command == "open door" and self.key and self.place == "room 1":
            self.over = True
            return Transition("The door opens.", done=True, won=True, location=self.place)
        return Transition("Nothing happens.", effect=False, location=self.place)

    def step(self, action: str):
        t = self.act(action)
        return t.observation, t.done, t.won

    def admissible_actions(self) -> Optional[list[str]]:
        return ["go to room 1", "go to room 2"]

    def close(self) -> None:
        pass


WIN = ["REFLECTION: I am in room 1 without the key the door needs.\nACTION: go to room 2",
       "REFLECTION: I am in room 2 and see the key 1.\nACTION: take key 1",
       "REFLECTION: I hold the key; the door is in room 1.\nACTION: go to room 1",
       "REFLECTION: I am at the door with the key.\nACTION: open door"]


def test_the_corridor_is_an_environment():
    assert isinstance(Corridor(), Environment)


def test_commands_are_read_whole_in_an_environment():
    step = parse_step("THOUGHT: the mug is on the desk\nACTION: put mug 1 in/on desk 2",
                      command="alfworld")
    assert (step.action.name, step.action.argument) == ("alfworld", "put mug 1 in/on desk 2")
    assert step.reasoning == "the mug is on the desk"
    # The ReAct paper's bare `> command` line, and an invented observation cut off.
    assert parse_step("> go to shelf 1", command="alfworld").action.argument == "go to shelf 1"
    step = parse_step("ACTION: open drawer 1\nOBSERVATION: It opens.", command="alfworld")
    assert step.action.argument == "open drawer 1"
    assert parse_step("ACTION:", command="alfworld").error.code == "empty_argument"
    assert parse_step("THOUGHT: only thinking", command="alfworld").error.code == "no_action"
    # Without command= the same text is a (bad) tool call, as before.
    assert parse_step("ACTION: go to shelf 1").error is not None


def test_a_won_episode_streams_the_loops_events():
    llm = ScriptedModel(WIN)
    env = Corridor()
    episode = EnvironmentEpisode(REFLACT, llm, env, system="Play.", task=env.reset(),
                                 max_steps=10)
    events = list(episode.run())
    statuses = [e.get("status") for e in events if "status" in e]
    assert statuses.count("reflection") == 4 and statuses.count("observation") == 4
    actions = [e for e in events if e.get("status") == "action"]
    assert [a["param"] for a in actions] == ["go to room 2", "take key 1", "go to room 1",
                                             "open door"]
    assert {a["action"] for a in actions} == {"corridor"}
    observations = [e for e in events if e.get("status") == "observation"]
    assert [o["location"] for o in observations] == ["room 2", "room 2", "room 1", "room 1"]
    done = events[-1]
    assert done["done"] and done["won"] and done["outcome"] == "won"
    assert done["full_response"] == "The door opens." and done["env_steps"] == 4
    assert len(llm.calls) == 4 and done["usage"]["calls"] == 4      # no answer call after
    # The model saw each observation as the next user message.
    assert llm.prompts[1][-1] == {"role": "user",
                                  "content": "OBSERVATION: You are in room 2. You see a key 1."}


def test_the_step_limit_ends_without_an_extra_call_and_keeps_the_trajectory():
    llm = ScriptedModel(["ACTION: dance"], cycle=True)
    run = play(ACT, llm, Corridor(), system="Play.", max_steps=5)
    assert run.outcome == "max_iterations" and not run.won and len(llm.calls) == 5
    assert run.trajectory == [("dance", "room 1", False)] * 5
    assert [s["observation"] for s in run.steps] == ["Nothing happens."] * 5


def test_a_stop_rule_ends_a_stuck_episode_early():
    llm = ScriptedModel(["ACTION: dance"], cycle=True)
    run = play(ACT, llm, Corridor(), system="Play.", max_steps=50,
               stop_rule=RuleHeuristic().stuck)
    assert run.outcome == "stuck" and len(llm.calls) == 4 and "4 times in a row" in run.feedback


def test_repeats_are_not_cut_off_by_the_loop():
    """The KB loop stops the third identical call; in an environment repeating a command
    can be right (walking back and forth), so only the heuristic judges repeats."""
    llm = ScriptedModel(["ACTION: go to room 2", "ACTION: go to room 2", "ACTION: go to room 2",
                         "ACTION: take key 1", "ACTION: go to room 1", "ACTION: open door"])
    assert play(ACT, llm, Corridor(), system="Play.").won


def test_an_unreadable_step_gets_the_command_hint_and_a_final_answer_ends():
    llm = ScriptedModel(["THOUGHT: hmm", "FINAL ANSWER: done"])
    run = play(REFLACT, llm, Corridor(), system="Play.")
    assert run.outcome == "final_answer" and not run.won
    assert "ACTION: go to shelf 1" in llm.prompts[1][-1]["content"]     # the env's hint


def test_an_llm_failure_after_some_steps_ends_the_episode_with_what_it_has():
    class Failing(ScriptedModel):
        def stream(self, messages, options=None):
            if len(self.calls) >= 2:
                raise LLMError("server went away")
            return super().stream(messages, options)

    run = play(ACT, Failing(["ACTION: go to room 2"] * 3), Corridor(), system="Play.")
    assert run.outcome == "llm_error" and run.env_steps == 2
    with pytest.raises(LLMError):        # nothing done yet: the error is the caller's to see
        play(ACT, Failing([]), Corridor(), system="Play.")


@pytest.mark.parametrize("mode, starts", [("act", 'root ::= "ACTION: " command'),
                                          ("react", 'root ::= ("THOUGHT: " reasoning'),
                                          ("reflact", 'root ::= "REFLECTION: " reasoning')])
def test_command_grammars(mode, starts):
    grammar = command_grammar(mode)
    assert grammar.startswith(starts) and "command ::= [a-z]" in grammar
    assert "FINAL ANSWER" not in grammar           # the game ends an episode, not the model
    llama = pytest.importorskip("llama_cpp")
    llama.LlamaGrammar.from_string(grammar, verbose=False)


def test_alfworld_errors_are_one_line_without_the_engine(tmp_path, monkeypatch):
    import sys

    from agentmodes.environments.alfworld import ALFWorldEnv, ALFWorldUnavailable
    from agentmodes.errors import AgentModesError

    with pytest.raises(AgentModesError, match="game file not found"):
        ALFWorldEnv(tmp_path / "missing" / "game.tw-pddl")
    game = tmp_path / "game.tw-pddl"
    game.write_text('{"grammar": "\\"rhs\\": \\"Your task is to: put a mug in desk.\\""}')
    env = ALFWorldEnv(game)
    assert env.task == "put a mug in desk."            # read from the file, before any reset
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    monkeypatch.setitem(sys.modules, "textworld", None)   # as if the extra were not installed
    with pytest.raises(ALFWorldUnavailable, match=r"pip install 'agentmodes\[alfworld\]'"):
        env.reset()
    with pytest.raises(AgentModesError, match="before reset"):
        env.act("look")
