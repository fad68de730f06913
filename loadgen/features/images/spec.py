"""`workload.images`: chat requests carry images, as users of a vision model send them.

```yaml
workload:
  api: chat
  images:
    count: {kind: uniform, min: 0, max: 4}   # images per request (whole numbers ≥ 0)
    width: 512                               # generated images: noise pixels of this size
    height: 512
    format: png                              # or jpeg
    # folder: photos/                        # or: the image files of a folder, sent as they are
```

Semantics (carried out by the images slice, loadgen.features.images: its plan and attach modules):

- Each request's image count is drawn from `count` (written as the workload's lengths: fixed,
  uniform, normal, lognormal; rounded, clipped to 0..MAX_IMAGES) from the plan's own seeded
  streams: a scenario without `images:` plans exactly as before, and adding one changes nothing
  else of the plan.
- The user message becomes OpenAI content parts: its text, then one `image_url` part per image,
  a `data:` URL of the image's bytes in base64 (as vLLM and the OpenAI API accept).
- Generated images are noise (so their compressed size is that of a photo, not of a flat colour),
  made from a seed, the same bytes for the same (size, format, index) in every run; a pool of
  POOL_SIZE distinct images per size and format is made once and reused, so the client spends no
  CPU encoding per request. A request's images are the pool's consecutive entries from its id on.
- `folder`: the image files of a folder (.png, .jpg, .jpeg, .webp, .gif), in name order, checked
  when the scenario loads (the folder exists and holds at least one); a request's images are the
  files from its id on, read once and kept.

Images need `api: chat` and are not sent with multi-turn sessions (a history would re-send them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field, ValidationInfo, model_validator

from loadgen.inputs.dataset_images import IMAGE_SUFFIXES as IMAGE_SUFFIXES  # the readers' list
from loadgen.inputs.files import field_error, input_folder
from loadgen.scenario.distributions import Distribution, counts
from loadgen.scenario.follow_ups import follow_ups
from loadgen.scenario.slice_model import SliceSpec
from loadgen.wire.apis import apis_carrying, carries

MAX_IMAGES = 100  # per request; more is a typo (vLLM's per-prompt limits are a few)
MAX_SIDE = 8192  # pixels; a generated image is held in memory for the run
POOL_SIZE = 16  # distinct generated images per (size, format)


# Drawn image counts are clipped to 0..MAX_IMAGES.
IMAGES = counts("Images", __name__, 0, MAX_IMAGES, "image count")
FixedImages = IMAGES.fixed
UniformImages = IMAGES.uniform
NormalImages = IMAGES.normal
LognormalImages = IMAGES.lognormal

if TYPE_CHECKING:
    from loadgen.scenario.workload import WorkloadCore

    ImageCount: TypeAlias = Distribution[int]
else:
    ImageCount = IMAGES.union


class ImagesSpec(SliceSpec):
    count: ImageCount
    width: int = Field(default=512, ge=1, le=MAX_SIDE)
    height: int = Field(default=512, ge=1, le=MAX_SIDE)
    format: Literal["png", "jpeg"] = "png"
    # The files of this folder instead of generated images (relative: from the scenario's folder).
    folder: str | None = None

    @model_validator(mode="after")
    def _read_folder(self, info: ValidationInfo) -> ImagesSpec:
        if self.folder is None:
            return self
        holds = f"image files ({', '.join(sorted(IMAGE_SUFFIXES))})"
        object.__setattr__(self, "folder", input_folder(self.folder, info, holds, image_files))
        return self

    @classmethod
    def fits(cls, workload: WorkloadCore, spec: SliceSpec | None) -> None:
        """Images are content parts of a chat message, sent once (not again with each turn)."""
        if spec is None:
            return
        if not carries(workload.api, "content_parts"):
            needs = apis_carrying("content_parts")
            message = f"images need api: {needs} (they are content parts of a chat message)"
            raise field_error("images", message, None)
        if follow_ups(workload) is not None:
            message = "images are not sent with sessions: (a history would send them again each turn)"
            raise field_error("images", message, None)


def image_files(folder: Path) -> list[Path]:
    """The image files of `folder`, in name order (not its subfolders')."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [path for path in entries if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file()]
