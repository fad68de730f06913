"""The images a request carries (`workload.images`, its spec): bytes, data URLs,
and the slice's attachment (content parts of the request's last user message).

Generated images are random noise from a seed of (width, height, index): the same bytes in every
run, and a compressed size close to a photo's of that size (a flat image would compress to
almost nothing and understate the bytes sent). PNG is written here with zlib (no dependency);
JPEG through Pillow (installed with matplotlib). Each data URL is made once and cached, so a
request's images cost the client a dictionary lookup, not an encode.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal, TypedDict

import numpy as np

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.images.key import SPEC
from loadgen.features.images.spec import IMAGE_SUFFIXES, POOL_SIZE, ImagesSpec, image_files
from loadgen.features.slice import Asking, Attached
from loadgen.inputs.dataset_entry import DatasetEntry
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
# Data URLs kept: a pool of each (size, format) of a few classes, and a folder's files.
_URLS_KEPT = 1024


def noise_pixels(width: int, height: int, index: int) -> np.ndarray:
    """height × width × 3 random bytes, the same for the same arguments."""
    rng = np.random.default_rng([width, height, index, 0x696D67])
    pixels: np.ndarray = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return pixels


def png_bytes(pixels: np.ndarray) -> bytes:
    """A PNG file of 8-bit RGB `pixels` (height × width × 3): each row with filter byte 0."""
    height, width, _ = pixels.shape
    rows = np.zeros((height, 1 + width * 3), dtype=np.uint8)
    rows[:, 1:] = pixels.reshape(height, width * 3)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, no interlace
    pixels_chunk = _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + pixels_chunk + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def jpeg_bytes(pixels: np.ndarray) -> bytes:
    from PIL import Image  # only a scenario asking for JPEG needs it

    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, format="JPEG", quality=85)
    return out.getvalue()


def generated_image(width: int, height: int, fmt: str, index: int) -> bytes:
    """Generated image `index` of a size and format, as file bytes."""
    pixels = noise_pixels(width, height, index)
    return png_bytes(pixels) if fmt == "png" else jpeg_bytes(pixels)


@lru_cache(maxsize=_URLS_KEPT)
def generated_url(width: int, height: int, fmt: str, index: int) -> str:
    return data_url(generated_image(width, height, fmt, index), _MIME[fmt])


@lru_cache(maxsize=_URLS_KEPT)
def file_url(path: str) -> str:
    file = Path(path)
    return data_url(file.read_bytes(), IMAGE_SUFFIXES[file.suffix.lower()])


@lru_cache(maxsize=64)
def _folder_files(folder: str) -> tuple[str, ...]:
    return tuple(str(path) for path in image_files(Path(folder)))


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def sends_images(workload: Workload) -> bool:
    """Whether a class sends images: drawn (`images:`), or named by its dataset's lines."""
    return SPEC.of(workload) is not None or any(e.images or e.image_parts for e in workload.entries)


def warm_workload(workload: Workload) -> None:
    """Make or read every image a class can send, before the schedule starts."""
    spec = SPEC.of(workload)
    if spec is not None:
        warm_images(spec)
    for entry in workload.entries:
        for path in entry.images:
            file_url(path)


def attached_images(
    workload: Workload, planned_images: int, request_id: int, entry: DatasetEntry | None
) -> tuple[list[str], int]:
    """The data URLs to attach to a request (its dataset line's files, then its drawn ones), and
    its image count (the image parts its line's messages carry as written included)."""
    urls = [file_url(path) for path in entry.images] if entry is not None else []
    spec = SPEC.of(workload)
    if spec is not None and planned_images:
        urls += request_images(spec, request_id, planned_images)
    return urls, len(urls) + (entry.image_parts if entry is not None else 0)


def warm_images(spec: ImagesSpec) -> None:
    """Make (or read) every image a run of `spec` can send, before its schedule starts: the
    first requests would otherwise wait for the encoding (about 30 ms a 512 × 512 PNG)."""
    if spec.folder is not None:
        for path in _folder_files(spec.folder)[:_URLS_KEPT]:
            file_url(path)
    else:
        for index in range(POOL_SIZE):
            generated_url(spec.width, spec.height, spec.format, index)


def request_images(spec: ImagesSpec, request_id: int, count: int) -> list[str]:
    """The data URLs of a request's `count` images: the pool's (or folder's) entries from its id on."""
    if spec.folder is not None:
        files = _folder_files(spec.folder)
        return [file_url(files[(request_id + j) % len(files)]) for j in range(count)]
    size = (spec.width, spec.height, spec.format)
    return [generated_url(*size, (request_id + j) % POOL_SIZE) for j in range(count)]


class ImageUrl(TypedDict):
    url: str


class ImageUrlPart(TypedDict):
    """The chat API's content part of an image: {"type": "image_url", "image_url": {"url": ...}}."""

    type: Literal["image_url"]
    image_url: ImageUrl


def image_parts(urls: Sequence[str]) -> list[ImageUrlPart]:
    """The chat API's content parts for images given as data URLs."""
    return [{"type": "image_url", "image_url": {"url": url}} for url in urls]


class ImageAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        named = frozenset(name for name, workload in classes.items() if sends_images(workload))
        for name in named:
            warm_workload(classes[name])
        return named

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        urls, count = attached_images(workload, asking.drawn, asking.request_id, asking.entry)
        return Attached(image_parts(urls), count)

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> dict[str, ExtraValue]:
        return {"images": attached.count, "request_bytes": body_bytes}


IMAGE_ATTACHMENT = ImageAttachment()
