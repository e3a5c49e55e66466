"""respond(answer): the ACT mode's way to end an episode with its answer (seed 002)."""

from __future__ import annotations

from .base import ToolResult


class RespondTool:
    name = "respond"
    parameter = "answer"
    description = "Give the final answer (or ask a clarifying question)"
    description_de = "Finale Antwort geben (oder eine Rückfrage stellen)"
    description_zh = "给出最终回答（或提出澄清问题）"

    def __call__(self, argument: str) -> ToolResult:
        return ToolResult(argument.strip(), ends_episode=True)
