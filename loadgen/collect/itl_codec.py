"""Per-token gaps on disk: whole microseconds packed into one short string, `itl_us`.

In memory a record's gaps are `RequestRecord.itl_ms`: ms rounded to 3 decimals (summarize_itl),
so every gap is a whole number of µs. As a JSON float list they were most of a requests.jsonl line
(~7 bytes a gap) and, for long streams, most of its parse time. On disk they are `itl_us`: base64
of the gaps in µs as little-endian uint16; a gap of 65,535 µs or more (a stall) is 65535 there and
its exact value follows, in order, after a "." as base64 of little-endian uint64. Lossless for any
gap at the 1 µs resolution; decoded straight into numpy. A list not on the µs grid (never written by the load
generator; a hand-made record) stays a float list under `itl_ms`, as do ITL summaries (a dict,
over ITL_LIST_LIMIT gaps). Files written before this carry `itl_ms` lists: read as before.

    raw = base64.b64decode(packed.partition(".")[0])   # the docs' reader, in a few lines
    gaps_us = numpy.frombuffer(raw, "<u2")               # 65535: see the uint64 after the "."
"""

from __future__ import annotations

import binascii
import sys
from array import array
from collections.abc import Mapping
from typing import Any

import numpy as np

ITL_KEY = "itl_us"  # the packed gaps (a string)
LEGACY_KEY = "itl_ms"  # a float list in ms (older files, off-grid gaps) or an ITL summary (a dict)
OVERFLOW = 65535  # gaps of this many µs or more are stored in full after the "."
_SEPARATOR = "."
_MAX_US = 2.0**53  # beyond it µs are no longer exact in a float64 (285 years)
_U16, _U64 = np.dtype("<u2"), np.dtype("<u8")


def pack_gaps(gaps_ms: list[float]) -> str | None:
    """The `itl_us` string of gaps in ms; None when a gap is not a whole, non-negative number of
    µs (the caller then keeps the float list: nothing is ever rounded here)."""
    try:
        gaps = np.array(gaps_ms, dtype=np.float64)
    except (TypeError, ValueError):  # not numbers: written as they are, never raised on the hot path
        return None
    if gaps.ndim != 1:
        return None
    micros = np.rint(gaps * 1000.0)
    exact = micros / 1000.0 == gaps  # dividing back gives the very same floats; NaN never does
    if (exact & (micros >= 0) & (micros < OVERFLOW)).all():  # the usual record: one test, no stall
        return _b64(micros.astype(_U16))
    if not (exact.all() and micros.min() >= 0 and micros.max() < _MAX_US):  # inf fails the bound
        return None
    stalls = micros >= OVERFLOW
    return _b64(np.minimum(micros, OVERFLOW).astype(_U16)) + _SEPARATOR + _b64(micros[stalls].astype(_U64))


def pack_micros(micros: list[int]) -> str | None:
    """The `itl_us` string of gaps already in whole µs (a stream's, records.stream_gaps), without
    numpy's dozen small calls: the same string pack_gaps makes of them in ms. None when one is
    negative or a stall (pack_gaps then handles the ms)."""
    if OVERFLOW in micros:
        return None
    try:
        values = array("H", micros)
    except OverflowError:  # negative, or past 65535
        return None
    if sys.byteorder != "little":
        values.byteswap()
    return binascii.b2a_base64(values.tobytes(), newline=False).decode("ascii")


def itl_array(value: object) -> np.ndarray | None:
    """A record's gaps in ms as float64, from the on-disk value of either form: the `itl_us`
    string or an `itl_ms` list; None for an ITL summary (a dict), empty for no value.
    Raises ValueError on a damaged string."""
    if isinstance(value, str):
        if _SEPARATOR not in value:  # no stall: one division, straight from the bytes
            return np.frombuffer(binascii.a2b_base64(value), dtype=_U16) / 1000.0
        head, _, tail = value.partition(_SEPARATOR)
        micros = np.frombuffer(binascii.a2b_base64(head), dtype=_U16).astype(np.float64)
        stalls = micros == OVERFLOW
        full = np.frombuffer(binascii.a2b_base64(tail), dtype=_U64)
        if full.size != np.count_nonzero(stalls):
            raise ValueError(f"{ITL_KEY}: the stalls after '.' do not match the gaps")
        micros[stalls] = full
        micros /= 1000.0
        return micros
    if isinstance(value, dict):
        return None
    if value is None:
        return np.empty(0, dtype=np.float64)
    return np.array(value, dtype=np.float64)


def record_itl_array(data: Mapping[str, Any]) -> np.ndarray | None:
    """The gaps (ms) of a record dict as read from a file, whichever key holds them; None for a
    summary. What a reader of raw dicts (iter_record_dicts) calls instead of data["itl_ms"]."""
    value = data.get(ITL_KEY)
    return itl_array(data.get(LEGACY_KEY) if value is None else value)


def unpack_gaps(packed: str) -> list[float]:
    """The in-memory form of an `itl_us` string: RequestRecord.itl_ms, a list of ms."""
    if not isinstance(packed, str):
        raise TypeError(f"{ITL_KEY} must be a string")
    gaps = itl_array(packed)
    assert gaps is not None  # a string is never a summary
    result: list[float] = gaps.tolist()
    return result


def _b64(values: np.ndarray) -> str:
    return binascii.b2a_base64(values.tobytes(), newline=False).decode("ascii")
