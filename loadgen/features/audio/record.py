"""The fields a transcription request adds to its record (a line of requests.jsonl)."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import FieldDoc

AUDIO_FIELDS: Mapping[str, FieldDoc] = {
    "audio_seconds": FieldDoc(
        "number",
        "the length in seconds of the recording it uploaded "
        "([`workload.audio`](scenario.md#transcriptions)); null where not known (a folder's file "
        "other than WAV)",
        feature="audio",
        sparse=True,
        column="number",
    ),
}
