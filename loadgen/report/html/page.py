"""The page skeleton: one self-contained HTML document with inline CSS and no script.

`render_page(title, banner, sections)` is all a report needs: a verdict `Banner`, then
`Section`s whose bodies are HTML built with the helpers here (`table`, `cards`, `grid`,
`escape`) and charts' `Chart.html()`. Nothing is fetched at view time: no script, stylesheet,
font or picture outside the file.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["pass", "fail", "error"]
CellStatus = Literal["pass", "fail", "warn", "none"]

_CSS = """
:root { --pass:#1b7f3b; --fail:#c62828; --error:#b35900; --ink:#1d1d1f; --muted:#5f6368;
  --line:#dadce0; --bg:#f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
  Arial, sans-serif; color: var(--ink); background: var(--bg); }
main { max-width: 1440px; margin: 0 auto; padding: 0 20px 40px; }
.banner { color: #fff; padding: 16px 28px; display: flex; align-items: center; gap: 28px; }
.banner.pass { background: var(--pass); } .banner.fail { background: var(--fail); }
.banner.error { background: linear-gradient(90deg, #616161, var(--error)); }
.banner .verdict { font-size: 46px; font-weight: 800; letter-spacing: 2px; line-height: 1; }
.banner h1 { font-size: 22px; margin: 0 0 4px; font-weight: 600; }
.banner .reason { font-size: 17px; margin: 0; opacity: .96; }
.banner .meta { font-size: 13px; opacity: .85; margin-top: 4px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 16px 0;
  padding: 12px 18px 16px; }
section > h2 { font-size: 18px; margin: 2px 0 10px; }
h3 { font-size: 15px; margin: 12px 0 6px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 12px 18px;
  align-items: start; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 4px 0 8px; }
.cards.even { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 150px;
  background: #fafafa; }
.card .label { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .4px; }
.card .value { font-size: 24px; font-weight: 700; line-height: 1.2; }
.card .note { font-size: 12.5px; color: var(--muted); }
.card.big .value { font-size: 30px; }
.card.pass { border-left: 6px solid var(--pass); } .card.fail { border-left: 6px solid var(--fail); }
.card.warn { border-left: 6px solid var(--error); }
table { border-collapse: collapse; font-size: 14px; margin: 4px 0 8px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eceff1; text-align: right; white-space: nowrap; }
th { background: #f1f3f4; font-weight: 600; }
th:first-child, td:first-child { text-align: left; }
td.pass { color: var(--pass); font-weight: 700; } td.fail { color: var(--fail); font-weight: 700; }
td.warn { color: var(--error); font-weight: 700; }
tr.fail td { background: #fdecea; } tr.pass td { background: #f1f8f2; } tr.warn td { background: #fff4e5; }
figure.chart { margin: 0; }
.chart-title { font-weight: 700; font-size: 15px; margin: 6px 0 0 6px; }
figure.chart svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 12.5px; color: var(--muted); margin: 2px 4px 0; }
p.note { color: var(--muted); font-size: 13.5px; margin: 4px 0; }
code { font-size: 13px; background: #f1f3f4; padding: 1px 4px; border-radius: 3px; }
footer { color: var(--muted); font-size: 12.5px; text-align: center; margin-top: 12px; }
"""


@dataclass(frozen=True)
class Banner:
    """The first thing on the page: PASS (green), FAIL (red) or ERROR (grey-orange)."""

    verdict: str  # "pass" | "fail" | "error"; anything else shows as error
    headline: str
    reason: str
    meta: str = ""
    label: str | None = None  # the big word; default the verdict in capitals


@dataclass(frozen=True)
class Section:
    """A titled block; `html_body` is trusted HTML built with this module's helpers."""

    title: str
    html_body: str
    section_id: str = ""


def escape(text: object) -> str:
    return html.escape(str(text))


def verdict_class(verdict: str) -> Verdict:
    return verdict if verdict in ("pass", "fail") else "error"  # type: ignore[return-value]


def status_of(passed: bool | None) -> CellStatus:
    return "none" if passed is None else "pass" if passed else "fail"


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    row_status: Sequence[CellStatus] | None = None,
    status_column: int | None = None,
    table_class: str = "",
) -> str:
    """An HTML table; `row_status` colours whole rows, `status_column` that row's cell strongly.

    Cells are escaped text; a row's status "none" leaves it plain.
    """
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body: list[str] = []
    for number, row in enumerate(rows):
        status = row_status[number] if row_status is not None else "none"
        cells = []
        for column, cell in enumerate(row):
            strong = status_column == column and status != "none"
            cells.append(f'<td class="{status}">' if strong else "<td>")
            cells.append(f"{escape(cell)}</td>")
        row_class = f' class="{status}"' if status != "none" else ""
        body.append(f"<tr{row_class}>{''.join(cells)}</tr>")
    css = f' class="{escape(table_class)}"' if table_class else ""
    return f"<table{css}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    note: str = ""
    status: CellStatus = "none"
    big: bool = False


def cards(items: Sequence[Card], even: bool = False) -> str:
    """A row of key-number cards (label, big value, small note; a coloured edge for a status).
    `even`: equal widths sharing the whole row (the notes wrap), for a few cards that belong together."""
    out = []
    for card in items:
        css = " ".join(
            part
            for part in ("card", card.status if card.status != "none" else "", "big" if card.big else "")
            if part
        )
        note = f'<div class="note">{escape(card.note)}</div>' if card.note else ""
        out.append(
            f'<div class="{css}"><div class="label">{escape(card.label)}</div>'
            f'<div class="value">{escape(card.value)}</div>{note}</div>'
        )
    return f'<div class="cards{" even" if even else ""}">{"".join(out)}</div>'


def grid(items: Sequence[str]) -> str:
    """Side-by-side blocks (charts, tables) that wrap on a narrow window."""
    return f'<div class="grid">{"".join(f"<div>{item}</div>" for item in items)}</div>'


def note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def render_page(title: str, banner: Banner, sections: Sequence[Section], footer: str = "") -> str:
    """A complete HTML document: the banner, then each section in order; inline CSS only."""
    verdict = verdict_class(banner.verdict)
    label = banner.label or verdict.upper()
    meta = f'<div class="meta">{escape(banner.meta)}</div>' if banner.meta else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network at view time: forbid every fetch, whatever the SVGs might contain.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f'<header class="banner {verdict}" data-verdict="{verdict}">'
        f'<div class="verdict">{escape(label)}</div><div><h1>{escape(banner.headline)}</h1>'
        f'<p class="reason">{escape(banner.reason)}</p>{meta}</div></header><main>',
    ]
    for section in sections:
        anchor = f' id="{escape(section.section_id)}"' if section.section_id else ""
        parts.append(f"<section{anchor}><h2>{escape(section.title)}</h2>{section.html_body}</section>")
    if footer:
        parts.append(f"<footer>{escape(footer)}</footer>")
    parts.append("</main></body></html>")
    return "\n".join(parts)
