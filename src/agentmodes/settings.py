"""Chatbot settings, with the seeds' names (ChatbotPromptSettings in the LLARS seeds)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field, field_validator, model_validator

AgentMode = Literal["act", "react", "reflact", "plan-and-solve"]
TaskType = Literal["lookup", "multihop"]
DEFAULT_TOOLS = ["rag_search", "lexical_search", "respond"]


class McpServerSettings(BaseModel):
    """An MCP server whose tools the agent may call (tools/mcp_tools.py): started as a
    command (stdio) or reached at a URL (streamable HTTP). Its tools appear as
    `<name>_<tool>` in the tool list and the trace, like the built-in ones."""

    name: str = Field(..., pattern=r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
    command: Optional[str] = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    url: Optional[str] = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    tools: Optional[list[str]] = None          # only these of the server's tools (None: all)
    timeout_s: float = Field(60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServerSettings":
        if (self.url is None) == (self.command is None):
            raise ValueError("an MCP server needs either command (stdio) or url (HTTP)")
        return self


class ChatbotSettings(BaseModel):
    """What a chatbot is allowed to do and how it reasons.

    Field names follow the seeds so that settings exported from LLARS load unchanged.
    """

    agent_mode: AgentMode = "reflact"
    task_type: TaskType = "lookup"
    agent_max_iterations: int = Field(5, ge=1, le=50)
    tools_enabled: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    web_search_enabled: bool = False
    web_search_max_results: int = Field(5, ge=1, le=20)
    tavily_api_key: Optional[str] = Field(default=None, repr=False)
    system_prompt: str = ""
    act_system_prompt: Optional[str] = None
    react_system_prompt: Optional[str] = None
    reflact_system_prompt: Optional[str] = None
    plan_and_solve_system_prompt: Optional[str] = None
    # "auto" picks German, English or Chinese prompts from the query's language.
    language: Literal["auto", "de", "en", "zh"] = "auto"
    project_url: str = ""
    search_k: int = Field(5, ge=1, le=50)
    # Hits at or above this KB confidence let a mode answer without searching further
    # ("Adaptive Iteration (High Confidence)"); see knowledge/confidence.py for calibration.
    high_confidence_threshold: Optional[float] = Field(default=None, ge=0.0, le=1.0)
    adaptive_iteration: bool = True
    # MCP servers whose tools the agent may call (always enabled when listed).
    mcp_servers: list[McpServerSettings] = Field(default_factory=list)
    # An answer given before any search of the documents is replaced by a search of the
    # question (the event says so: forced "answer_without_sources"). Small models otherwise
    # "answer" a document question from nothing. False restores the seeds' rule exactly:
    # the first parsed answer ends the run.
    require_search: bool = True

    @field_validator("agent_mode", "task_type", mode="before")
    @classmethod
    def _lower(cls, v):
        if not isinstance(v, str):
            return v
        v = v.strip().lower()
        # plan_and_solve, plan and solve, planandsolve, ps: the one name plan-and-solve
        return "plan-and-solve" if v.replace("_", "").replace("-", "").replace(" ", "") in (
            "planandsolve", "ps") else v

    @property
    def max_iterations(self) -> int:
        """Iteration budget: multihop allows min(agent_max_iterations + 2, 10) (seed 000)."""
        if self.task_type == "multihop":
            return min(self.agent_max_iterations + 2, 10)
        return self.agent_max_iterations
