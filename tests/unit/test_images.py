"""The images a request carries: generated PNG/JPEG (valid, decodable, the same bytes every run),
a folder's files, the chat body's content parts; the built-in server's reading of them (image
tokens in usage and prefill, a text-only model's 400); report.json's `metrics.images`."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer
from PIL import Image

from loadgen.collect.columns import columns_of
from loadgen.collect.records import RequestRecord
from loadgen.collect.run_stats import GroupStats
from loadgen.features.images.attach import (
    PNG_SIGNATURE,
    generated_image,
    image_parts,
    noise_pixels,
    png_bytes,
    request_images,
)
from loadgen.features.images.spec import POOL_SIZE, ImagesSpec
from loadgen.wire.apis import request_body
from loadgen.wire.call import Call
from servers.engines.batching import BatchingEngine
from servers.engines.engine import Engine
from servers.engines.simulated_engine import SimulatedEngine
from servers.http import build_app
from servers.http.openai import ChatBody, parse_body


def _decoded(url: str) -> tuple[str, bytes]:
    head, data = url.split(",", 1)
    return head, base64.b64decode(data)


# ---- the images ---------------------------------------------------------------------------------


def test_a_generated_png_is_valid_and_decodes_to_its_pixels() -> None:
    pixels = noise_pixels(37, 11, 3)
    data = png_bytes(pixels)
    assert data.startswith(PNG_SIGNATURE)
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(data[12:29])  # the header's CRC
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (37, 11) and image.mode == "RGB"
        assert np.array_equal(np.asarray(image), pixels)


def test_generated_images_are_the_same_bytes_every_time_and_differ_by_index() -> None:
    assert generated_image(64, 48, "png", 2) == generated_image(64, 48, "png", 2)
    assert generated_image(64, 48, "png", 2) != generated_image(64, 48, "png", 3)
    jpeg = generated_image(64, 48, "jpeg", 2)
    assert jpeg[:2] == b"\xff\xd8" and jpeg == generated_image(64, 48, "jpeg", 2)
    with Image.open(io.BytesIO(jpeg)) as image:
        assert image.format == "JPEG" and image.size == (64, 48)
    # noise: a 512 × 512 PNG keeps about its raw size (a photo's order), not a flat image's few bytes
    assert len(generated_image(512, 512, "png", 0)) > 512 * 512 * 3


def test_a_request_takes_the_pool_from_its_id_on() -> None:
    spec = ImagesSpec.model_validate({"count": {"kind": "fixed", "value": 1}, "width": 8, "height": 8})
    urls = request_images(spec, 5, 3)
    assert len(urls) == 3 and len(set(urls)) == 3
    head, data = _decoded(urls[0])
    assert head == "data:image/png;base64" and data == generated_image(8, 8, "png", 5)
    assert request_images(spec, 6, 1)[0] == urls[1]
    assert request_images(spec, 5 + POOL_SIZE, 1)[0] == urls[0]  # the pool repeats
    assert request_images(spec, 5, 0) == []


def test_a_folder_sends_its_files_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "b.jpg").write_bytes(b"\xff\xd8jpeg bytes")
    (tmp_path / "a.png").write_bytes(PNG_SIGNATURE + b"png bytes")
    (tmp_path / "c.txt").write_text("not an image")
    spec = ImagesSpec.model_validate({"count": {"kind": "fixed", "value": 1}, "folder": str(tmp_path)})
    urls = request_images(spec, 0, 3)
    assert [_decoded(url) for url in urls] == [
        ("data:image/png;base64", PNG_SIGNATURE + b"png bytes"),
        ("data:image/jpeg;base64", b"\xff\xd8jpeg bytes"),
        ("data:image/png;base64", PNG_SIGNATURE + b"png bytes"),  # name order, round and round
    ]


# ---- the body -----------------------------------------------------------------------------------


def test_images_are_image_url_parts_after_the_text() -> None:
    path, body = request_body(
        "chat",
        Call(
            model="m",
            prompt="look",
            max_tokens=4,
            ignore_eos=True,
            stream=True,
            content_parts=image_parts(["u1", "u2"]),
        ),
    )
    assert path == "/v1/chat/completions"
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "u1"}},
                {"type": "image_url", "image_url": {"url": "u2"}},
            ],
        }
    ]
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is this"}]
    call = Call(
        model="m",
        prompt="",
        max_tokens=4,
        ignore_eos=True,
        stream=True,
        messages=messages,
        content_parts=image_parts(["u"]),
    )
    _, body = request_body("chat", call)
    assert body["messages"][0] == messages[0]
    assert body["messages"][1]["content"][1] == {"type": "image_url", "image_url": {"url": "u"}}
    assert messages[1]["content"] == "what is this"  # the dataset's own entry is left as it was
    _, plain = request_body(
        "chat", Call(model="m", prompt="look", max_tokens=4, ignore_eos=True, stream=True)
    )
    assert plain["messages"] == [{"role": "user", "content": "look"}]  # no images: as ever
    with pytest.raises(ValueError, match="need api: chat"):
        request_body(
            "completions",
            Call(
                model="m",
                prompt="x",
                max_tokens=4,
                ignore_eos=True,
                stream=True,
                content_parts=image_parts(["u"]),
            ),
        )


# ---- the server ---------------------------------------------------------------------------------


def _chat(images: int, text: str = "a b c d") -> dict[str, object]:
    parts: list[dict[str, object]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}] * images
    return {"model": "simulated", "max_tokens": 2, "messages": [{"role": "user", "content": parts}]}


def test_the_server_counts_image_parts() -> None:
    body = parse_body(json.dumps(_chat(3)).encode(), ChatBody)
    assert isinstance(body, ChatBody) and body.images() == 3 and body.prompt_text() == "a b c d"
    plain = parse_body(json.dumps(_chat(0)).encode(), ChatBody)
    assert isinstance(plain, ChatBody) and plain.images() == 0


def _post(engine: Engine, payload: dict[str, object]) -> tuple[int, dict[str, Any], float]:
    async def go() -> tuple[int, dict[str, Any], float]:
        async with TestClient(TestServer(build_app(engine))) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            response = await client.post("/v1/chat/completions", json=payload)
            return response.status, await response.json(), loop.time() - started

    return asyncio.run(go())


def test_the_simulated_server_charges_prefill_per_image_and_counts_its_tokens() -> None:
    engine = SimulatedEngine(ttft=0.0, itl=0.0, prefill_per_token=0.0001, image_tokens=300, spawned_at=0)
    status, answer, took = _post(engine, _chat(2))
    assert status == 200
    assert answer["usage"]["prompt_tokens"] == 4 + 2 * 300
    assert took >= 0.0001 * 604  # the prefill of 604 tokens, 60 ms, before any token
    status, answer, _ = _post(engine, _chat(0))
    assert answer["usage"]["prompt_tokens"] == 4


def test_a_text_only_model_answers_400() -> None:
    assert BatchingEngine.image_tokens is None  # the ORT and PyTorch engines' base: text only
    engine = SimulatedEngine(ttft=0.0, itl=0.0, spawned_at=0)
    engine.image_tokens = None  # as a text-only engine declares
    status, answer, _ = _post(engine, _chat(1))
    assert status == 400 and "this model takes no images" in answer["error"]["message"]
    status, _, _ = _post(engine, _chat(0))
    assert status == 200  # text parts alone are served


# ---- the report ---------------------------------------------------------------------------------


def _record(i: int, images: int | None, size: int | None, ttft_s: float) -> RequestRecord:
    return RequestRecord(
        id=i, phase=0, scheduled_s=1.0, sent_s=1.0, first_token_s=1.0 + ttft_s, done_s=2.0,
        output_tokens=4, extra=None if images is None else {"images": images, "request_bytes": size},
    )  # fmt: skip


def test_the_images_metrics_count_what_was_sent() -> None:
    records = [
        _record(0, 0, 500, 0.010),
        _record(1, 2, 2500, 0.050),
        _record(2, 2, 2600, 0.060),
        _record(3, 1, 1500, 0.030),
        _record(4, None, None, 0.005),  # a class without images: not counted
    ]
    group = GroupStats()
    cols = columns_of(records)
    group.add(cols, np.ones(len(records), dtype=bool))
    metrics: Mapping[str, Any] = group.metrics([])  # a slice's key: not in the core's MetricsPart
    images = metrics["images"]
    assert images["requests"] == 4 and images["images"] == 5 and images["images_per_request"] == 1.25
    assert images["bytes_sent"] == 7100 and images["request_bytes"]["mean"] == 1775
    assert images["request_bytes"]["max"] == 2600
    by_count = {row["images"]: row for row in images["by_count"]}
    assert sorted(by_count) == [0, 1, 2] and by_count[2]["requests"] == 2
    assert by_count[2]["ttft_ms"]["p50"] == pytest.approx(55.0)
    assert by_count[0]["ttft_ms"]["p50"] == pytest.approx(10.0)
    plain = GroupStats()
    plain.add(columns_of(records[4:]), np.ones(1, dtype=bool))
    assert "images" not in plain.metrics([])  # a run without images reports nothing more
    merged = GroupStats()
    merged.merge(group)
    merged.merge(plain)
    merged_metrics: Mapping[str, Any] = merged.metrics([])
    assert merged_metrics["images"] == images
    line = records[4].to_file_dict()
    assert "images" not in line and "request_bytes" not in line  # plain records: no bigger


def test_the_report_sections_quote_metrics_images() -> None:
    from loadgen.features.images.report.html import images_body
    from loadgen.features.images.report.markdown import format_bytes, image_lines
    from loadgen.features.images.report.model import Images

    images: dict[str, Any] = {
        "requests": 10, "images": 5, "images_per_request": 0.5, "bytes_sent": 23_940,
        "request_bytes": {"mean": 2394.0, "p50": 233.0, "p95": 4557.0, "max": 4559.0},
        "by_count": [
            {"images": 0, "requests": 5, "ttft_ms": {"p50": 15.5, "p95": 18.2, "p99": 18.7}},
            {"images": 1, "requests": 5, "ttft_ms": {"p50": None, "p95": None, "p99": None}},
        ],
    }  # fmt: skip
    assert [format_bytes(n) for n in (999, 23_940, 2_090_243, 225_746_297, None)] == [
        "999 B", "23.94 kB", "2.09 MB", "225.75 MB", "–"
    ]  # fmt: skip
    lines = image_lines(Images.model_validate(images))
    assert "- Images: 5 sent with 10 requests · 0.5 per request" in lines
    assert "| 0 | 5 | 15.5 | 18.2 | 18.7 |" in lines and "| 1 | 5 | – | – | – |" in lines
    assert image_lines(None) == []
    html = images_body(Images.model_validate(images))
    assert "ttft-by-images" in html and "23.94 kB" in html
    failed = {**images, "by_count": images["by_count"][1:]}
    assert "ttft-by-images" not in images_body(Images.model_validate(failed))  # the table alone
    assert "TTFT by image count" in images_body(Images.model_validate(failed))
