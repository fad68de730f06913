"""A traffic feature built as a slice lives in its own package: the core never names it.

Read from the source: outside its package, a slice's record fields, its package and (for images,
tool calls, adapters and shared prefixes) its very word appear only where the issue that made
slices leaves them (a dataset's own lines, the wire's rendering of a request and reading of an
answer) and in the one registry line of loadgen.features.
Images were re-added this way as the check of the seams.
"""

from __future__ import annotations

import re
from pathlib import Path

from loadgen.features import SLICES

ROOT = Path(__file__).resolve().parents[2]
LOADGEN = ROOT / "loadgen"
# Where a slice may still be named: the dataset readers (a dataset line's own images). Its YAML
# model is its own (`Slice.spec`), so none is named in loadgen.scenario; its report side too
# (`Slice.report`), so none in loadgen.report.
NAMED_OUTSIDE = ("inputs/",)
# And where each one may be, besides: the APIs read reasoning and tool calls off the wire into the
# tool's own events (loadgen.wire), which agent sessions answer (session_book) and the user hands
# them (TTFAT, the first answer token, is the core's: collect reads the slices' answer_after fields);
# the Responses API takes a chat message's image part as an `input_image` part of its own.
ALSO_NAMED = {
    "tools": ("wire/", "traffic/session_book.py", "traffic/users.py"),
    "reasoning": ("wire/",),
    "images": ("wire/responses.py",),
    # other libraries' cancel methods: the energy monitor's window, a gevent signal watcher
    "cancel": ("collect/energy_sampler.py", "live/metrics_server.py"),
}
# The word a slice is found by in the source besides its fields and package ("image" for images:
# "images" and "image_url"); reasoning has none, since TTFT's and TTFAT's definitions name it.
# Shared prefixes: their key, model, draws and text, not the bare word: "prefix" is the server's
# prefix cache too, whose measurement (metrics.prefix_cache, a record's `prefix_group` and
# `cached_tokens`) is the core's, fed by a trace's shared blocks and any server's cached tokens
# as well as by the slice's leads. Sessions: their key's model, not the word: a session (its ids,
# the runtime that releases a turn when an answer arrives, its record fields and figures) is the
# core's follow-ups, which finds the key by its model (loadgen.scenario.follow_ups).
# Cancellations' is any `cancel…` but the core's own: the status `cancelled` of a request the
# client stopped early (a planned Stop, whoever planned it), its counts `cancelled` and
# `cancel_rate` in every `metrics` object, `slo.cancel_rate`, and "cancellation(s)" or "cancel rate".
STEMS = {
    "images": "image",
    "tools": "tool_call",
    "adapters": "lora",
    "prefix": r"workload\.prefix|PrefixSpec|prefix_text|plan_prefix|PREFIX_MARK|PREFIX_STREAM|prefix_entropy",
    "cancel": "cancel(?!led|lation|[_ ]rate)",
    "sessions": r"SessionsSpec|AgentSpec|UniformTurns|LognormalTurns",
}
# A slice's field found as a quoted key where its bare word names something else: `adapter` is
# also the server adapter (servers.adapter, the run's `ctx.adapter`), no LoRA's.
QUOTED = {"adapters"}


def _mentions(pattern: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    word = re.compile(pattern, re.IGNORECASE)
    for path in sorted(LOADGEN.rglob("*.py")):
        lines = [
            n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if word.search(line)
        ]
        if lines:
            found[str(path.relative_to(LOADGEN))] = lines
    return found


def test_each_slice_is_one_package_and_one_registry_line() -> None:
    assert SLICES, "no slice registered"
    for feature in SLICES:
        package = LOADGEN / "features" / feature.name
        assert (package / "__init__.py").is_file(), f"slice {feature.name} has no package of its own"
        quote = feature.name in QUOTED
        names = [rf"[\"']{field}[\"']" if quote else rf"\b{field}\b" for field in feature.fields]
        names.append(rf"features\.{feature.name}\b")
        mentions = _mentions("|".join([*names, *([STEMS[feature.name]] if feature.name in STEMS else [])]))
        core = {
            where: lines
            for where, lines in mentions.items()
            if not where.startswith(
                (f"features/{feature.name}/", *NAMED_OUTSIDE, *ALSO_NAMED.get(feature.name, ()))
            )
        }
        registry = core.pop("features/__init__.py", [])
        assert core == {}, f"the core names slice {feature.name}: {core}"
        assert len(registry) <= 2, (
            f"loadgen.features names {feature.name} on lines {registry}: its import and entry"
        )


def test_a_slice_reaches_the_record_and_the_statistics_through_its_registration() -> None:
    from loadgen.collect.feature_list import feature_stats
    from loadgen.collect.request_record import extra_columns, field_docs, key_rows

    keys = {key for key, _, _ in key_rows()}
    columns = {name for _, name, _ in extra_columns()}
    for feature in SLICES:
        assert feature.stats is None or feature.stats() in feature_stats()
        for name, doc in feature.fields.items():
            assert field_docs()[name] is doc and name in keys
            assert name.removesuffix("_s") in columns
