"""The third count of output tokens: each answer's text re-tokenized after the run, never on the
request path (the client's CPU per request stays as it was: bench/client_ab.py guards it).

With `workload.tokenizer` a record carries its answer's text (`answer_text`); the report's pass
over the records offers each chunk here (loadgen.report.scan's hook, or a search's records in
memory), and the tokenizer counts the texts a batch at a time. Its count is compared with the
server's usage and the stream's chunks as loadgen.collect.token_stats compares those two. Only
measured, successful answers are counted, and only where the answer began with the first token:
where reasoning or a tool call came first the text holds the answer alone, while usage and the
chunks count all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from loadgen.collect.itl_codec import record_itl_array
from loadgen.collect.metrics_parts import TokenCountsPart
from loadgen.collect.request_record import RecordLine, answer_after_fields
from loadgen.collect.token_stats import add_agreement, agreement, merge_agreements
from loadgen.collect.windows import PhaseWindow
from loadgen.inputs.datasets import token_counter

USAGE_VS_TOKENIZER, CHUNKS_VS_TOKENIZER = "output_usage_vs_tokenizer", "output_chunks_vs_tokenizer"
Counter = Callable[[list[str]], list[int]]


class Retokenizer:
    """Counts the answers of the classes that name a tokenizer (`tokenizers`: class → its path)."""

    def __init__(
        self,
        tokenizers: Mapping[str, str],
        windows: Sequence[PhaseWindow],
        load: Callable[[str], Counter] | None = None,
    ) -> None:
        self._paths = dict(tokenizers)
        self._phases = {window.index for window in windows}
        self._load = load or _load
        self._counters: dict[str, Counter] = {}
        self.counts: dict[str, int] = {}
        self.counted = 0

    def offer(self, chunk: Sequence[RecordLine]) -> None:
        """Count the chunk's answers (a ChunkHook)."""
        by_path: dict[str, list[RecordLine]] = {}
        later = answer_after_fields()
        for data in chunk:
            path = self._paths.get(data.get("class", "default"))
            if path is None or not self._counted(data, later):
                continue
            by_path.setdefault(path, []).append(data)
        for path, lines in by_path.items():
            counter = self._counters.get(path)
            if counter is None:
                counter = self._counters[path] = self._load(path)
            self._compare(lines, counter([str(data["answer_text"]) for data in lines]))

    def offer_records(self, records: Iterable[RecordLine]) -> None:
        """Records in memory (a search's), as dicts: RequestRecord.to_dict."""
        self.offer(list(records))

    def _counted(self, data: RecordLine, later: list[str]) -> bool:
        return (
            data.get("status", "ok") == "ok"
            and not data.get("warmup")
            and data.get("phase") in self._phases
            and isinstance(data.get("answer_text"), str)
            and not any(data.get(name) for name in later)
        )

    def _compare(self, lines: list[RecordLine], tokens: list[int]) -> None:
        self.counted += len(lines)
        usage_rows = [i for i, data in enumerate(lines) if data.get("tokens_source") == "usage"]
        told = np.array([int(lines[i].get("output_tokens") or 0) for i in usage_rows], dtype=np.int64)
        counted = np.array(tokens, dtype=np.int64)
        mine: dict[str, int] = {}
        add_agreement(mine, USAGE_VS_TOKENIZER, told, counted[usage_rows])
        streamed: list[int] = []
        chunks: list[int] = []
        for i, data in enumerate(lines):
            gaps = record_itl_array(data)
            if data.get("first_token_s") is not None and gaps is not None:  # a summary keeps no count
                streamed.append(i)
                chunks.append(gaps.size + 1)
        add_agreement(mine, CHUNKS_VS_TOKENIZER, np.array(chunks, dtype=np.int64), counted[streamed])
        merge_agreements(self.counts, mine)

    def part(self) -> TokenCountsPart:
        """The tokenizer's keys of `metrics.token_counts` (the others None: the statistics' own)."""
        return {
            "output_usage_vs_chunks": None,
            "prompt_asked_vs_usage": None,
            "output_usage_vs_tokenizer": agreement(self.counts, USAGE_VS_TOKENIZER),
            "output_chunks_vs_tokenizer": agreement(self.counts, CHUNKS_VS_TOKENIZER),
            "tokenizer_counted": self.counted,
        }


def _load(path: str) -> Counter:
    return token_counter(Path(path))
