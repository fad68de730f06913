"""The classic engines (servers/engines/classic*.py) on the bundled classifier and on users' own
files: metadata read from the model, ONNX Runtime vs PyTorch, dynamic batching (each request its
own rows, fewer runs than requests, max_batch_size kept, max_wait), bad inputs, failures.

Real runtimes throughout; where a test needs a run held or failed, it wraps the real ORT runner.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import numpy as np
import pytest

from servers.engines.classic import ClassicEngine
from servers.engines.classic_ort import OrtRunner
from servers.engines.engine import GenerationRequest, GenerationUnsupported, RequestTiming
from servers.engines.tensor_io import BadTensors
from servers.engines.tensors import TensorModel, TensorSpec
from servers.models import CLASSIFIER_MODEL_DIR
from servers.models.check_classifier import ONNX_VS_TORCH_TOLERANCE, seeded_images
from tests.unit.classic_engines import ort_engine, torch_engine

T = TypeVar("T")
ROWS_TOLERANCE = 1e-5  # a row's logits alone vs within a batch (other kernel blocking)
IMAGE = (3, 32, 32)


def served(engine: ClassicEngine, body: Callable[[ClassicEngine], Awaitable[T]]) -> T:
    """`body(engine)` on a started engine, in a fresh event loop; closed afterwards."""

    async def main() -> T:
        assert not engine.ready()
        await engine.start()
        assert engine.ready()
        try:
            return await body(engine)
        finally:
            await engine.close()

    return asyncio.run(main())


async def logits(
    engine: ClassicEngine, images: np.ndarray, timing: RequestTiming | None = None
) -> np.ndarray:
    return (await engine.infer({"input": images}, timing or RequestTiming()))["logits"]


def direct(images: np.ndarray) -> np.ndarray:
    """The classifier's logits from ONNX Runtime itself, no engine between."""
    return OrtRunner(CLASSIFIER_MODEL_DIR).run({"input": images})["logits"]


class Gated:
    """The real ORT runner, each run held until `gate` is set; `fail_next` makes one run fail."""

    def __init__(self) -> None:
        self.real = OrtRunner(CLASSIFIER_MODEL_DIR)
        self.platform, self.inputs, self.outputs = self.real.platform, self.real.inputs, self.real.outputs
        self.gate = threading.Event()
        self.fail_next = False

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.gate.wait(10)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("runtime exploded")
        return self.real.run(inputs)


def test_the_tensor_model_is_read_from_the_onnx_file():
    engine = ort_engine(CLASSIFIER_MODEL_DIR, max_batch_size=4)
    assert engine.tensor_model is None  # until loaded

    async def body(engine: ClassicEngine) -> TensorModel | None:
        return engine.tensor_model

    assert served(engine, body) == TensorModel(
        "classifier",
        "onnxruntime_onnx",
        (TensorSpec("input", "FP32", (-1, *IMAGE)),),
        (TensorSpec("logits", "FP32", (-1, 10)),),
        4,
    )


def test_onnx_runtime_and_pytorch_engines_give_the_same_logits():
    pytest.importorskip("torch")

    images = seeded_images(6, seed=7)

    async def body(engine: ClassicEngine) -> tuple[np.ndarray, TensorModel | None]:
        return await logits(engine, images), engine.tensor_model

    from_ort, ort_model = served(ort_engine(CLASSIFIER_MODEL_DIR), body)
    from_torch, torch_model = served(torch_engine(CLASSIFIER_MODEL_DIR), body)
    assert np.abs(from_ort - from_torch).max() < ONNX_VS_TORCH_TOLERANCE
    assert from_ort.shape == (6, 10) and from_ort.std() > 0.1
    assert torch_model is not None and ort_model is not None
    assert torch_model.platform == "pytorch_libtorch"
    assert (torch_model.inputs, torch_model.outputs) == (ort_model.inputs, ort_model.outputs)


@pytest.mark.parametrize("runtime", ["onnxruntime", "torch"])
def test_a_batch_of_8_gives_the_rows_of_8_single_calls(runtime):
    if runtime == "torch":
        pytest.importorskip("torch")

        engine = torch_engine(CLASSIFIER_MODEL_DIR, max_wait=0.0)
    else:
        engine = ort_engine(CLASSIFIER_MODEL_DIR, max_wait=0.0)
    images = seeded_images(8, seed=3)

    async def body(engine: ClassicEngine) -> tuple[np.ndarray, np.ndarray]:
        batch = await logits(engine, images)
        alone = [await logits(engine, images[i : i + 1]) for i in range(8)]
        return batch, np.concatenate(alone)

    batch, alone = served(engine, body)
    np.testing.assert_allclose(batch, alone, rtol=0, atol=ROWS_TOLERANCE)
    assert engine.runs == 9 and dict(engine.run_rows) == {8: 1, 1: 8}


def test_concurrent_requests_run_together_up_to_max_batch_size_each_getting_its_own_rows():
    images = seeded_images(8, seed=5)
    engine = ort_engine(CLASSIFIER_MODEL_DIR, max_batch_size=4, max_wait=5.0)
    timings = [RequestTiming() for _ in range(8)]

    async def body(engine: ClassicEngine) -> list[np.ndarray]:
        return list(await asyncio.gather(*(logits(engine, images[i : i + 1], timings[i]) for i in range(8))))

    rows = served(engine, body)
    # A full batch goes at once, not after max_wait (5 s): two runs of 4 for 8 requests.
    assert engine.runs == 2 and dict(engine.run_rows) == {4: 2}
    np.testing.assert_allclose(np.concatenate(rows), direct(images), rtol=0, atol=ROWS_TOLERANCE)
    waits = [t.queue_wait_s for t in timings]
    assert all(w is not None and 0 <= w < 5.0 for w in waits), waits


def test_requests_of_several_rows_fill_a_batch_in_arrival_order_never_past_max_batch_size():
    sizes = [5, 5, 3]
    images = seeded_images(sum(sizes), seed=9)
    parts = np.split(images, np.cumsum(sizes)[:-1])
    engine = ort_engine(CLASSIFIER_MODEL_DIR, max_batch_size=8, max_wait=5.0)

    async def body(engine: ClassicEngine) -> list[np.ndarray]:
        return list(await asyncio.gather(*(logits(engine, part) for part in parts)))

    answers = served(engine, body)
    # 5 alone (5 + 5 > 8), then 5 + 3: the third does not overtake the second.
    assert dict(engine.run_rows) == {5: 1, 8: 1}
    assert [len(a) for a in answers] == sizes
    np.testing.assert_allclose(np.concatenate(answers), direct(images), rtol=0, atol=ROWS_TOLERANCE)


def test_a_lone_request_waits_max_wait_for_company_then_runs():
    engine = ort_engine(CLASSIFIER_MODEL_DIR, max_batch_size=8, max_wait=0.05)
    timing = RequestTiming()

    async def body(engine: ClassicEngine) -> np.ndarray:
        return await logits(engine, seeded_images(2), timing)

    assert served(engine, body).shape == (2, 10)
    # Both ends on the loop's clock; the bound below is the one a timer cannot miss.
    assert timing.queue_wait_s is not None and timing.queue_wait_s >= 0.05
    assert engine.runs == 1


def test_stats_count_the_running_batch_and_the_queue():
    gated = Gated()
    engine = ClassicEngine("gated", lambda: gated, max_batch_size=2, max_wait=0.0)
    images = seeded_images(3)

    async def body(engine: ClassicEngine) -> list[tuple[int, int]]:
        tasks = [asyncio.ensure_future(logits(engine, images[i : i + 1])) for i in range(3)]
        await asyncio.sleep(0)  # one turn: the three queue; the batcher wakes on the next
        seen = [(engine.stats().running, engine.stats().waiting)]
        while engine.stats().running == 0:
            await asyncio.sleep(0.001)
        seen.append((engine.stats().running, engine.stats().waiting))  # 2 held on the worker
        gated.gate.set()
        await asyncio.gather(*tasks)
        seen.append((engine.stats().running, engine.stats().waiting))
        return seen

    assert served(engine, body) == [(0, 3), (2, 1), (0, 0)]
    assert engine.stats().slots == 2 and dict(engine.run_rows) == {2: 1, 1: 1}


def test_a_runtime_error_fails_its_batch_and_the_next_batch_runs():
    gated = Gated()
    gated.gate.set()
    engine = ClassicEngine("gated", lambda: gated, max_batch_size=2, max_wait=1.0)
    images = seeded_images(2)

    async def body(engine: ClassicEngine) -> tuple[list[BaseException | np.ndarray], np.ndarray]:
        gated.fail_next = True
        failed = await asyncio.gather(
            *(logits(engine, images[i : i + 1]) for i in range(2)), return_exceptions=True
        )
        return failed, await logits(engine, images)

    failed, after = served(engine, body)
    assert [str(f) for f in failed] == ["runtime exploded"] * 2
    np.testing.assert_allclose(after, direct(images), rtol=0, atol=ROWS_TOLERANCE)


def test_a_caller_that_goes_away_leaves_the_queue():
    gated = Gated()
    engine = ClassicEngine("gated", lambda: gated, max_batch_size=1, max_wait=0.0)
    images = seeded_images(3)

    async def body(engine: ClassicEngine) -> np.ndarray:
        first = asyncio.ensure_future(logits(engine, images[:1]))
        gone = asyncio.ensure_future(logits(engine, images[1:2]))
        last = asyncio.ensure_future(logits(engine, images[2:3]))
        while engine.stats().running == 0:
            await asyncio.sleep(0.001)
        gone.cancel()
        await asyncio.sleep(0)
        assert engine.stats().waiting == 1  # the cancelled one no longer counts
        gated.gate.set()
        await first
        return await last

    np.testing.assert_allclose(served(engine, body), direct(images[2:3]), rtol=0, atol=ROWS_TOLERANCE)
    assert engine.runs == 2  # the cancelled request never ran


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {"input": np.zeros((1, 3, 16, 16), np.float32)},
            "input input: shape [1, 3, 16, 16], the model takes [-1, 3, 32, 32]",
        ),
        ({"input": np.zeros((1, *IMAGE), np.float64)}, "input input: datatype FP64, the model takes FP32"),
        (
            {"image": np.zeros((1, *IMAGE), np.float32)},
            "missing input input; unknown input image (the model takes input)",
        ),
        ({"input": np.zeros((9, *IMAGE), np.float32)}, "a batch of 9: this model runs 1 to 8 at a time"),
        ({"input": np.zeros((0, *IMAGE), np.float32)}, "a batch of 0: this model runs 1 to 8 at a time"),
        (
            {"input": np.zeros(IMAGE, np.float32)},
            "input input: shape [3, 32, 32], the model takes [-1, 3, 32, 32]",
        ),
    ],
)
def test_bad_inputs_are_refused_naming_what_is_wrong(inputs, message):
    async def body(engine: ClassicEngine) -> str:
        with pytest.raises(BadTensors) as refused:
            await engine.infer(inputs, RequestTiming())
        return str(refused.value)

    engine = ort_engine(CLASSIFIER_MODEL_DIR, max_batch_size=8)
    assert served(engine, body) == message
    assert engine.runs == 0


def test_generate_refuses_and_no_tokens_are_counted():
    async def body(engine: ClassicEngine) -> str:
        with pytest.raises(GenerationUnsupported) as refused:
            async for _ in engine.generate(GenerationRequest("hi", 1, 4)):
                pass
        return str(refused.value)

    engine = ort_engine(CLASSIFIER_MODEL_DIR)
    assert served(engine, body) == "the model `classifier` is a classic model: it generates no text"
    assert engine.count_tokens("some text") == 0
