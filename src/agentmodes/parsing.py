"""Read one agent step from what a model actually wrote.

Models do not follow formats faithfully: labels come in any case, with step numbers
(`Thought 2:`), in Markdown bold; ReflAct models write THOUGHT instead of REFLECTION (the
seed reads it as REFLECTION); actions come as `tool("arg")`, `tool(arg)`, `Search[arg]`
(ReAct paper), JSON tool calls or behind `[TOOL_CALLS]` markers; and models keep writing an
`OBSERVATION:` they invented. `parse_step` accepts all of that and returns a Step. A step it
cannot read is a value with a hint the loop can show the model, never an exception.

Two rules of the seeds' parser (parse_reflact_response_v2) hold here too: a FINAL ANSWER
wins over an ACTION in the same reply (the seed's loop checks the answer first), and an
argument is kept whole (`Search["Revenge" by XXXTentacion]` searches for all of it; quotes
are stripped only when they enclose the whole argument). Paper-style names (Search, Lookup,
Finish) map onto the knowledge base's tools only when no enabled tool has that name.

`SectionRouter` applies the same label rules incrementally to a stream, so that deltas can
be shown as reflection, action or answer while the model is still writing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Collection, Optional

# Names models use for our tools -> our tool names (ReAct paper: Search/Lookup/Finish).
FINISH = "__finish__"
ALIASES: dict[str, str] = {
    "search": "rag_search", "rag": "rag_search", "semantic_search": "rag_search",
    "ragsearch": "rag_search", "document_search": "rag_search",
    "lookup": "lexical_search", "keyword_search": "lexical_search",
    "lexicalsearch": "lexical_search", "lexical": "lexical_search",
    "websearch": "web_search", "tavily_search": "web_search",
    "finish": FINISH, "final_answer": FINISH, "answer": "respond", "reply": "respond",
}
KNOWN_TOOLS = frozenset({"rag_search", "lexical_search", "respond", "web_search"})

# Label names (lower case, spaces collapsed) -> the section they open.
_LABEL_KIND = {
    "reflection": "reflection", "reflexion": "reflection", "thought": "thought",
    "gedanke": "thought", "action": "action", "aktion": "action", "final answer": "answer",
    "finalanswer": "answer", "final_answer": "answer", "finale antwort": "answer",
    "observation": "observation", "beobachtung": "observation", "goal": "goal",
}
# Chinese labels (the zh prompts ask for the English ones, but models translate them).
_LABEL_KIND.update({"反思": "reflection", "思考": "thought", "想法": "thought", "行动": "action",
                    "动作": "action", "最终答案": "answer", "观察": "observation",
                    "目标": "goal"})
_LABEL_WORDS = (r"reflection|reflexion|thought|gedanke|action|aktion|final[ _]?answer|"
                r"finale antwort|observation|beobachtung|反思|思考|想法|行动|动作|最终答案|观察|目标")
# A label at a line start (any case, optional Markdown decoration and step number), or an
# upper-case label in the middle of a line ("... ACTION: rag_search(...)").
LABEL_RE = re.compile(
    r"(?m:^)[ \t]*(?:[-*>#]+[ \t]*)?\**[ \t]*(?P<a>(?i:" + _LABEL_WORDS + r")|GOAL)"
    r"(?:[ \t]*\d+)?[ \t]*\**[ \t]*[:：][ \t]*\**"
    r"|(?<=[ \t])(?P<b>REFLECTION|THOUGHT|ACTION|FINAL ANSWER|OBSERVATION)(?:[ \t]*\d+)?:[ \t]*")
_MARKERS_RE = re.compile(r"\[TOOL_CALLS\]|</?tool_call>|<\|python_tag\|>")
_CALL_RE = re.compile(r"^[`*\s]*([A-Za-z_][\w\-]*)\s*\((.*)\)[`*\s.]*$", re.S)
_OPEN_CALL_RE = re.compile(r"^[`*\s]*([A-Za-z_][\w\-]*)\s*\((.*)$", re.S)
_BRACKET_RE = re.compile(r"^[`*\s]*([A-Za-z_][\w\-]*)\s*\[(.*)\][`*\s.]*$", re.S)
_COLON_RE = re.compile(r"^[`*\s]*([A-Za-z_][\w\-]*)\s*:\s*(.+)$", re.S)
_BARE_RE = re.compile(r"^[`*\s]*([A-Za-z_][\w\-]*)(?:\s+(.+))?$", re.S)
_KWARG_RE = re.compile(r"^(?:query|q|answer|text|input|keyword|param|parameter|search)\s*=\s*",
                       re.I)
_LINE_CALL_RE = re.compile(r"(?m)^[ \t`*]*([A-Za-z_]\w*)\s*[\(\[]")
_QUOTES = {'"': '"', "'": "'", "“": "”", "„": "“", "‘": "’", "«": "»", "`": "`"}
_ARG_KEYS = ("query", "q", "answer", "text", "input", "keyword", "search_query", "argument")

HINT_FORMAT = ('Write one step: your reasoning, then ACTION: tool_name("argument") to use a '
               'tool, or FINAL ANSWER: followed by the answer when you have it.')
HINT_COMMAND = "Write one command for the environment after ACTION:, e.g. ACTION: go to shelf 1."
HINT_ACTION = 'Write the action as tool_name("argument"), e.g. rag_search("opening hours").'


@dataclass(slots=True)
class Action:
    name: str
    argument: str


@dataclass(slots=True)
class ParseError:
    """Why a step could not be read, and what the model should write instead."""

    message: str
    hint: str
    code: str = "no_action"


@dataclass(slots=True)
class Step:
    reasoning: str = ""
    reasoning_label: Optional[str] = None     # "REFLECTION", "THOUGHT" or None
    action: Optional[Action] = None
    final_answer: Optional[str] = None
    goal: Optional[str] = None
    error: Optional[ParseError] = None
    text: str = ""                            # what counts: markers removed, invented
                                              # observations cut off

    @property
    def ok(self) -> bool:
        return self.error is None


_KIND_CACHE: dict[str, str] = {}


def label_kind(match: re.Match) -> str:
    raw = match.group("a") or match.group("b")
    kind = _KIND_CACHE.get(raw)
    if kind is None:                                    # first time this spelling is seen
        word = raw.lower()
        kind = _LABEL_KIND.get(word) or _LABEL_KIND.get(
            " ".join(word.replace("_", " ").split()), "answer")
        if len(_KIND_CACHE) < 512:
            _KIND_CACHE[raw] = kind
    return kind


def parse_step(text: str, *, reflact: bool = False,
               tools: Optional[Collection[str]] = None, command: Optional[str] = None) -> Step:
    """Parse one model reply. With reflact=True, THOUGHT is read as REFLECTION (seed 000).

    `tools` are the names of the enabled tools: a name the model writes resolves to one of
    them first (any case), and only otherwise through the paper-style ALIASES.
    `command` is set when the episode acts in an environment whose actions are free text
    (ALFWorld: "go to shelf 1"): the ACTION is then that environment's command, read as
    Action(command, <the ACTION's first line>), not as a tool call."""
    text = text or ""
    if "[TOOL_CALLS]" in text or "tool_call>" in text or "<|python_tag|>" in text:
        text = _MARKERS_RE.sub("", text)
    sections: list[tuple[str, int, int]] = []          # (kind, text start, label start)
    for m in LABEL_RE.finditer(text):
        kind = label_kind(m)
        if kind == "observation":                       # invented by the model: cut
            text = text[:m.start()]
            break
        sections.append((kind, m.end(), m.start()))
    text = text.rstrip()
    step = Step(text=text)
    if not text.strip():
        step.error = ParseError("the reply was empty", HINT_FORMAT, "empty")
        return step

    lead = text[:sections[0][2]] if sections else text
    action_body: Optional[str] = None
    answer: Optional[str] = None
    for i, (kind, start, _) in enumerate(sections):
        end = sections[i + 1][2] if i + 1 < len(sections) else len(text)
        body = text[start:end].strip()
        if kind in ("reflection", "thought"):
            if not step.reasoning_label:
                step.reasoning = body
                step.reasoning_label = "REFLECTION" if reflact or kind == "reflection" \
                    else "THOUGHT"
        elif kind == "goal":
            step.goal = step.goal or body
        elif kind == "action":
            if action_body is None:                     # later ones: an invented continuation
                action_body = body
        elif kind == "answer":
            answer = clean_answer(body)
            if answer:
                break                                   # the answer wins (seed's parser)
    if not step.reasoning_label and lead.strip() and sections:
        step.reasoning = lead.strip()
    if answer:
        step.final_answer = answer
    elif action_body is not None:
        if command is not None:
            _read_command(step, action_body, command)
        else:
            _read_action(step, action_body, tools)
    elif answer is not None:
        step.final_answer = answer
        step.error = ParseError("FINAL ANSWER was empty",
                                "Write the answer after FINAL ANSWER:.", "empty_answer")
    elif command is not None and not sections and len(text.strip().splitlines()) == 1:
        _read_command(step, text, command)              # a bare command line, paper style
    else:
        _read_unlabelled(step, lead if sections else text, tools)
    return step


def _read_command(step: Step, body: str, name: str) -> None:
    """An environment command: the first non-empty line of the ACTION, without the ReAct
    paper's `> ` prompt marker or code quotes."""
    line = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    line = line.lstrip(">").strip().strip("`").strip()
    if not line:
        step.error = ParseError("the ACTION was empty", HINT_COMMAND, "empty_argument")
        return
    step.action = Action(name, line)


def resolve_tool(name: str, tools: Optional[Collection[str]] = None) -> str:
    """The tool a written name means: an enabled tool of that name (any case) first, then
    the paper-style alias (Search -> rag_search, Finish -> the answer), else the name."""
    names = KNOWN_TOOLS if tools is None else tools
    if name in names:
        return name
    low = name.lower()
    for candidate in names:
        if candidate.lower() == low:
            return candidate
    return ALIASES.get(low, name)


def _known_name(name: str, tools: Optional[Collection[str]]) -> bool:
    low = name.lower()
    return low in ALIASES or low in KNOWN_TOOLS or (
        tools is not None and any(t.lower() == low for t in tools))


def _read_unlabelled(step: Step, text: str, tools: Optional[Collection[str]]) -> None:
    """No ACTION/FINAL ANSWER label: accept a JSON tool call or a known tool call line."""
    call = _json_call(text)
    if call is None:
        for m in _LINE_CALL_RE.finditer(text):
            if _known_name(m.group(1), tools):
                line_end = text.find("\n\n", m.start())
                call = _plain_call(text[m.start():] if line_end < 0 else text[m.start():line_end],
                                   tools)
                if call:
                    break
    if call is None:
        step.error = ParseError("no ACTION or FINAL ANSWER found", HINT_FORMAT, "no_action")
        return
    _apply_call(step, call, tools)


def _read_action(step: Step, body: str, tools: Optional[Collection[str]]) -> None:
    call = _json_call(body) if body[:1] in "{[" else None
    call = call or _plain_call(body, tools)
    if call is None:
        step.error = ParseError(f"could not read the action {body[:80]!r}", HINT_ACTION,
                                "bad_action")
        return
    _apply_call(step, call, tools)


def _apply_call(step: Step, call: tuple[str, str], tools: Optional[Collection[str]]) -> None:
    name, argument = call
    name = resolve_tool(name, tools)
    if name == FINISH:
        step.final_answer = clean_answer(argument)
        if not step.final_answer:
            step.error = ParseError("Finish[] was empty", "Write the answer inside Finish[...].",
                                    "empty_answer")
        return
    if not argument:
        step.error = ParseError(f"the action {name} has no argument", HINT_ACTION,
                                "empty_argument")
    step.action = Action(name, argument)


def _plain_call(body: str, tools: Optional[Collection[str]] = None
                ) -> Optional[tuple[str, str]]:
    body = body.strip()
    for regex in (_CALL_RE, _BRACKET_RE, _OPEN_CALL_RE):
        m = regex.match(body)
        if m:
            return m.group(1), _clean_argument(m.group(2))
    m = _COLON_RE.match(body)
    if m:
        return m.group(1), _clean_argument(m.group(2))
    m = _BARE_RE.match(body)
    if m and _known_name(m.group(1), tools):
        return m.group(1), _clean_argument(m.group(2) or "")
    return None


def _clean_argument(arg: str) -> str:
    """The argument as the model meant it. Enclosing quotes go; quotes that are part of the
    text stay: `"Revenge" by XXXTentacion` is one query, not `Revenge` (the old rule cut 10
    of 2,265 real GPT ReAct steps). `"q", k=5` is several arguments: the first is the query."""
    arg = _KWARG_RE.sub("", arg.strip(), count=1).strip()
    if len(arg) < 2 or arg[0] not in _QUOTES:
        return arg
    close = _QUOTES[arg[0]]
    end = _closing_quote(arg, close)
    if end < 0:
        return arg[1:].replace('\\"', '"').strip()    # cut off mid-string
    rest = arg[end + 1:].lstrip()
    if not rest or rest[0] == ",":
        return arg[1:end].replace('\\"', '"').strip()
    return arg


def _closing_quote(arg: str, close: str) -> int:
    """Index of the quote that closes arg[0]'s: unescaped, and followed by the end, a space
    or a comma (so the apostrophe in 'Don't stop' is not one); -1 if there is none."""
    i = 0
    while True:
        i = arg.find(close, i + 1)
        if i < 0:
            return -1
        if arg[i - 1] == "\\":
            continue
        after = arg[i + 1:i + 2]
        if not after or after in " \t\n,)]":
            return i


def _json_call(text: str) -> Optional[tuple[str, str]]:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0 or '"' not in text:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    if isinstance(obj, list):
        obj = obj[0] if obj and isinstance(obj[0], dict) else None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name") or obj.get("tool") or obj.get("action")
    if not isinstance(name, str):
        return None
    args = next((obj[k] for k in ("arguments", "parameters", "args", "action_input", "input")
                 if k in obj), "")
    return name, argument_from_json(args)


def argument_from_json(args: object) -> str:
    """The one string argument of a JSON tool call (arguments may be a dict or a JSON string)."""
    if isinstance(args, str):
        try:
            decoded = json.loads(args)
        except ValueError:
            return args.strip()
        if not isinstance(decoded, (dict, list)):
            return str(decoded).strip()
        args = decoded
    if isinstance(args, dict):
        for key in _ARG_KEYS:
            if isinstance(args.get(key), str):
                return args[key].strip()
        strings = [v for v in args.values() if isinstance(v, str)]
        return strings[0].strip() if strings else json.dumps(args, ensure_ascii=False)
    if isinstance(args, list) and args:
        return str(args[0]).strip()
    return ""


def clean_answer(body: str) -> str:
    """Strip the answer; remove the hanging indent of continuation lines (seed 000 trace)."""
    lines = body.strip().splitlines()
    if len(lines) > 1:
        rest = [ln for ln in lines[1:] if ln.strip()]
        indent = min((len(ln) - len(ln.lstrip(" ")) for ln in rest), default=0)
        if indent:
            lines = [lines[0]] + [ln[indent:] if ln.strip() else "" for ln in lines[1:]]
    return "\n".join(lines).strip()


class SectionRouter:
    """Split a streamed reply into (section, text) pieces by the same labels as parse_step.

    Sections: "reasoning", "action", "answer"; an invented observation and anything after
    the first action or answer are dropped, as parse_step drops them. The last HOLD
    characters are held back until the next chunk, so that a label split across chunks is
    never shown as text.

    Where a label opens, a ("label", kind) marker comes in order with the pieces, and the
    label's offset in `buf` is appended to `label_starts`: the loop emits the finished
    reasoning the moment the ACTION label begins (seed 000 lists `reflection` before the
    `action_delta` events), parsing `buf` up to that offset.
    """

    HOLD = 24
    __slots__ = ("buf", "pos", "section", "closed", "emitted", "label_starts")

    def __init__(self, initial: str = "reasoning"):
        self.buf = ""
        self.pos = 0               # buf[:pos] has been routed
        self.section = initial
        self.closed = False        # after an action/answer section ended: drop the rest
        self.emitted = False       # any text routed to the current answer section
        self.label_starts: list[int] = []

    def feed(self, chunk: str, final: bool = False) -> list[tuple[str, str]]:
        buf = self.buf = self.buf + chunk
        limit = len(buf) if final else len(buf) - self.HOLD
        out: list[tuple[str, str]] = []
        if limit <= self.pos or self.closed:
            return out
        pos = self.pos
        for m in LABEL_RE.finditer(buf, pos):
            if m.start() >= limit:
                break
            self._emit(out, buf[pos:m.start()])
            pos = m.end()
            kind = label_kind(m)
            if kind == "observation" or (self.section in ("action", "answer") and self.emitted):
                self.closed = True
                self.pos = len(buf)
                return out
            self.section = {"reflection": "reasoning", "thought": "reasoning",
                            "goal": "reasoning"}.get(kind, kind)
            self.emitted = False
            self.label_starts.append(m.start())
            out.append(("label", kind))
        if limit > pos:
            self._emit(out, buf[pos:limit])
            pos = limit
        self.pos = pos
        return out

    def _emit(self, out: list, piece: str) -> None:
        if not piece or self.closed:
            return
        if not self.emitted:
            piece = piece.lstrip()
            if not piece:
                return
        self.emitted = True
        out.append((self.section, piece))
