"""`main()` plumbing shared by the model servers (`python -m servers.ort`, `servers.pytorch`).

Arguments, a fail-fast check of the model (a clear line in server.log and exit 2, instead of a
server that never becomes ready), then the engine behind the HTTP front: the batching engine
for an LLM's directory, the dynamic batcher (servers/engines/classic.py) for a classic model.
It joins `servers.engines` to `servers.http`, so it lives above both, with the servers it runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from kernel.units import parse_duration
from servers.engines.decoder import Decoder
from servers.engines.modeldir import BUNDLED_MODEL, model_dir_problem

if TYPE_CHECKING:
    from servers.engines.batching import BatchingEngine
    from servers.engines.classic import ClassicEngine, Runner

P = ParamSpec("P")
T = TypeVar("T")
TOKENIZER_FILE = "tokenizer.json"


def _duration(text: str) -> float:
    try:
        value: float | str = float(text)
    except ValueError:
        value = text
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def model_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--model", type=Path, default=BUNDLED_MODEL, help="model directory (%(default)s)")
    parser.add_argument("--served-model-name", default=None, help="model id in the API (the directory name)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (%(default)s)")
    parser.add_argument(
        "--max-batch-size", type=_at_least_one, default=8, help="requests decoded together (%(default)s)"
    )
    parser.add_argument(
        "--max-wait", type=_duration, default=0.005, help="idle wait to fill a batch, e.g. 5ms (5ms)"
    )
    parser.add_argument("--threads", type=_at_least_one, default=1, help="runtime CPU threads (%(default)s)")
    parser.add_argument(
        "--record-timings",
        action="store_true",
        help="record when each chunk was written; GET /debug/timings returns percentiles (benchmarks)",
    )
    return parser


def serve_model(
    args: argparse.Namespace,
    needs: Sequence[str],
    make_decoder: Callable[[Path], Decoder[Any]],
) -> int:
    """Check the directory, then serve it until signalled; the process exit code."""
    model_dir: Path = args.model.expanduser().resolve()
    problem = model_dir_problem(model_dir, [TOKENIZER_FILE, *needs])
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr, flush=True)
        return 2
    # Runtimes load only here, in the server process.
    from servers.engines.batching import BatchingEngine
    from servers.engines.tokenizer import TextTokenizer

    guard = _FailFast(model_dir)

    def load() -> tuple[Decoder[Any], TextTokenizer]:
        return make_decoder(model_dir), TextTokenizer.from_dir(model_dir)

    engine = BatchingEngine(
        args.served_model_name or model_dir.name,
        guard(load),
        max_batch_size=args.max_batch_size,
        max_wait=args.max_wait,
    )
    return _serve(engine, args, guard)


def serve_classic(args: argparse.Namespace, make_runner: Callable[[Path], Runner]) -> int:
    """Serve a classic model (a `.onnx` or TorchScript file, or a directory holding one) with
    dynamic batching until signalled; the process exit code."""
    path: Path = args.model.expanduser().resolve()
    if not path.exists():
        print(f"error: model {path} does not exist", file=sys.stderr, flush=True)
        return 2
    from servers.engines.classic import ClassicEngine

    guard = _FailFast(path)
    engine = ClassicEngine.of(
        path,
        guard(make_runner),
        model_name=args.served_model_name,
        max_batch_size=args.max_batch_size,
        max_wait=args.max_wait,
    )
    return _serve(engine, args, guard)


class _FailFast:
    """A load that fails stops the server at once, with a clear line in server.log, rather than
    leaving it answering 503 until the adapter's startup timeout runs out."""

    def __init__(self, model: Path) -> None:
        self.model = model
        self.serving = True

    def __call__(self, load: Callable[P, T]) -> Callable[P, T]:
        def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return load(*args, **kwargs)
            except Exception as exc:
                if self.serving:
                    print(f"error: cannot load the model in {self.model}: {exc}", file=sys.stderr, flush=True)
                    os.kill(os.getpid(), signal.SIGTERM)
                raise

        return guarded


def _serve(engine: BatchingEngine | ClassicEngine, args: argparse.Namespace, guard: _FailFast) -> int:
    from servers.http import build_app, run
    from servers.http.serve import exit_now

    code = run(build_app(engine, record_timings=args.record_timings), args.host, args.port)
    guard.serving = False
    if engine.load_error is not None:
        code = 1
    if not engine.ready():
        # Stopped (or failed to listen) while the model was still loading: exit now instead of
        # joining the loader thread, which can take as long as the load itself.
        exit_now(code)
    return code
