"""What does one streamed token cost between its receive and its record, counted in instructions?

The client-cost bench (client_cost.py) meters whole runs, and this VM's CPU time wanders by
10-30% between sittings. This one replays a 64-token chat stream through the code each receive
runs (the HTTP parser, the line reader, the SSE parser: `_LineReader.received` and what it calls),
one receive a token as the stream sweeper hands them
over, in this process, warm. The socket, the kernel and the event loop are not in it.

    python bench/token_path.py                     # µs a token (best of 5 rounds)
    python bench/token_path.py --instructions      # and instructions a token (valgrind)
    python bench/token_path.py --instructions --root /tmp/base-tree   # another checkout's code

With `--instructions` it runs itself twice under callgrind (different lengths) and divides the
difference: the count does not depend on what else the machine is doing, so two trees compare on
any day (`--root`: another checkout's sources, from issue 26's sweeper on, whose line reader
takes receives). A token's figure is the whole stream's over its 64 tokens: the role, finish and
[DONE] chunks are in it, the request's own work (sending, the record) is not.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOKENS = 64


def _events() -> list[bytes]:
    """One HTTP chunk a receive, as a chat server streams them: the role, 64 words, the finish
    with usage, [DONE]."""
    import orjson

    def chunk(delta: dict[str, Any], **more: Any) -> bytes:
        body = {"id": "chatcmpl-5f3a", "object": "chat.completion.chunk", "created": 1764200000}
        body |= {"model": "tiny-llama", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        event = b"data: " + orjson.dumps(body | more) + b"\n\n"
        return b"%x\r\n" % len(event) + event + b"\r\n"

    words = [chunk({"content": f" word{i}"}) for i in range(TOKENS)]
    usage = {"prompt_tokens": 128, "completion_tokens": TOKENS, "total_tokens": 128 + TOKENS}
    done = b"data: [DONE]\n\n"
    last = b"%x\r\n" % len(done) + done + b"\r\n0\r\n\r\n"  # and the body's end
    return [chunk({"role": "assistant", "content": ""}), *words, chunk({}, usage=usage), last]


def _take_for(parser: Any) -> Any:
    """What exchange_outcome.read_stream hands the line reader: the parser's feed_lines, or in an
    older tree (--root) its take, a call to feed a line."""
    if hasattr(parser, "feed_lines"):
        return parser.feed_lines
    result, feed = parser.result, parser.feed

    def take(lines: list[bytearray], arrived_ns: int) -> bool:
        for line in lines:
            if len(line) > 1:
                feed(line, arrived_ns)
        return bool(result.error is not None)

    return take


def _replay(streams: int) -> float:
    """Replay `streams` whole streams; the seconds they took."""
    from geventhttpclient.response import HTTPResponse

    from loadgen.inputs.line_reader import _LineReader
    from loadgen.wire.openai_stream import StreamParser

    events = _events()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    began = time.perf_counter()
    for _ in range(streams):
        response = HTTPResponse("POST")
        response.block_size = 4096  # type: ignore[attr-defined]  # a socket response has one
        response.feed(head)
        parser = StreamParser()
        result = parser.result
        reader = _LineReader(response, 1 << 20, _take_for(parser))
        for arrived_ns, data in enumerate(events):
            reader.received(data, arrived_ns)
        if len(result.chunk_ns) != TOKENS or not result.done or result.output_tokens != TOKENS:
            raise RuntimeError(f"the replayed stream was misread: {result}")
    return time.perf_counter() - began


def _instructions(root: Path, streams: int) -> int:
    """Instructions callgrind counts for this script replaying `streams` streams."""
    script = Path(__file__).resolve()
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    argv += [sys.executable, str(script), "--replay", str(streams), "--root", str(root)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-500:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--instructions", action="store_true", help="count instructions (valgrind)")
    parser.add_argument("--replay", type=int, help=argparse.SUPPRESS)  # the callgrind child
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    if args.replay is not None:
        _replay(args.replay)
        return 0
    print(f"loadgen from {args.root.resolve()}; a {TOKENS}-token stream, one receive a token")
    rounds = [_replay(500) / (500 * TOKENS) for _ in range(5)]
    print(f"  {1e6 * min(rounds):.2f} µs a token (best of 5 rounds of 500 streams; warm, in-process)")
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("  valgrind is not installed: no instruction count")
            return 1
        short, long = 50, 250
        counted = _instructions(args.root, long) - _instructions(args.root, short)
        print(f"  {counted / ((long - short) * TOKENS):,.0f} instructions a token (callgrind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
