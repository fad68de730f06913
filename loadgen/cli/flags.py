"""`loadtest run --target URL --rate 10 ...`: the common scenario keys as flags.

The flags are a thin layer: they write the plain dict a scenario.yaml would hold (each value read
as YAML reads it, `30s` a string, `5` a number) and hand it to the scenario's own validation
(loadgen.scenario.overrides), which tells each problem by the flag that set its key (`--rate: must
be > 0`). `--set KEY.PATH=VALUE` then overrides any key, here as in a file scenario.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

from kernel.units import format_duration, parse_duration
from loadgen.scenario.overrides import Override, apply_override, error_path, parse_override, yaml_value
from loadgen.wire.apis import WIRE_APIS

DEFAULT_NAME = "cli"
DEFAULT_RATE = "1"  # req/s, when no --rate, --concurrency or --sweep is given
DEFAULT_DURATION = "30s"  # of the phase (--rate) or the one level (--concurrency)
_RANGE = re.compile(r"\s*(\d+)\s*-\s*(\d+)\s*")
# The flags that build a scenario (a FILE brings its own: these are refused beside it).
SCENARIO_DESTS = (
    "target",
    "model",
    "api",
    "rate",
    "concurrency",
    "sweep",
    "duration",
    "warmup",
    "prompt_tokens",
    "output_tokens",
    "dataset",
    "slo",
    "seed",
    "name",
)


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that build a scenario against a running server (`server.kind: external`)."""
    group = parser.add_argument_group("a scenario from flags (instead of FILE)")
    group.add_argument("--target", metavar="URL", help="the running OpenAI-compatible server (server.url)")
    group.add_argument("--model", help="the model to ask for (default: the first of the target's /v1/models)")
    group.add_argument("--api", help=f"workload.api: {', '.join(WIRE_APIS)} (default: chat)")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--rate", metavar="R", help=f"Poisson arrivals, R req/s (default: {DEFAULT_RATE})")
    mode.add_argument("--concurrency", metavar="N", help="N users in a closed loop (one search level of N)")
    mode.add_argument(
        "--sweep",
        nargs="?",
        const="concurrency",
        choices=("concurrency", "rate"),
        help="a capacity search over concurrency (default) or rate: the knee and capacity at the SLOs",
    )
    group.add_argument(
        "--duration", metavar="D", help=f"the traffic's length, or each level's (default: {DEFAULT_DURATION})"
    )
    group.add_argument(
        "--warmup", metavar="D", help="left out of the statistics (default: 0; a level's: D/4)"
    )
    group.add_argument("--prompt-tokens", metavar="N|MIN-MAX", help="prompt length: fixed, or uniform")
    group.add_argument("--output-tokens", metavar="N|MIN-MAX", help="output length: fixed, or uniform")
    group.add_argument("--dataset", metavar="FILE", help="prompts from a JSONL or ShareGPT file")
    group.add_argument(
        "--slo",
        action="append",
        metavar="METRIC.STAT=VALUE",
        help="an SLO, e.g. ttft.p95=500ms or error_rate.max=1%% (repeatable)",
    )
    group.add_argument("--seed", metavar="S", help="the seed of every random choice (default: 0)")
    group.add_argument("--name", help=f"the scenario's name, in the run folder's (default: {DEFAULT_NAME})")


def add_set_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        action="append",
        dest="sets",
        metavar="KEY.PATH=VALUE",
        help="override a key of the scenario, e.g. traffic.0.rate=5 (repeatable)",
    )


def given_flags(options: argparse.Namespace) -> list[str]:
    """The scenario flags given, as typed (`--prompt-tokens`)."""
    return [
        f"--{dest.replace('_', '-')}" for dest in SCENARIO_DESTS if getattr(options, dest, None) is not None
    ]


@dataclass
class FlagScenario:
    """The scenario's plain data and, for each key a flag set, that flag (by issue path)."""

    data: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def put(self, keys: tuple[str, ...], value: Any, label: str) -> None:
        """Set a key; the flag owns it and every key inside its value (`--prompt-tokens: must be
        a whole number`, not `value: must be ...`)."""
        self.apply(Override(label, keys, value))
        items = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        for key, inner in items:
            self.put((*keys, str(key)), inner, label)

    def apply(self, override: Override) -> None:
        apply_override(self.data, override)
        self.origins[error_path(override.keys)] = override.text


def scenario_data(options: argparse.Namespace) -> FlagScenario:
    """The flags as scenario data (OverrideError: an --slo or --set that is not KEY=VALUE)."""
    built = FlagScenario()
    built.put(("name",), options.name or DEFAULT_NAME, "--name")
    if options.seed is not None:
        built.put(("seed",), yaml_value(options.seed, "--seed"), "--seed")
    built.put(("server", "kind"), "external", "--target")
    built.put(("server", "url"), options.target, "--target")
    if options.model is not None:
        built.put(("server", "model"), options.model, "--model")
    if options.api is not None:
        built.put(("workload", "api"), options.api, "--api")
    for key in ("prompt_tokens", "output_tokens"):
        text = getattr(options, key)
        if text is not None:
            label = f"--{key.replace('_', '-')}"
            built.put(("workload", key), _length(text, label), label)
    if options.dataset is not None:
        built.put(("workload", "dataset"), options.dataset, "--dataset")
    _traffic(built, options)
    for text in options.slo or ():
        built.apply(parse_override(text, f"--slo {text}", ("slo",), "ttft.p95=500ms"))
    for text in getattr(options, "sets", None) or ():
        built.apply(parse_override(text, f"--set {text}"))
    return built


def _traffic(built: FlagScenario, options: argparse.Namespace) -> None:
    """--rate: one Poisson phase; --concurrency N: a search of the one level N (closed loop);
    --sweep: the capacity search itself."""
    duration = None if options.duration is None else yaml_value(options.duration, "--duration")
    warmup = None if options.warmup is None else yaml_value(options.warmup, "--warmup")
    if options.concurrency is None and options.sweep is None:
        rate = yaml_value(options.rate or DEFAULT_RATE, "--rate")
        built.put(("traffic", "0", "kind"), "poisson", "--rate")
        built.put(("traffic", "0", "rate"), rate, "--rate")
        built.put(
            ("traffic", "0", "duration"), DEFAULT_DURATION if duration is None else duration, "--duration"
        )
        if warmup is not None:
            built.put(("warmup",), warmup, "--warmup")
        return
    label = "--sweep" if options.concurrency is None else "--concurrency"
    built.origins["search"] = label  # the search's own checks (whole users, start <= max)
    if options.concurrency is not None:
        users = yaml_value(options.concurrency, label)
        built.put(("search", "over"), "concurrency", label)
        for key in ("start", "max"):
            built.put(("search", key), users, label)
        built.put(("search", "levels"), [users], label)
        built.put(("search", "precision"), None, label)  # one trial of the level, judged as measured
        duration = DEFAULT_DURATION if duration is None else duration
    else:
        built.put(("search", "over"), options.sweep, label)
    if duration is not None:
        built.put(("search", "level_duration"), duration, "--duration")
    if warmup is not None:
        built.put(("search", "level_warmup"), warmup, "--warmup")
    elif duration is not None and (quarter := _quarter(duration)) is not None:
        # the search's own 5 s default would not fit a short level
        built.put(("search", "level_warmup"), quarter, "--duration")


def _quarter(duration: Any) -> str | None:
    """A quarter of the duration, in seconds (None: not a duration, which validation says)."""
    try:
        return format_duration(parse_duration(duration) / 4)
    except ValueError:
        return None


def _length(text: str, label: str) -> dict[str, Any]:
    """`128` → a fixed length; `64-256` → uniform between the two."""
    span = _RANGE.fullmatch(text)
    if span:
        return {"kind": "uniform", "min": int(span.group(1)), "max": int(span.group(2))}
    return {"kind": "fixed", "value": yaml_value(text, label)}
