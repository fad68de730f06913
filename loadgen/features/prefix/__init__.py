"""Shared prefixes (`workload.prefix`: spec): a share of a class's requests starts with one of a
few shared texts, drawn per request (draws) and put before the request's own prompt as its lead
(lead), whose group the record's `prefix_group` keeps. What a server's prefix cache makes of
them is the core's measurement (report.json's `metrics.prefix_cache`, loadgen.collect.prefix_stats),
which a trace's shared blocks and any server's cached tokens feed too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.prefix.key import SPEC
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.features.slice import Draws, Leads


def _draws() -> Draws:
    from loadgen.features.prefix.draws import PREFIX_DRAWS

    return PREFIX_DRAWS


def _leads() -> Leads:
    from loadgen.features.prefix.lead import PREFIX_LEAD

    return PREFIX_LEAD


# A trace's rows bring their own blocks: they draw no prefix (`traced`), as before the slice.
PREFIX = Slice("prefix", {}, None, draws=_draws, leads=_leads, spec=SPEC, traced=False)
