"""`workload.reasoning`: how a reasoning model's stream is read, and what the tool asks of it.

```yaml
workload:
  output_tokens: {kind: fixed, value: 64}     # the answer
  reasoning:
    format: auto           # auto | reasoning_content | reasoning | think_tags
    tokens: {kind: lognormal, mean: 400, sigma: 0.5}   # optional: see below
    effort: medium         # optional: sent as reasoning_effort (low | medium | high)
```

Every stream is read for reasoning, with or without this section: a chunk whose delta carries
`reasoning_content` (vLLM, SGLang, DeepSeek) or `reasoning` (vLLM ≥ 0.10, OpenRouter) is a
reasoning token. `format` only decides how *inline* thinking in the content is found:
- `auto` (default): content that opens with `<think>` is reasoning up to `</think>`;
- `think_tags`: content up to `</think>` is reasoning even without an opening tag (chat templates
  that put `<think>` in the prompt, as DeepSeek-R1's does, stream without it);
- `reasoning_content` or `reasoning`: content is never scanned for tags.

`tokens` is a distribution drawn per request (seeded by the request's id and class, so a plan
repeats). The tool asks for `output_tokens + tokens` as `max_tokens` (servers count reasoning in
the output budget) and sends the draw to the built-in servers as `simulate_reasoning`, which they
stream first as reasoning in the chosen form (`auto`: `reasoning_content`; completions: tags) and report in
`usage.completion_tokens_details.reasoning_tokens`. A real server decides its own reasoning length
and ignores the field (vLLM logs it as an ignored field).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from loadgen.inputs.files import field_error
from loadgen.scenario.lengths import Length
from loadgen.scenario.slice_model import SliceSpec

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

ReasoningFormat = Literal["auto", "reasoning_content", "reasoning", "think_tags"]


class ReasoningSpec(SliceSpec):
    format: ReasoningFormat = "auto"
    tokens: Length | None = None
    effort: Literal["low", "medium", "high"] | None = None

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """A delta's field names a chat stream's form: a completion's thinking is inline."""
        if (
            isinstance(spec, ReasoningSpec)
            and workload.api != "chat"
            and spec.format not in ("auto", "think_tags")
        ):
            message = (
                f"format {spec.format} is a chat delta's field: with api: {workload.api} give think_tags"
            )
            raise field_error(("reasoning", "format"), message, None)

    def emitted_format(self, api: str) -> str:
        """The form the built-in servers stream the drawn reasoning in (a completion has no
        delta fields: inline tags)."""
        if api != "chat":
            return "think_tags"
        return "reasoning_content" if self.format == "auto" else self.format
