"""The model's own tokenizer (tokenizer.json) and chat template, without transformers.

`tokenizers` reads the fast-tokenizer file every Hugging Face model ships; the chat template is
the Jinja2 source in tokenizer_config.json, rendered the way transformers renders it. So the
ONNX Runtime server needs neither torch nor transformers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

# Text that ends in U+FFFD decoded from an unfinished UTF-8 sequence: wait for the next token.
_PARTIAL = "\ufffd"
# Prompt tokens kept as decoding context, so a first output token's leading space survives
# decoders that strip it at the start of a text (SentencePiece-style `▁word`).
_CONTEXT_TOKENS = 5


def _token_text(value: object) -> str | None:
    # tokenizer_config.json writes special tokens as "</s>" or {"content": "</s>", ...}.
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _raise(message: str) -> None:
    raise TemplateError(message)


class TextTokenizer:
    def __init__(self, tokenizer: Tokenizer, config: Mapping[str, Any]) -> None:
        self._tok = tokenizer
        template = config.get("chat_template")
        if isinstance(template, list):  # [{"name": "default", "template": ...}, ...]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default")
        self._special = {
            "bos_token": _token_text(config.get("bos_token")) or "",
            "eos_token": _token_text(config.get("eos_token")) or "",
        }
        self._template = None
        if isinstance(template, str):
            # As transformers renders it: optional variables a template tests may be undefined.
            env = ImmutableSandboxedEnvironment(
                trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
            )
            env.globals["raise_exception"] = _raise
            self._template = env.from_string(template)

    @classmethod
    def from_dir(cls, model_dir: Path) -> TextTokenizer:
        config_path = model_dir / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        return cls(Tokenizer.from_file(str(model_dir / "tokenizer.json")), config)

    def encode(self, text: str) -> list[int]:
        """Token ids as the model sees them, special tokens (e.g. BOS) included."""
        return list(self._tok.encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=True))

    @property
    def has_chat_template(self) -> bool:
        return self._template is not None

    def render_chat(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
        """The prompt text for a conversation, through the model's own chat template."""
        if self._template is None:
            raise ValueError("this tokenizer has no chat_template")
        return str(
            self._template.render(
                messages=list(messages), add_generation_prompt=add_generation_prompt, **self._special
            )
        )

    def detokenizer(self, prompt_ids: Sequence[int]) -> IncrementalDetokenizer:
        return IncrementalDetokenizer(self, prompt_ids[-_CONTEXT_TOKENS:])


class IncrementalDetokenizer:
    """Text for each new token, never splitting a multi-byte character.

    Decodes a short window of ids and emits what it adds to the already-emitted prefix (the
    method vLLM uses), so one token costs a small decode, not a decode of the whole output.
    A token that ends inside a character yields "" and its bytes come with the next token.
    """

    def __init__(self, tokenizer: TextTokenizer, context: Sequence[int]) -> None:
        self._tok = tokenizer
        self._ids = list(context)
        self._prefix_at = 0  # window start
        self._read_at = len(self._ids)  # end of what is already emitted
        self._prefix_text = tokenizer.decode(self._ids)

    def push(self, token: int) -> str:
        self._ids.append(token)
        text = self._tok.decode(self._ids[self._prefix_at :])
        if len(text) <= len(self._prefix_text) or text.endswith(_PARTIAL):
            return ""
        piece = text[len(self._prefix_text) :]
        self._prefix_at, self._read_at = self._read_at, len(self._ids)
        self._prefix_text = self._tok.decode(self._ids[self._prefix_at : self._read_at])
        return piece
