"""Embeddings batches (`workload.embeddings`: spec): an `api: embeddings` request sends a drawn
number of inputs (draws), its prompt and as many more texts of its length (attach), and asks for
float or base64 vectors of a width. Its record's `items` and report.json's `metrics.items` are the
core's, for any API of items."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.embeddings.key import SPEC
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.features.slice import Attaches, Draws


def _draws() -> Draws:
    from loadgen.features.embeddings.draws import EMBEDDING_DRAWS

    return EMBEDDING_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.embeddings.attach import EMBEDDING_ATTACHMENT

    return EMBEDDING_ATTACHMENT


EMBEDDINGS = Slice("embeddings", {}, None, draws=_draws, attaches=_attaches, spec=SPEC)
