"""A transcription's recording (`workload.audio`): generated to its drawn length, or a folder's
file, attached as the call's audio; its length recorded."""

from __future__ import annotations

from collections.abc import Mapping

from loadgen.collect.field_doc import ExtraValue
from loadgen.features.audio.clips import folder_clip, generated_clip
from loadgen.features.audio.key import SPEC
from loadgen.features.slice import Asking, Attached
from loadgen.scenario.workload import Workload
from loadgen.wire.answer import StreamResult


class AudioAttachment:
    """The slice's part of a request (loadgen.features.slice.Attaches)."""

    def senders(self, classes: Mapping[str, Workload]) -> frozenset[str]:
        return frozenset(name for name, workload in classes.items() if SPEC.of(workload) is not None)

    def attach(self, workload: Workload, asking: Asking) -> Attached:
        spec = SPEC.of(workload)
        assert spec is not None  # senders: only classes with the key
        if spec.folder is not None:
            clip, seconds = folder_clip(spec.folder, asking.request_id)
        else:
            clip = generated_clip(asking.drawn, spec.sample_rate, asking.request_id)
            seconds = asking.drawn / 1000
        return Attached(audio=clip, audio_s=seconds)

    def fields(
        self, attached: Attached, body_bytes: int, answer: StreamResult, streamed: bool
    ) -> Mapping[str, ExtraValue]:
        return {"audio_seconds": attached.audio_s}


AUDIO_ATTACHMENT = AudioAttachment()
