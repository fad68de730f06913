"""Images named by a dataset's lines (`workload.dataset`): what they send beside their text.

- A line (JSONL `{"prompt": ...}` or `{"messages": [...]}`, or a ShareGPT conversation, as
  ShareGPT-4V and LLaVA write them) may name `"image"`: a file, or a list of files, relative to
  the dataset's folder. The files that exist there are sent with the line's (first) user message
  as `image_url` parts (loadgen.features.images.attach), read once and kept; a named file that is not
  there is left out (a dataset is often shared without its images). With images, the `<image>`
  placeholders LLaVA puts in the text are taken out: the parts say where the images are.
- A `messages` line whose content is a list of OpenAI content parts (`text`, `image_url`) is sent
  as written, its image parts counted as the request's images.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The image files a dataset or `images.dir` may name, by suffix, with their media types.
IMAGE_SUFFIXES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
}

PLACEHOLDER = "<image>"


def named_images(data: dict[str, Any], folder: Path) -> tuple[str, ...]:
    """The absolute paths of the image files `data` (a dataset line as read: free-form JSON, its
    `image` checked here) names that exist beside the dataset; ValueError for an `image` that is
    not a file name or a list of them."""
    named = data.get("image")
    if named is None:
        return ()
    names = [named] if isinstance(named, str) else named
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ValueError('"image" must be a file name or a list of file names')
    found = []
    for name in names:
        path = (folder / name).resolve()
        if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
            found.append(str(path))
    return tuple(found)


def without_placeholders(text: str) -> str:
    """`text` without LLaVA's `<image>` placeholders (and the line break after one)."""
    return text.replace(PLACEHOLDER + "\n", "").replace(PLACEHOLDER, "").strip()


def content_images(content: Any, where: str) -> int:
    """The image parts of a message's content (0 for a string); ValueError for a list that is not
    OpenAI content parts."""
    if isinstance(content, str):
        return 0
    if not isinstance(content, list) or not content:
        raise ValueError(f'{where} "content" must be a string or a non-empty list of content parts')
    images = 0
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        url = part.get("image_url") if kind == "image_url" else None
        if isinstance(url, dict) and isinstance(url.get("url"), str):
            images += 1
            continue
        raise ValueError(
            f'{where} content[{index}] must be {{"type": "text", "text": ...}} or '
            '{"type": "image_url", "image_url": {"url": ...}}'
        )
    return images


def content_text(content: Any) -> str:
    """A message's text: its string, or its text parts joined."""
    if isinstance(content, list):
        return " ".join(part["text"] for part in content if part.get("type") == "text")
    return str(content)
