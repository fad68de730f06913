"""A run's records file: `requests.jsonl`, or `requests.jsonl.zst` with `report.compress: zstd`.

Writing (ZstdLineFile): one zstd frame for the whole run, each record compressed and flushed as
its own block (zstd's FLUSH_BLOCK) the moment it completes, so the file always ends in whole
records, as requests.jsonl does: a crash loses at most the record being written. The frame keeps
its window, so each record still compresses against those before it. Disk failures are handled as
for requests.jsonl (loadgen.rundir.disk.LineFile: never raises, the first failure reported once).

Reading (RecordLines): the lines of either file. A compressed file cut by a crash is decoded as
far as it goes and never raises: the lines before the cut come out, and `torn` says whether a
record was cut (the frame stops inside a block rather than between two). `records_file(run_dir)`
is the one place that knows which of the two a run folder has.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import zstandard

from loadgen.rundir.disk import FailureHandler, LineFile

RECORDS_FILE = "requests.jsonl"
ZSTD_SUFFIX = ".zst"
# On the hot path: with a flush per record, level 1 compressed 64-token records to 206 B in 6.4 µs,
# level 3 to 202 B in 8.1 µs (bench/record_formats.py measures the writer).
ZSTD_LEVEL = 1
# Compressed bytes per decompress call: damaged data loses what this much before it decodes to
# (the call raises), ~300 records of 64 tokens; more would not read faster.
_READ_SIZE = 1 << 16
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def records_path(run_dir: Path, compress: str = "none") -> Path:
    """Where a run writes its records: requests.jsonl, or requests.jsonl.zst for `zstd`."""
    return run_dir / (RECORDS_FILE + ZSTD_SUFFIX if compress == "zstd" else RECORDS_FILE)


def records_file(run_dir: Path) -> Path:
    """The records file a run folder has: requests.jsonl, else requests.jsonl.zst; when it has
    neither, the path of requests.jsonl (which does not exist: callers test `.exists()`)."""
    plain = run_dir / RECORDS_FILE
    if plain.exists():
        return plain
    compressed = run_dir / (RECORDS_FILE + ZSTD_SUFFIX)
    return compressed if compressed.exists() else plain


def is_compressed(path: Path) -> bool:
    return path.name.endswith(ZSTD_SUFFIX)


def line_file(path: Path, on_failure: FailureHandler | None = None) -> LineFile:
    """The writer for `path`: compressed when its name ends in .zst."""
    return ZstdLineFile(path, on_failure) if is_compressed(path) else LineFile(path, on_failure)


class ZstdLineFile(LineFile):
    """A LineFile whose lines go into one zstd frame, one flushed block per line.

    A block is written whole or cut back off (LineFile), so after any failure the file is a valid
    frame cut between two records. `close()` ends the frame (with a checksum of everything in it).
    """

    def __init__(self, path: Path, on_failure: FailureHandler | None = None, level: int = ZSTD_LEVEL) -> None:
        super().__init__(path, on_failure)
        compressor = zstandard.ZstdCompressor(level=level, write_checksum=True)
        self._zstd = compressor.compressobj()

    def append_bytes(self, data: bytes) -> bool:
        if self.closed:  # failed: do not compress what cannot be written
            return super().append_bytes(data)
        block = self._zstd.compress(data) + self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        return super().append_bytes(block)

    def close(self) -> None:
        if not self.closed:
            self._write_whole(self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
        super().close()


class RecordLines:
    """The lines of a records file of either kind, read once by iterating.

    Every line ends in b"\\n" but a last one cut by a crash. After the loop, for a compressed
    file: `torn` when a record was cut inside a compressed block (it never comes out as a line),
    `damage` when the data stopped decoding (the reason; nothing after it can be read).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn = False
        self.damage: str | None = None

    def __iter__(self) -> Iterator[bytes]:
        with self.path.open("rb") as handle:
            if not is_compressed(self.path):
                yield from handle
                return
            carry = b""
            for text in self._decoded(handle):
                lines = (carry + text if carry else text).splitlines(keepends=True)
                carry = lines.pop() if not lines[-1].endswith(b"\n") else b""
                yield from lines
            if carry:  # a stored (uncompressed) block comes out as far as it was written
                yield carry

    def _decoded(self, handle: BinaryIO) -> Iterator[bytes]:
        """The decompressed bytes, frame after frame, up to the file's end or the first damage."""
        decoder = zstandard.ZstdDecompressor().decompressobj()
        offset = 0  # of the next chunk in the file
        frame_start, in_frame = 0, False
        while chunk := handle.read(_READ_SIZE):
            start, offset = offset, offset + len(chunk)
            while chunk:
                try:
                    text = decoder.decompress(chunk)
                except zstandard.ZstdError as exc:
                    self.damage = str(exc)
                    return
                in_frame = True
                if text:
                    yield text
                if not decoder.eof:
                    break
                # A frame ended inside this chunk (only cat-ed files hold more than one).
                rest = decoder.unused_data
                start = frame_start = start + len(chunk) - len(rest)
                decoder, in_frame, chunk = zstandard.ZstdDecompressor().decompressobj(), False, rest
        if in_frame:  # the frame never ended: the writer was stopped (a crash, a kill)
            self.torn = not _ends_between_blocks(handle, frame_start)


def _ends_between_blocks(handle: BinaryIO, start: int) -> bool:
    """Whether the unfinished zstd frame at `start` stops right after a whole block, that is
    between two records; False when it stops inside a block (or its header), cutting one.

    Walks the frame's block headers (RFC 8878, 3.1.1): only for a file left by a crash.
    """
    handle.seek(0, 2)
    size = handle.tell()
    if size - start < 6:
        return False
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        if view[start : start + 4] != _ZSTD_MAGIC:
            return False
        descriptor = view[start + 4]
        single_segment = (descriptor >> 5) & 1
        content_size = (single_segment, 2, 4, 8)[descriptor >> 6]
        position = start + 5 + (1 - single_segment) + (0, 1, 2, 4)[descriptor & 3] + content_size
        blocks = 0  # the header goes out with the first record's block: alone, it is a cut
        while position + 3 <= size:
            header = int.from_bytes(view[position : position + 3], "little")
            block_type = (header >> 1) & 3
            position += 3 + (1 if block_type == 1 else header >> 3)  # RLE: one byte repeated
            blocks += 1
            if header & 1:  # the frame's last block: every record is in, the checksum was cut
                return position <= size
        return blocks > 0 and position == size
