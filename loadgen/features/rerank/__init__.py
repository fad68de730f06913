"""Rerank queries (`workload.rerank`: spec): an `api: rerank` request sends its prompt as the query
and a drawn number of documents of drawn lengths (draws, attach), and asks for the `top_n` best.
Its record's `items` (the documents) and report.json's `metrics.items` are the core's, for any
API of items."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.rerank.key import SPEC
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.features.slice import Attaches, Draws


def _draws() -> Draws:
    from loadgen.features.rerank.draws import RERANK_DRAWS

    return RERANK_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.rerank.attach import RERANK_ATTACHMENT

    return RERANK_ATTACHMENT


RERANK = Slice("rerank", {}, None, draws=_draws, attaches=_attaches, spec=SPEC)
