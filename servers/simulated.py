"""The simulated server: its scenario config, its adapter, and `python -m servers.simulated`.

The load generator imports this module for the config and adapter only; the aiohttp server
and the engine are imported inside `main()`, so they load in the server process alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_origin

from pydantic import Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from kernel.strict import StrictModel
from kernel.units import Duration, PositiveDuration, Size
from servers.adapter import LaunchSpec, ProcessAdapter, module_server_spec
from servers.cpus import CpuSetting
from servers.energy_setting import EnergySetting


class SimulatedLora(StrictModel):
    """`server.lora`: adapters a request may name as its model; at most `max_loras` resident (LRU),
    and loading one that is not costs `load_time` before its request's first token."""

    adapters: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$", max_length=200)]] = Field(
        min_length=1, max_length=10_000
    )
    max_loras: int = Field(default=1, ge=1, le=10_000)
    load_time: Duration = 0.0

    @model_validator(mode="after")
    def _unique(self) -> SimulatedLora:
        repeated = sorted({name for name in self.adapters if self.adapters.count(name) > 1})
        if repeated:
            raise ValueError(f"adapter names must be unique; repeated: {', '.join(repeated)}")
        return self


class SimulatedOptions(StrictModel):
    """The simulated server's own options: defined once, read from `server:` in a scenario and
    from `python -m servers.simulated`'s flags alike (one flag a field, `--lora-...` for lora's)."""

    ttft: Duration = Field(default=0.05, description="time to first token, e.g. 50ms")
    itl: Duration = Field(default=0.01, description="time between tokens, e.g. 10ms")
    slots: int = Field(default=8, ge=1, le=100_000, description="requests decoded together")
    startup: Duration = Field(default=0.0, description="not ready until this long after spawn")
    leak_per_request: Size = Field(default=0, description="bytes kept per request, e.g. 100KB")
    # Prefill and prefix cache (issue 14): TTFT grows by prefill_per_token per prompt token the
    # cache does not hold; the cache is an LRU of prefix_cache_blocks blocks of block_tokens.
    prefill_per_token: Duration = Field(
        default=0.0, description="added to TTFT per prompt token the prefix cache does not hold, e.g. 0.2ms"
    )
    prefix_cache_blocks: int = Field(
        default=0, ge=0, le=100_000_000, description="prefix cache size in blocks, LRU; 0: no cache"
    )
    block_tokens: int = Field(
        default=16, ge=1, le=1_000_000, description="prompt tokens (words) per cache block"
    )
    # Image inputs (issue 22): each image part of a chat message counts as this many prompt
    # tokens, in usage and in prefill (prefill_per_token each), as a vision model's encoder adds.
    image_tokens: int = Field(
        default=256, ge=0, le=1_000_000, description="prompt tokens each image of a chat message counts as"
    )
    # Embeddings, rerank and score (issue 41): each takes a slot and answers, once admitted, after
    # embed_base + embed_per_input × inputs + embed_per_token × their prompt tokens (embeddings)
    # or rerank_base + rerank_per_document × documents (rerank; score: per text_2 text).
    embed_base: Duration = Field(default=0.005, description="an embeddings request's fixed latency, e.g. 5ms")
    embed_per_input: Duration = Field(default=0.001, description="added per embeddings input, e.g. 1ms")
    embed_per_token: Duration = Field(
        default=0.0, description="added per prompt token of an embeddings request's inputs, e.g. 0.01ms"
    )
    embedding_dim: int = Field(default=384, ge=1, le=65_536, description="width of the embedding vectors")
    rerank_base: Duration = Field(
        default=0.01, description="a rerank or score request's fixed latency, e.g. 10ms"
    )
    rerank_per_document: Duration = Field(default=0.002, description="added per document scored, e.g. 2ms")
    # Transcriptions (issue 41): a recording of S seconds has round(transcript_words_per_s × S)
    # words; once admitted, its first is due after transcribe_base + transcribe_per_audio_s × S,
    # each next one `itl` later; streamed in OpenAI's typed events or vLLM's chunks.
    transcribe_base: Duration = Field(
        default=0.05, description="a transcription's fixed latency to its first word, e.g. 50ms"
    )
    transcribe_per_audio_s: Duration = Field(
        default=0.01, description="added to the first word per second of the recording, e.g. 10ms"
    )
    transcript_words_per_s: float = Field(
        default=2.5, gt=0, le=1000, description="words of transcript per second of recording"
    )
    transcript_format: Literal["openai", "vllm"] = Field(
        default="openai", description="a streamed transcript's format: OpenAI's events or vLLM's chunks"
    )
    # A classic model over KServe v2 (issue 42): an image classifier, `input` FP32 [-1, 3, 32, 32]
    # to `logits` FP32 [-1, 10]; a request of batch B takes a slot and answers, once admitted,
    # after infer_base + infer_per_item × B.
    infer_base: Duration = Field(default=0.002, description="a v2 infer request's fixed latency, e.g. 2ms")
    infer_per_item: Duration = Field(
        default=0.0005, description="added per item of a v2 infer request's batch, e.g. 0.5ms"
    )
    infer_max_batch_size: int = Field(
        default=64, ge=1, le=65_536, description="the most items one v2 infer request may hold"
    )
    # Token counts (issue 43): a chat or completions answer's usage says this many tokens more (or
    # fewer) than it streamed and than its prompt held, so a test knows the mismatch it must find.
    usage_skew: int = Field(
        default=0, ge=-1_000_000, le=1_000_000, description="added to each answer's usage.completion_tokens"
    )
    prompt_usage_skew: int = Field(
        default=0, ge=-1_000_000, le=1_000_000, description="added to each answer's usage.prompt_tokens"
    )
    model: str = Field(default="simulated", description="served model name")
    # Idle keep-alive connections are closed after this long (uvicorn, behind vLLM, uses 5 s).
    keepalive_timeout: PositiveDuration = Field(
        default=75.0, description="close idle keep-alive connections after this long, e.g. 5s"
    )
    # LoRA adapters served besides the base model, and how they are kept (servers/engines/lora_cache.py).
    lora: SimulatedLora | None = None


class SimulatedServerConfig(SimulatedOptions):
    """`server: {kind: simulated, ...}`: the options, and where and how the adapter runs it."""

    kind: Literal["simulated"]
    port: Annotated[int, Field(ge=0, le=65535)] | Literal["auto"] = "auto"
    host: str = "127.0.0.1"
    startup_timeout: Duration = 300.0
    cpus: CpuSetting = "auto"  # cores for the server ("0-2,5", [0, 1]; auto: all but the client's)
    energy: EnergySetting = "auto"  # devices whose energy the run counts (servers/energy_setting.py)


class SimulatedAdapter(ProcessAdapter):
    def __init__(self, config: SimulatedServerConfig) -> None:
        super().__init__(config, startup_timeout=config.startup_timeout, model=config.model)
        self.sim = config

    def launch_spec(self) -> LaunchSpec:
        cfg = self.sim
        return module_server_spec("servers.simulated", cfg.host, cfg.port, option_argv(cfg))


def option_argv(options: SimulatedOptions) -> list[str]:
    """The flags that give a server these options (every one set, as `--flag=value`)."""
    argv = []
    for flag, (path, _) in _flags().items():
        value: Any = options
        for name in path:
            value = getattr(value, name, None)
        if value is not None:
            text = ",".join(value) if isinstance(value, list) else str(value)
            argv.append(f"--{flag}={text}")
    return argv


def _flags() -> dict[str, tuple[tuple[str, ...], FieldInfo]]:
    """Each option's flag name → its path in the options (("lora", "max_loras")) and its field."""
    flags: dict[str, tuple[tuple[str, ...], FieldInfo]] = {}
    for name, field in SimulatedOptions.model_fields.items():
        if name == "lora":
            for inner, inner_field in SimulatedLora.model_fields.items():
                flags[f"lora-{inner.replace('_', '-')}"] = (("lora", inner), inner_field)
        else:
            flags[name.replace("_", "-")] = ((name,), field)
    return flags


def _value(text: str, field: FieldInfo) -> Any:
    """A flag's text as the model reads it: a list comma-separated, a number as a number (a
    bare number is seconds or bytes), a name as it is."""
    if get_origin(field.annotation) is list:
        return [part for part in text.split(",") if part]
    if field.annotation is str:
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def parse_args(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, SimulatedOptions]:
    """The process's own flags (host, port, timings) and the options, validated by the model."""
    parser = argparse.ArgumentParser(
        prog="python -m servers.simulated",
        description=(
            "A simulated OpenAI-compatible LLM server (and KServe v2 classifier)"
            " with exact, configurable timing."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (%(default)s)")
    parser.add_argument(
        "--record-timings",
        action="store_true",
        help="record when each chunk was written; GET /debug/timings returns percentiles (benchmarks)",
    )
    flags = _flags()
    for flag, (_, field) in flags.items():
        default = "none" if field.is_required() or field.default is None else field.default
        parser.add_argument(
            f"--{flag}", dest=flag, metavar="VALUE", help=f"{field.description or flag} ({default})"
        )
    args = parser.parse_args(argv)
    given: dict[str, Any] = {}
    for flag, (path, field) in flags.items():
        text = getattr(args, flag)
        if text is not None:
            target = given.setdefault(path[0], {}) if len(path) > 1 else given
            target[path[-1]] = _value(text, field)
    try:
        options = SimulatedOptions.model_validate(given)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "--" + "-".join(str(part) for part in error["loc"]).replace("_", "-")
        parser.error(f"{where}: {error['msg']}")
    return args, options


def main(argv: Sequence[str] | None = None) -> int:
    args, options = parse_args(argv)
    from servers.engines.simulated_classic import InferTiming
    from servers.engines.simulated_engine import PoolingTiming, SimulatedEngine, TranscriptionTiming
    from servers.http import build_app, run
    from servers.http.openai import UsageSkew

    lora = options.lora
    engine = SimulatedEngine(
        ttft=options.ttft,
        itl=options.itl,
        slots=options.slots,
        startup=options.startup,
        leak_per_request=options.leak_per_request,
        model_name=options.model,
        prefill_per_token=options.prefill_per_token,
        prefix_cache_blocks=options.prefix_cache_blocks,
        block_tokens=options.block_tokens,
        lora_adapters=tuple(lora.adapters) if lora is not None else (),
        max_loras=lora.max_loras if lora is not None else 1,
        lora_load_time=lora.load_time if lora is not None else 0.0,
        image_tokens=options.image_tokens,
        embedding_width=options.embedding_dim,
        pooling=PoolingTiming(
            embed_base=options.embed_base,
            embed_per_input=options.embed_per_input,
            embed_per_token=options.embed_per_token,
            rerank_base=options.rerank_base,
            rerank_per_document=options.rerank_per_document,
        ),
        transcription=TranscriptionTiming(
            transcribe_base=options.transcribe_base,
            transcribe_per_audio_s=options.transcribe_per_audio_s,
            words_per_audio_s=options.transcript_words_per_s,
        ),
        transcript_format=options.transcript_format,
        classic=InferTiming(infer_base=options.infer_base, infer_per_item=options.infer_per_item),
        infer_max_batch_size=options.infer_max_batch_size,
    )
    skew = UsageSkew(output=options.usage_skew, prompt=options.prompt_usage_skew)
    app = build_app(engine, record_timings=args.record_timings, usage_skew=skew)
    return run(app, args.host, args.port, keepalive_timeout=options.keepalive_timeout)


if __name__ == "__main__":
    from servers.http.serve import exit_now

    exit_now(main())
