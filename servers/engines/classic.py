"""Dynamic batching for a classic model (issue 42): the engine behind the v2 front for the
ONNX Runtime and PyTorch runners (classic_ort.py, classic_torch.py).

Requests queue as they arrive. When the oldest has waited `max_wait`, or the queue holds
`max_batch_size` rows, the requests at the head (those of the head's shape, up to
`max_batch_size` rows together) are concatenated along the batch dimension and run in one call
on the worker thread (ONNX Runtime and torch release the GIL there, so the event loop keeps
answering HTTP); each request gets its own rows of every output back. A request that arrives
while a batch runs waits for the next one; if the oldest has by then waited `max_wait`
already, that next batch starts at once. As Triton's dynamic batcher, with max_queue_delay.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections import Counter, deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from servers.engines.engine import (
    Engine,
    EngineStats,
    GenerationRequest,
    GenerationUnsupported,
    RequestTiming,
)
from servers.engines.tensor_io import batch_rows, datatype_name
from servers.engines.tensors import TensorModel, TensorSpec

Arrays = dict[str, np.ndarray]

DEFAULT_MAX_WAIT = 0.002  # seconds the oldest request waits for company


class Runner(Protocol):
    """A loaded classic model: what it takes and gives, and one call on a batch."""

    platform: str  # as Triton names it: onnxruntime_onnx, pytorch_libtorch
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def run(self, inputs: Mapping[str, np.ndarray]) -> Arrays:
        """The outputs by name, each with the inputs' batch first (called on the worker thread)."""
        ...


@dataclass(eq=False)
class _Pending:
    inputs: Mapping[str, np.ndarray]
    rows: int
    arrived: float  # the loop's clock
    timing: RequestTiming
    done: asyncio.Future[Arrays] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def shape_key(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Requests concatenate only if every input agrees beyond the batch dimension."""
        return tuple((name, tuple(array.shape[1:])) for name, array in sorted(self.inputs.items()))


class ClassicEngine(Engine):
    """One classic model behind a dynamic batcher; `load` runs on the worker thread at start()."""

    generates_text = False

    def __init__(
        self,
        model_name: str,
        load: Callable[[], Runner],
        *,
        max_batch_size: int = 8,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        super().__init__(model_name)
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if max_wait < 0:
            raise ValueError("max_wait must not be negative")
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait
        self._load = load
        self._runner: Runner | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="classic")
        self._waiting: deque[_Pending] = deque()
        self._in_flight: Sequence[_Pending] = ()  # the batch on the worker now
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self.load_error: Exception | None = None
        self.runs = 0  # model calls made
        self.run_rows: Counter[int] = Counter()  # model calls by their batch (rows)

    @classmethod
    def of(
        cls,
        path: Path,
        make_runner: Callable[[Path], Runner],
        *,
        model_name: str | None = None,
        max_batch_size: int = 8,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> ClassicEngine:
        """The engine for the model file (or model directory) `path`, which `make_runner(path)`
        loads at start(); named after the path by default."""
        name = model_name or served_name(path)
        return cls(name, lambda: make_runner(path), max_batch_size=max_batch_size, max_wait=max_wait)

    # --- Engine -------------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            runner = await asyncio.get_running_loop().run_in_executor(self._worker, self._load)
        except Exception as exc:
            self.load_error = exc
            raise
        self._runner = runner
        self.tensor_model = TensorModel(
            self.model_name, runner.platform, runner.inputs, runner.outputs, self.max_batch_size
        )
        self._loop_task = asyncio.create_task(self._schedule())

    async def close(self) -> None:
        unanswered = [*self._in_flight, *self._waiting]  # before the cancelled batcher forgets its batch
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        self._fail([*unanswered, *self._waiting], RuntimeError("the server is shutting down"))
        self._waiting.clear()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def ready(self) -> bool:
        return self._loop_task is not None

    def count_tokens(self, text: str) -> int:
        return 0  # no tokenizer: a classic model reads tensors, not text

    def stats(self) -> EngineStats:
        waiting = sum(1 for p in self._waiting if not p.done.done())
        running = sum(1 for p in self._in_flight if not p.done.done())
        return EngineStats(running=running, waiting=waiting, slots=self.max_batch_size)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[str, None]:
        raise GenerationUnsupported(f"the model `{self.model_name}` is a classic model: it generates no text")
        yield ""  # pragma: no cover - makes this an async generator, as the interface wants

    async def infer(self, inputs: Mapping[str, np.ndarray], timing: RequestTiming) -> dict[str, np.ndarray]:
        """The model's outputs for one request's batch, run together with whatever else arrives
        within `max_wait`; BadTensors if the inputs do not fit the model."""
        runner = self._loaded
        rows = batch_rows(runner.inputs, inputs, self.max_batch_size)
        pending = _Pending(inputs, rows, asyncio.get_running_loop().time(), timing)
        self._waiting.append(pending)
        self._wake.set()
        # Cancelling the caller (a client gone) cancels the future: the batcher skips it.
        return await pending.done

    # --- the batcher --------------------------------------------------------------------------

    @property
    def _loaded(self) -> Runner:
        if self._runner is None:
            raise RuntimeError("the model is not loaded yet")
        return self._runner

    async def _schedule(self) -> None:
        while True:
            self._drop_abandoned()
            if not self._waiting:
                self._wake.clear()
                await self._wake.wait()
                continue
            await self._fill_window()
            batch = self._take_batch()
            if batch:
                await self._run(batch)

    async def _fill_window(self) -> None:
        """Let the oldest request wait up to `max_wait` (from its arrival) for a full batch."""
        loop = asyncio.get_running_loop()
        deadline = self._waiting[0].arrived + self.max_wait
        while self._queued_rows() < self.max_batch_size and (left := deadline - loop.time()) > 0:
            self._wake.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), left)
            self._drop_abandoned()
            if not self._waiting:
                return

    def _queued_rows(self) -> int:
        return sum(p.rows for p in self._waiting)

    def _drop_abandoned(self) -> None:
        if any(p.done.done() for p in self._waiting):
            self._waiting = deque(p for p in self._waiting if not p.done.done())

    def _take_batch(self) -> list[_Pending]:
        """The head and the requests behind it, in arrival order (none overtakes another), while
        they fit in `max_batch_size` rows and share the head's shape."""
        if not self._waiting:
            return []
        key = self._waiting[0].shape_key()
        batch = [self._waiting.popleft()]
        rows = batch[0].rows
        while self._waiting and (head := self._waiting[0]).shape_key() == key:
            if rows + head.rows > self.max_batch_size:
                break
            batch.append(self._waiting.popleft())
            rows += head.rows
        now = asyncio.get_running_loop().time()
        for pending in batch:
            pending.timing.queue_wait_s = now - pending.arrived
        return batch

    async def _run(self, batch: Sequence[_Pending]) -> None:
        runner = self._loaded
        names = [spec.name for spec in runner.inputs]
        rows = [p.rows for p in batch]
        self._in_flight = batch
        self.runs += 1
        self.run_rows[sum(rows)] += 1

        def work() -> Arrays:
            feed = {name: _joined([p.inputs[name] for p in batch]) for name in names}
            return _checked(runner, runner.run(feed), sum(rows))

        try:
            outputs = await asyncio.get_running_loop().run_in_executor(self._worker, work)
        except Exception as exc:  # a runtime error fails the batch, not the server
            traceback.print_exc(file=sys.stderr)
            self._fail(batch, exc)
            return
        finally:
            self._in_flight = ()
        start = 0
        for pending, count in zip(batch, rows, strict=True):
            if not pending.done.done():
                pending.done.set_result({name: out[start : start + count] for name, out in outputs.items()})
            start += count

    @staticmethod
    def _fail(batch: Sequence[_Pending], exc: BaseException) -> None:
        for pending in batch:
            if not pending.done.done():
                pending.done.set_exception(exc)


def _joined(arrays: Sequence[np.ndarray]) -> np.ndarray:
    # ONNX Runtime and torch.from_numpy want C-contiguous rows; concatenate makes them so.
    return np.ascontiguousarray(arrays[0]) if len(arrays) == 1 else np.concatenate(arrays, axis=0)


def _checked(runner: Runner, outputs: Arrays, rows: int) -> Arrays:
    """The outputs the model declares, each of the batch's rows: a model that answers otherwise
    fails loudly here, not as a wrong answer split among the requests."""
    checked: Arrays = {}
    for spec in runner.outputs:
        array = outputs.get(spec.name)
        if array is None:
            raise RuntimeError(f"the model gave no output {spec.name}")
        if array.ndim == 0 or array.shape[0] != rows:
            raise RuntimeError(f"output {spec.name}: shape {list(array.shape)} for a batch of {rows}")
        if array.dtype != spec.dtype:
            raise RuntimeError(
                f"output {spec.name}: datatype {datatype_name(array.dtype)}, not {spec.datatype}"
            )
        checked[spec.name] = array
    return checked


def warm_up(runner: Runner) -> None:
    """One call on a batch of one (zeros; 1 for every dimension the model leaves open), which
    each runner makes as it loads (on the loading thread): the first request does not pay for
    ONNX Runtime's or torch's first-call setup, and a model whose outputs are not what its
    metadata says fails at load."""
    feed = {
        spec.name: np.zeros(tuple(1 if d == -1 else d for d in spec.shape), dtype=spec.dtype)
        for spec in runner.inputs
    }
    try:
        _checked(runner, runner.run(feed), 1)
    except Exception as exc:
        raise ValueError(f"the model does not run on its declared inputs: {exc}") from exc


def model_file(path: Path, name: str) -> Path:
    """`path` itself if a file, else the file `name` in that directory (a model directory)."""
    return path / name if path.is_dir() else path


def served_name(path: Path) -> str:
    """The model's name in the API by default: its directory's name, or its file's stem."""
    return path.name if path.is_dir() else path.stem
