"""Image inputs (`workload.images`: spec): chat requests carry images, drawn
per request (plan), attached as content parts (attach), recorded (record), summed up as
report.json's `metrics.images` (stats) and shown in report.md and report.html (report/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.features.images.key import SPEC
from loadgen.features.images.record import IMAGE_FIELDS
from loadgen.features.slice import Slice

if TYPE_CHECKING:
    from loadgen.collect.feature_stats import FeatureStats
    from loadgen.features.slice import Attaches, Draws


def _stats() -> FeatureStats:
    from loadgen.features.images.stats import IMAGE_STATS

    return IMAGE_STATS


def _draws() -> Draws:
    from loadgen.features.images.draws import IMAGE_DRAWS

    return IMAGE_DRAWS


def _attaches() -> Attaches:
    from loadgen.features.images.attach import IMAGE_ATTACHMENT

    return IMAGE_ATTACHMENT


IMAGES = Slice(
    "images",
    IMAGE_FIELDS,
    _stats,
    draws=_draws,
    attaches=_attaches,
    report="loadgen.features.images.report",
    spec=SPEC,
)
