"""Shrink matplotlib's SVG for inlining: no prolog or metadata, fewer digits, no auto ids.

matplotlib writes coordinates with 6 decimals, an XML prolog and DOCTYPE (invalid inside HTML),
RDF metadata, comments, indentation, and an id on every group (`figure_1`, `line2d_7`, ...) that
would repeat in every chart of a page. What stays: the ids we set (`data-*`, `slo-*`,
`marker-*`, ...) and the hashed ids of clip paths and marker definitions that `url(#...)` and
`xlink:href` refer to (salted per chart, so unique on a page).
"""

from __future__ import annotations

import re

_PROLOG = re.compile(r"<\?xml[^>]*>\s*|<!DOCTYPE[^>]*>\s*", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# matplotlib's automatic ids are "<kind>_<n>"; ours use hyphens, hashed ones have no underscore.
_AUTO_ID = re.compile(r' id="[A-Za-z][A-Za-z0-9.]*_\d+"')
_GEOMETRY_ATTR = re.compile(r'(\s(?:d|x|y|x1|x2|y1|y2|cx|cy|r|width|height|transform|points)=")([^"]*)"')
_NUMBER = re.compile(r"-?\d+\.\d+")
_INDENT = re.compile(r">\s+<")
_PATH_BREAKS = re.compile(r"\s*\n\s*")
_OUR_GROUP = re.compile(r'<g id="(data|slo|marker|span)-')


def _round(match: re.Match[str]) -> str:
    text = f"{float(match.group()):.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _round_attr(match: re.Match[str]) -> str:
    return match.group(1) + _NUMBER.sub(_round, _PATH_BREAKS.sub(" ", match.group(2)).strip()) + '"'


def compact_svg(svg: str) -> str:
    """matplotlib SVG text → a compact `<svg>` element for inlining (0.1-pt coordinates).

    Groups we named get a class as well (`class="data"`, `"slo"`, `"marker"`, `"span"`), so a
    page check can enumerate them without knowing the names.
    """
    svg = _PROLOG.sub("", svg)
    svg = _METADATA.sub("", svg)
    svg = _COMMENT.sub("", svg)
    svg = _AUTO_ID.sub("", svg)
    svg = _GEOMETRY_ATTR.sub(_round_attr, svg)
    svg = _INDENT.sub("><", svg)
    svg = _OUR_GROUP.sub(lambda m: f'<g class="{m.group(1)}" id="{m.group(1)}-', svg)
    return svg.strip()
