"""Transcriptions' report section, as loadgen.report asks it of a slice (SliceSection): a line of
report.md's key numbers, a card of report.html's first screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.audio.report.model import FIELD
from loadgen.fmt import format_figure
from loadgen.report.html.page import Card
from loadgen.report.slice_sections import SliceSection

if TYPE_CHECKING:
    from loadgen.report.model.metrics import Metrics


def _key_lines(metrics: Metrics) -> list[str]:
    audio = FIELD.of(metrics)
    if audio is None:
        return []
    rtf, each = audio.real_time_factor, format_figure(audio.audio_s_per_request, "s")
    rate = format_figure(audio.audio_s_per_s, "s")
    return [
        f"- Audio: {format_figure(audio.audio_s, 's')} uploaded, {each} per recording · {rate} "
        f"transcribed per second · real-time factor p50 {format_figure(rtf.p50)}, "
        f"p95 {format_figure(rtf.p95)}"
    ]


def _cards(metrics: Metrics) -> list[Card]:
    audio = FIELD.of(metrics)
    if audio is None:
        return []
    rtf = audio.real_time_factor
    said = f"real-time factor p50 {format_figure(rtf.p50)} · p95 {format_figure(rtf.p95)}"
    return [Card("audio s/s", format_figure(audio.audio_s_per_s), said)]


SECTION = SliceSection(key_lines=_key_lines, cards=_cards)
