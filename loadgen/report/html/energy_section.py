"""report.html's Energy section: the headline in words, key cards, and for a search the tokens per
joule against load beside goodput; or one line saying why nothing was measured."""

from __future__ import annotations

from loadgen.report.energy_words import energy_line, energy_table, headline_window, sig
from loadgen.report.html.charts import PALETTE, Chart, Marker, Series, line_chart
from loadgen.report.html.page import Card, cards, escape, grid, note, table
from loadgen.report.model.energy import Energy


def _cards(energy: Energy) -> str:
    where, window = headline_window(energy)
    if window is None:
        return ""
    idle = energy.idle
    return cards(
        [
            Card("J per output token", sig(window.joules_per_output_token), where, big=True),
            Card("tokens per joule", sig(window.tokens_per_joule), where, big=True),
            Card("J per request", sig(window.joules_per_request), where, big=True),
            Card("mean power", sig(window.mean_watts, "W"), ", ".join(energy.devices), big=True),
            Card("idle power", sig(idle.watts, "W") if idle else "–", "before the traffic", big=True),
        ],
        even=True,
    )


def tokens_per_joule_chart(energy: Energy) -> Chart | None:
    """Tokens per joule and goodput against the level: where efficiency peaks, and the capacity."""
    levels = [level for level in energy.levels if level.energy.tokens_per_joule is not None]
    if len(levels) < 2:
        return None
    x = [level.level for level in levels]
    efficiency = [level.energy.tokens_per_joule or 0.0 for level in levels]
    series = [Series("tokens-per-joule", x, efficiency, label="tokens per joule", style="linepoints")]
    markers = []
    if energy.capacity is not None:
        at = [level for level in levels if level.energy == energy.capacity]
        if at:
            label = f"capacity: {sig(energy.capacity.tokens_per_joule)} tokens/J"
            y = at[0].energy.tokens_per_joule or 0.0
            markers.append(Marker("energy-capacity", at[0].level, y, label, PALETTE[2]))
    return line_chart(
        "energy-levels",
        "Tokens per joule against load",
        "load level",
        "output tokens per joule",
        series,
        markers=markers,
        x_min=0,
        y_min=0,
        caption="Each searched level's output tokens over the counted devices' energy (its trials "
        "pooled); the goodput beside it is in the table below.",
    )


def energy_body(energy: Energy | None) -> str:
    """The section's HTML; '' for a run folder of an older version (no `energy`)."""
    line = energy_line(energy)
    if energy is None or line is None:
        return ""
    if not energy.measured:
        return note(line)
    parts = [_cards(energy), note(line)]
    chart = tokens_per_joule_chart(energy)
    if chart is not None:
        parts.append(grid([chart.html()]))
    found = energy_table(energy, sig)
    if found is not None:
        parts.append(table(*found))
    said = [f"Counted: {', '.join(energy.devices)} ({energy.how}; {energy.source or 'zeus'}).", *energy.notes]
    parts.append("<ul>" + "".join(f"<li>{escape(text)}</li>" for text in said) + "</ul>")
    return "".join(parts)
