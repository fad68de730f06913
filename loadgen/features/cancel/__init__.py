"""Cancellations (`workload.cancel`: spec): a share of each class's requests the client closes
mid-answer, as users close a tab, after a time from the send or a number of tokens, drawn per
request and per later turn of a session (draws). The slice gives only the stops; the core stops
the request there and records it as `cancelled`, which its statistics (report.json's
`metrics.cancelled`, `cancel_rate`, `slo.cancel_rate`) count apart from errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.cancel.key import SPEC
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.features.slice import Stops


def _stops() -> Stops:
    from loadgen.features.cancel.draws import CANCEL_STOPS

    return CANCEL_STOPS


CANCEL = Slice("cancel", {}, None, stops=_stops, spec=SPEC)
