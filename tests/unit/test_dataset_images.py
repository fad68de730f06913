"""Images named by a dataset's lines: ShareGPT-4V / LLaVA conversations' `image` files beside the
dataset, `{"prompt", "image"}` lines, and `messages` written with OpenAI content parts; the
files that are there are sent (their `<image>` placeholders taken out), the others left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadgen.features.images.attach import PNG_SIGNATURE, attached_images, file_url, image_parts, sends_images
from loadgen.scenario.loader import ScenarioError, parse_scenario
from loadgen.scenario.model import Workload
from loadgen.wire.apis import request_body
from loadgen.wire.call import Call


def _scenario(dataset: Path, api: str = "chat") -> str:
    return (
        "name: s\nserver: {kind: simulated}\n"
        f"workload:\n  api: {api}\n  dataset: {dataset}\n"
        "traffic: [{kind: constant, rate: 5, duration: 2s}]\n"
    )


def _workload(dataset: Path) -> Workload:
    return parse_scenario(_scenario(dataset), "s.yaml").workload


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "coco").mkdir()
    (tmp_path / "coco" / "cat.jpg").write_bytes(b"\xff\xd8cat")
    (tmp_path / "dog.png").write_bytes(PNG_SIGNATURE + b"dog")
    return tmp_path


def test_a_sharegpt4v_conversation_sends_its_image(folder: Path) -> None:
    conversations = [
        {"id": "1", "image": "coco/cat.jpg", "conversations": [
            {"from": "human", "value": "<image>\nWhat is in the picture?"},
            {"from": "gpt", "value": "A cat sitting on a mat."}]},
        {"id": "2", "image": "coco/missing.jpg", "conversations": [
            {"from": "human", "value": "<image>\nAnd here?"}, {"from": "gpt", "value": "Nothing."}]},
        {"id": "3", "conversations": [{"from": "human", "value": "Plain text"}]},
    ]  # fmt: skip
    (folder / "sharegpt4v.json").write_text(json.dumps(conversations))
    workload = _workload(folder / "sharegpt4v.json")
    cat, missing, plain = workload.entries
    assert cat.images == (str(folder / "coco" / "cat.jpg"),) and cat.prompt == "What is in the picture?"
    assert cat.output_tokens == 6
    assert missing.images == () and missing.prompt == "<image>\nAnd here?"  # not there: sent as text
    assert plain.images == ()
    assert sends_images(workload)
    urls, count = attached_images(workload, 0, 7, cat)
    assert count == 1 and urls == [file_url(str(folder / "coco" / "cat.jpg"))]
    assert urls[0].startswith("data:image/jpeg;base64,")
    _, body = request_body(
        "chat",
        Call(
            model="m",
            prompt=cat.prompt or "",
            max_tokens=4,
            ignore_eos=True,
            stream=True,
            content_parts=image_parts(urls),
        ),
    )
    assert body["messages"][0]["content"][0] == {"type": "text", "text": "What is in the picture?"}


def test_jsonl_lines_name_images_or_carry_content_parts(folder: Path) -> None:
    parts = [{"type": "text", "text": "compare"}, {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]  # fmt: skip
    lines = [
        {"prompt": "describe <image>", "image": ["dog.png", "coco/cat.jpg"]},
        {"messages": [{"role": "user", "content": parts}]},
        {"prompt": "no images here"},
    ]
    (folder / "d.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    workload = _workload(folder / "d.jsonl")
    named, written, plain = workload.entries
    assert named.images == (str(folder / "dog.png"), str(folder / "coco" / "cat.jpg"))
    assert named.prompt == "describe"
    assert written.image_parts == 2 and written.images == () and written.text == "compare"
    assert attached_images(workload, 0, 1, written) == ([], 2)  # sent as written, counted
    assert attached_images(workload, 0, 1, plain) == ([], 0)
    no_images = folder / "plain.jsonl"
    no_images.write_text('{"prompt": "hello"}\n')
    assert not sends_images(_workload(no_images))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"prompt": "x", "image": 3}, '"image" must be a file name or a list of file names'),
        ({"messages": [{"role": "user", "content": []}]}, "must be a string or a non-empty list"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}]},
            "content[0]",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}, "content[0] must be"),
    ],
)
def test_a_bad_image_line_is_refused_with_its_line(
    folder: Path, line: dict[str, object], expected: str
) -> None:
    (folder / "bad.jsonl").write_text('{"prompt": "fine"}\n' + json.dumps(line) + "\n")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_scenario(folder / "bad.jsonl"), "s.yaml")
    text = str(caught.value)
    assert "bad.jsonl:2:" in text and expected in text, text


def test_images_in_a_dataset_need_chat(folder: Path) -> None:
    (folder / "d.jsonl").write_text(json.dumps({"prompt": "x", "image": "dog.png"}) + "\n")
    with pytest.raises(ScenarioError, match='"image" needs api: chat'):
        parse_scenario(_scenario(folder / "d.jsonl", api="completions"), "s.yaml")
