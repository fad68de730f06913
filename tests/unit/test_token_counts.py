"""metrics.token_counts from records: usage against the stream's chunks (the gaps and one), the
prompt asked against the server's, and the tokenizer's recount of the answers' text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.collect.records import RequestRecord
from loadgen.collect.retokenize import Retokenizer
from loadgen.collect.stats import run_stats
from loadgen.collect.windows import PhaseWindow

WINDOW = PhaseWindow(index=0, kind="constant", target_rate=10.0, start_s=0.0, end_s=10.0)
TOKENIZER = Path(__file__).resolve().parents[2] / "servers" / "models" / "tiny"


def streamed(i: int, usage: int, chunks: int, **kw: Any) -> RequestRecord:
    return RequestRecord(
        id=i,
        phase=0,
        scheduled_s=i * 0.1,
        sent_s=i * 0.1,
        first_token_s=i * 0.1 + 0.05,
        done_s=i * 0.1 + 0.5,
        output_tokens=usage,
        tokens_source="usage",
        itl_ms=[1.0] * (chunks - 1),
        **kw,
    )


def test_usage_against_chunks_share_and_differences() -> None:
    records = [streamed(0, 10, 10), streamed(1, 12, 10), streamed(2, 10, 10), streamed(3, 9, 10)]
    records.append(RequestRecord(id=4, phase=0, scheduled_s=0.4, output_tokens=7))  # no usage: left out
    counts = run_stats(records, [WINDOW]).overall().metrics([WINDOW])["token_counts"]
    pair = counts["output_usage_vs_chunks"]
    assert pair == {
        "compared": 4,
        "mismatched": 2,
        "mismatched_share": 0.5,
        "mean_abs_difference": 0.75,
        "max_abs_difference": 2,
        "mean_difference": 0.25,
    }
    assert counts["prompt_asked_vs_usage"] is None  # nothing asked recorded (no tokenizer)


def test_prompt_asked_against_usage() -> None:
    records = [
        streamed(0, 5, 5, prompt_tokens=100, prompt_asked=100),
        streamed(1, 5, 5, prompt_tokens=103, prompt_asked=100),
    ]
    pair = run_stats(records, [WINDOW]).overall().metrics([WINDOW])["token_counts"]["prompt_asked_vs_usage"]
    assert pair is not None
    assert (pair["compared"], pair["mismatched"], pair["max_abs_difference"], pair["mean_difference"]) == (
        2,
        1,
        3,
        -1.5,  # asked − usage: the server counted 3 more in one of 2
    )


def test_no_usage_no_section() -> None:
    records = [
        RequestRecord(id=0, phase=0, scheduled_s=0.0, first_token_s=0.1, output_tokens=3, itl_ms=[1.0, 1.0])
    ]
    assert "token_counts" not in run_stats(records, [WINDOW]).overall().metrics([WINDOW])


def test_the_tokenizer_recounts_the_text() -> None:
    from tokenizers import Tokenizer

    text = " tok ken sim word"
    truth = len(Tokenizer.from_file(str(TOKENIZER / "tokenizer.json")).encode(text).ids)
    recount = Retokenizer({"default": str(TOKENIZER)}, [WINDOW])
    record = streamed(0, 4, 4, answer_text=text)
    recount.offer(
        [record.to_file_dict(), {**streamed(1, 4, 4, answer_text=text).to_file_dict(), "warmup": True}]
    )
    part = recount.part()
    assert part["tokenizer_counted"] == 1  # the warm-up one is not measured
    usage = part["output_usage_vs_tokenizer"]
    assert usage is not None and usage["max_abs_difference"] == abs(4 - truth)
    chunks = part["output_chunks_vs_tokenizer"]
    assert chunks is not None and chunks["mean_difference"] == 4 - truth
