"""The simulated server: its scenario config, its adapter, and `python -m servers.simulated`.

The load generator imports this module for the config and adapter only; the aiohttp server
and the engine are imported inside `main()`, so they load in the server process alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from kernel.strict import StrictModel
from kernel.units import Duration, PositiveDuration, Size, parse_duration, parse_size
from servers.base import LaunchSpec, ProcessAdapter, module_server_spec
from servers.cpus import CpuSetting
from servers.energy import EnergySetting


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


class SimulatedServerConfig(StrictModel):
    kind: Literal["simulated"]
    ttft: Duration = 0.05
    itl: Duration = 0.01
    slots: int = Field(default=8, ge=1, le=100_000)
    startup: Duration = 0.0
    leak_per_request: Size = 0
    # Prefill and prefix cache (issue 14): TTFT grows by prefill_per_token per prompt token the
    # cache does not hold; the cache is an LRU of prefix_cache_blocks blocks of block_tokens.
    prefill_per_token: Duration = 0.0
    prefix_cache_blocks: int = Field(default=0, ge=0, le=100_000_000)
    block_tokens: int = Field(default=16, ge=1, le=1_000_000)
    # Image inputs (issue 22): each image part of a chat message counts as this many prompt
    # tokens, in usage and in prefill (prefill_per_token each), as a vision model's encoder adds.
    image_tokens: int = Field(default=256, ge=0, le=1_000_000)
    port: Annotated[int, Field(ge=0, le=65535)] | Literal["auto"] = "auto"
    host: str = "127.0.0.1"
    model: str = "simulated"
    startup_timeout: Duration = 300.0
    # Idle keep-alive connections are closed after this long (uvicorn, behind vLLM, uses 5 s).
    keepalive_timeout: PositiveDuration = 75.0
    cpus: CpuSetting = "auto"  # cores for the server ("0-2,5", [0, 1]; auto: all but the client's)
    energy: EnergySetting = "auto"  # devices whose energy the run counts (servers/energy.py)
    # LoRA adapters served besides the base model, and how they are kept (servers/engines/lora_cache.py).
    lora: SimulatedLora | None = None


class SimulatedAdapter(ProcessAdapter):
    def __init__(self, config: SimulatedServerConfig) -> None:
        super().__init__(config, startup_timeout=config.startup_timeout, model=config.model)
        self.sim = config

    def launch_spec(self) -> LaunchSpec:
        cfg = self.sim
        args = [
            f"--ttft={cfg.ttft}",
            f"--itl={cfg.itl}",
            f"--slots={cfg.slots}",
            f"--startup={cfg.startup}",
            f"--leak-per-request={cfg.leak_per_request}",
            f"--prefill-per-token={cfg.prefill_per_token}",
            f"--prefix-cache-blocks={cfg.prefix_cache_blocks}",
            f"--block-tokens={cfg.block_tokens}",
            f"--image-tokens={cfg.image_tokens}",
            f"--model={cfg.model}",
            f"--keepalive-timeout={cfg.keepalive_timeout}",
        ]
        if cfg.lora is not None:
            args += [
                f"--lora-adapters={','.join(cfg.lora.adapters)}",
                f"--max-loras={cfg.lora.max_loras}",
                f"--lora-load-time={cfg.lora.load_time}",
            ]
        return module_server_spec("servers.simulated", cfg.host, cfg.port, args)


def _duration(text: str) -> float:
    try:
        return parse_duration(float(text) if _is_number(text) else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    try:
        return parse_size(float(text) if _is_number(text) else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _at_least(minimum: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be at least {minimum}")
        return value

    return parse


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m servers.simulated",
        description="A simulated OpenAI-compatible LLM server with exact, configurable timing.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (%(default)s)")
    parser.add_argument("--ttft", type=_duration, default=0.05, help="time to first token, e.g. 50ms")
    parser.add_argument("--itl", type=_duration, default=0.01, help="time between tokens, e.g. 10ms")
    parser.add_argument(
        "--slots", type=_at_least(1, "slots"), default=8, help="requests decoded together (%(default)s)"
    )
    parser.add_argument(
        "--startup", type=_duration, default=0.0, help="not ready until this long after spawn"
    )
    parser.add_argument(
        "--leak-per-request", type=_size, default=0, help="bytes kept per request, e.g. 100KB"
    )
    parser.add_argument(
        "--prefill-per-token",
        type=_duration,
        default=0.0,
        help="added to TTFT per prompt token the prefix cache does not hold, e.g. 0.2ms (%(default)s)",
    )
    parser.add_argument(
        "--prefix-cache-blocks",
        type=_at_least(0, "prefix-cache-blocks"),
        default=0,
        help="prefix cache size in blocks, LRU; 0: no cache (%(default)s)",
    )
    parser.add_argument(
        "--block-tokens",
        type=_at_least(1, "block-tokens"),
        default=16,
        help="prompt tokens (words) per prefix cache block (%(default)s)",
    )
    parser.add_argument(
        "--image-tokens",
        type=_at_least(0, "image-tokens"),
        default=256,
        help="prompt tokens each image of a chat message counts as (%(default)s)",
    )
    parser.add_argument("--model", default="simulated", help="served model name (%(default)s)")
    parser.add_argument(
        "--keepalive-timeout",
        type=_duration,
        default=75.0,
        help="close idle keep-alive connections after this long, e.g. 5s (%(default)ss)",
    )
    parser.add_argument(
        "--lora-adapters",
        type=lambda text: tuple(name for name in text.split(",") if name),
        default=(),
        help="LoRA adapters a request may name as its model, comma-separated (none)",
    )
    parser.add_argument(
        "--max-loras",
        type=_at_least(1, "max-loras"),
        default=1,
        help="adapters resident at once (%(default)s)",
    )
    parser.add_argument(
        "--lora-load-time",
        type=_duration,
        default=0.0,
        help="added to TTFT when a request's adapter is not resident, e.g. 50ms (%(default)s)",
    )
    parser.add_argument(
        "--record-timings",
        action="store_true",
        help="record when each chunk was written; GET /debug/timings returns percentiles (benchmarks)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from servers.engines.simulated_engine import SimulatedEngine
    from servers.http import build_app, run

    engine = SimulatedEngine(
        ttft=args.ttft,
        itl=args.itl,
        slots=args.slots,
        startup=args.startup,
        leak_per_request=args.leak_per_request,
        model_name=args.model,
        prefill_per_token=args.prefill_per_token,
        prefix_cache_blocks=args.prefix_cache_blocks,
        block_tokens=args.block_tokens,
        lora_adapters=args.lora_adapters,
        max_loras=args.max_loras,
        lora_load_time=args.lora_load_time,
        image_tokens=args.image_tokens,
    )
    app = build_app(engine, record_timings=args.record_timings)
    return run(app, args.host, args.port, keepalive_timeout=args.keepalive_timeout)


if __name__ == "__main__":
    from servers.http.serve import exit_now

    exit_now(main())
