"""`workload.tools`: requests that offer the model tools, as agents do.

```yaml
workload:
  api: chat
  tools:
    count: 8             # generated tools (or file: tools.json, a JSON list of OpenAI tool schemas)
    description_tokens: 64   # words in each generated tool's description (the prompt grows by them)
    choice: auto         # tool_choice: auto | required | none | the name of one tool
    call_rate: 30%       # the built-in servers answer this share with a tool call
```

Every request of the class carries the `tools` list and `tool_choice`. The stream parser counts a
streamed tool call's argument chunks as output tokens (TTFT is the first token of any kind) and
records the calls made and how many of them have arguments that parse as a JSON object
(`metrics.tools.tool_call_valid`).

`call_rate` is drawn per request (seeded by its id and class) and sent to the built-in servers as
`simulate_tool_call`: they then answer with a call of the offered tool (the one `choice` names,
else the first), its `max_tokens` argument tokens forming one JSON object. A real server decides
for itself and ignores the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kernel.units import Fraction
from loadgen.inputs.files import field_error, resolve
from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.slice_model import SliceSpec
from loadgen.wire.apis import apis_carrying, carries
from loadgen.wire.call import NamedToolChoice

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

MAX_TOOLS = 128  # OpenAI's own limit on `tools`
MAX_TOOL_FILE_BYTES = 16 * 1024 * 1024
# Common words: a generated description of n words is about n tokens (as synthetic prompts).
_WORDS = "find the current value of a record by its name and return it with its units and date".split()


def generated_tools(count: int, description_tokens: int) -> list[dict[str, Any]]:
    """`count` OpenAI function tools `tool_0`…, each described in `description_tokens` words,
    taking one string argument `query`."""
    tools = []
    for index in range(count):
        words = [_WORDS[(index + k) % len(_WORDS)] for k in range(description_tokens)]
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": f"tool_{index}",
                    "description": " ".join(words),
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string", "description": "what to look up"}},
                        "required": ["query"],
                    },
                },
            }
        )
    return tools


def read_tools(path: Path) -> list[dict[str, Any]]:
    """A JSON list of OpenAI tool schemas (each `{"type": "function", "function": {"name": ...}}`);
    ValueError saying what is wrong."""
    try:
        if path.stat().st_size > MAX_TOOL_FILE_BYTES:
            raise ValueError(f"{path.name} is over {MAX_TOOL_FILE_BYTES // 1024**2} MB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path.name} must hold a non-empty JSON list of tools")
    if len(data) > MAX_TOOLS:
        raise ValueError(f"{path.name} holds {len(data)} tools; at most {MAX_TOOLS}")
    for index, tool in enumerate(data):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            raise ValueError(
                f'{path.name}: tool {index} needs {{"type": "function", "function": {{"name": ...}}}}'
            )
    return data


class ToolsSpec(SliceSpec):
    file: str | None = None  # a JSON list of OpenAI tool schemas (relative: from the scenario)
    count: int = Field(default=4, ge=1, le=MAX_TOOLS)  # generated tools, without `file`
    description_tokens: int = Field(default=32, ge=1, le=100_000)
    choice: str = "auto"  # auto | required | none | a tool's name
    call_rate: Fraction = 0.5
    _tools: tuple[dict[str, Any], ...] = PrivateAttr(default=())

    @field_validator("choice")
    @classmethod
    def _named(cls, choice: str) -> str:
        if not choice.strip():
            raise ValueError("give auto, required, none or a tool's name")
        return choice

    @model_validator(mode="wrap")
    @classmethod
    def _read(
        cls, data: Any, handler: ModelWrapValidatorHandler[ToolsSpec], info: ValidationInfo
    ) -> ToolsSpec:
        if isinstance(data, ToolsSpec):
            return handler(data)  # already validated (its tools read)
        spec = handler(data)
        if spec.file is None:
            tools = generated_tools(spec.count, spec.description_tokens)
        else:
            path = resolve(spec.file, info, "file")
            try:
                tools = read_tools(path)
            except ValueError as exc:
                raise field_error("file", str(exc), spec.file) from None
            spec = spec.model_copy(update={"file": str(path)})
        names = {tool["function"]["name"] for tool in tools}
        if spec.choice not in ("auto", "required", "none") and spec.choice not in names:
            message = f"choice {spec.choice!r} names no tool; the tools are {', '.join(sorted(names))}"
            raise field_error("choice", message, spec.choice)
        spec._tools = tuple(tools)
        return spec

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """Tools need an API that carries them, and an agent loop (sessions.agent) needs tools."""
        if spec is not None and not carries(workload.api, "tools"):
            message = f"tools need api: {apis_carrying('tools')} (api: {workload.api} cannot call one)"
            raise field_error("tools", message, None)
        if spec is None and (sessions := follow_ups(workload)) is not None and sessions.agent is not None:
            message = "an agent loop answers tool calls: give workload.tools"
            raise field_error(("sessions", "agent"), message, None)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self._tools)

    @property
    def tool_choice(self) -> str | NamedToolChoice:
        """As the body carries it: a mode, or the named function."""
        if self.choice in ("auto", "required", "none"):
            return self.choice
        return {"type": "function", "function": {"name": self.choice}}

    @property
    def called_tool(self) -> str:
        """The tool the built-in servers call: the one `choice` names, else the first."""
        if self.choice not in ("auto", "required", "none"):
            return self.choice
        return str(self._tools[0]["function"]["name"])
