"""report.json's `metrics.images` (each class's and phase's too): what image inputs' statistics
(loadgen.features.images.stats) write, taken into `Metrics` after the core's keys."""

from __future__ import annotations

from pydantic import Field

from loadgen.report.report_parts import ReportPart, TtftSplit
from loadgen.report.slice_fields import SliceField


class ImageCount(ReportPart):
    """The requests that carried one number of images, and their TTFT."""

    images: int = Field(description="images per request")
    requests: int = Field(description="requests measured that carried this many")
    ttft_ms: TtftSplit = Field(description="time to first token (the images' prefill shows as it rises)")


class RequestBytes(ReportPart):
    """Request body sizes in bytes, as sent."""

    mean: float | None = Field(description="bytes; null without data")
    p50: float | None = Field(description="bytes; null without data")
    p95: float | None = Field(description="bytes; null without data")
    max: float | None = Field(description="bytes; null without data")


class Images(ReportPart):
    """Image inputs (`workload.images`): the requests of classes that send images (those that drew
    0 images included)."""

    requests: int = Field(description="requests measured of the classes that send images")
    images: int = Field(description="images they carried")
    images_per_request: float | None = Field(description="images per request, mean")
    bytes_sent: int = Field(description="bytes of their request bodies, as sent")
    request_bytes: RequestBytes = Field(description="request body size")
    by_count: list[ImageCount] = Field(description="TTFT by image count (only counts that occurred)")


FIELD = SliceField("images", Images, "image inputs' figures; only in a run with `workload.images`")
