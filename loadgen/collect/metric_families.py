"""Which Prometheus series of which server family loadtest reads, under what normalized key.

Every family's series map onto the keys vLLM's already have (requests_running, ttft_seconds...),
so `server.metrics` reads the same whatever the server; `source` names the family with the most
series present. Each family's names were checked where a comment says; docs/guide/servers.md
tables them with what each family lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loadgen.collect.slice_registry import SLICE_SERVER_COUNTERS

SeriesKind = Literal["gauge", "counter", "histogram"]
# The families `source` may name (then "unknown"): loadgen.report.model.server lists the same.
FAMILIES = ("vllm", "sglang", "tgi", "llamacpp", "triton", "trtllm", "dynamo", "builtin")

MS, US = 1e-3, 1e-6  # a family's unit in seconds: `scale` turns its values into seconds


@dataclass(frozen=True)
class Series:
    """A Prometheus series worth keeping. `name`: a gauge's or counter's sample name, or a
    histogram's base name; `key`: its normalized name; `combine`: how label sets (several
    engines, finish reasons) fold into one figure; `scale`: what turns the family's unit into the
    key's (a histogram's bounds and sum, or a counter's value: Triton's µs, ms); `where`: the
    labels that pick one figure out of a series holding several. Where two series
    of a family share a key, the first listed that the server exposes wins (current names before
    older ones)."""

    name: str
    key: str
    kind: SeriesKind
    source: str
    combine: Literal["sum", "mean"] = "sum"
    scale: float = 1.0
    where: tuple[tuple[str, str], ...] = ()  # only the samples with these labels (a gauge's or counter's)


def _family(
    source: str, *rows: tuple[str, str, SeriesKind] | tuple[str, str, SeriesKind, str]
) -> tuple[Series, ...]:
    return tuple(
        Series(row[0], row[1], row[2], source, "mean" if len(row) > 3 and row[3] == "mean" else "sum")
        for row in rows
    )


def _picked(name: str, key: str, label: tuple[str, str], combine: Literal["sum", "mean"] = "sum") -> Series:
    """A Triton gauge's figure for one value of a label (its TensorRT-LLM backend's)."""
    return Series(name, key, "gauge", "triton", combine, where=(label,))


SERIES: tuple[Series, ...] = (
    # vLLM (names checked against vLLM 0.32's /metrics: tests/fixtures/vllm_metrics.txt)
    *_family(
        "vllm",
        ("vllm:num_requests_running", "requests_running", "gauge"),
        ("vllm:num_requests_waiting", "requests_waiting", "gauge"),
        ("vllm:kv_cache_usage_perc", "kv_cache_usage", "gauge", "mean"),  # a fraction despite the name
        ("vllm:gpu_cache_usage_perc", "kv_cache_usage", "gauge", "mean"),  # before V1
        ("vllm:generation_tokens_total", "generation_tokens_total", "counter"),
        ("vllm:prompt_tokens_total", "prompt_tokens_total", "counter"),
        ("vllm:request_success_total", "requests_finished_total", "counter"),
        ("vllm:num_preemptions_total", "preemptions_total", "counter"),
        ("vllm:prefix_cache_queries_total", "prefix_cache_queries_total", "counter"),  # tokens
        ("vllm:prefix_cache_hits_total", "prefix_cache_hits_total", "counter"),
        ("vllm:time_to_first_token_seconds", "ttft_seconds", "histogram"),
        ("vllm:inter_token_latency_seconds", "itl_seconds", "histogram"),
        ("vllm:time_per_output_token_seconds", "itl_seconds", "histogram"),  # older name
        ("vllm:e2e_request_latency_seconds", "e2e_seconds", "histogram"),
        ("vllm:request_queue_time_seconds", "queue_wait_seconds", "histogram"),
    ),
    # SGLang (`--enable-metrics`; docs.sglang.io references/production_metrics and
    # sgl-project/sglang python/sglang/srt/metrics/collector.py). Labels model_name, tp_rank,
    # pp_rank, dp_rank...: summed (each data-parallel rank has its own batch).
    *_family(
        "sglang",
        ("sglang:num_running_reqs", "requests_running", "gauge"),
        ("sglang:num_queue_reqs", "requests_waiting", "gauge"),
        ("sglang:token_usage", "kv_cache_usage", "gauge", "mean"),  # KV tokens used / pool, 0-1
        ("sglang:generation_tokens_total", "generation_tokens_total", "counter"),
        ("sglang:prompt_tokens_total", "prompt_tokens_total", "counter"),
        ("sglang:num_requests_total", "requests_finished_total", "counter"),  # counted at the end
        # Prefix cache in prompt tokens: every prompt token is looked up; cached_tokens_total
        # (per cache_source: device, host, storage) are the ones found.
        ("sglang:prompt_tokens_total", "prefix_cache_queries_total", "counter"),
        ("sglang:cached_tokens_total", "prefix_cache_hits_total", "counter"),
        ("sglang:time_to_first_token_seconds", "ttft_seconds", "histogram"),
        ("sglang:inter_token_latency_seconds", "itl_seconds", "histogram"),
        ("sglang:time_per_output_token_seconds", "itl_seconds", "histogram"),  # older versions
        ("sglang:e2e_request_latency_seconds", "e2e_seconds", "histogram"),
        ("sglang:queue_time_seconds", "queue_wait_seconds", "histogram"),
    ),
    # Hugging Face TGI (huggingface.co/docs/text-generation-inference/reference/metrics; the
    # router's Rust `metrics` crate: counters carry no `_total`). No TTFT histogram, no KV-cache
    # gauge; tokens are the per-request histograms' sums (added when a request ends).
    *_family(
        "tgi",
        ("tgi_batch_current_size", "requests_running", "gauge"),
        ("tgi_queue_size", "requests_waiting", "gauge"),
        ("tgi_request_generated_tokens_sum", "generation_tokens_total", "counter"),
        ("tgi_request_input_length_sum", "prompt_tokens_total", "counter"),
        ("tgi_request_success", "requests_finished_total", "counter"),
        ("tgi_request_mean_time_per_token_duration", "itl_seconds", "histogram"),  # a mean per request
        ("tgi_request_duration", "e2e_seconds", "histogram"),
        ("tgi_request_queue_duration", "queue_wait_seconds", "histogram"),
    ),
    # llama.cpp's llama-server `--metrics` (ggml-org/llama.cpp tools/server README "GET /metrics"
    # and server.cpp): gauges and counters only, no histogram. kv_cache_usage_ratio is in older
    # builds only; tokens_predicted_seconds_total is the slots' decode time (seconds).
    *_family(
        "llamacpp",
        ("llamacpp:requests_processing", "requests_running", "gauge"),
        ("llamacpp:requests_deferred", "requests_waiting", "gauge"),
        ("llamacpp:kv_cache_usage_ratio", "kv_cache_usage", "gauge", "mean"),
        ("llamacpp:tokens_predicted_total", "generation_tokens_total", "counter"),
        ("llamacpp:prompt_tokens_total", "prompt_tokens_total", "counter"),
        ("llamacpp:tokens_predicted_seconds_total", "generation_seconds_total", "counter"),
        ("llamacpp:prompt_seconds_total", "prompt_seconds_total", "counter"),
    ),
    # Triton Inference Server (triton-inference-server/server docs/user_guide/metrics.md; labels
    # model, version). Latency is cumulative microsecond counters (a mean, no percentiles) unless
    # `--metrics-config histogram_latencies=true` adds the first-response histogram, in ms.
    # Its TensorRT-LLM backend's gauges, one figure per label value (the names and values as the
    # Gateway API Inference Extension reads them: kubernetes-sigs/gateway-api-inference-extension,
    # "triton-tensorrt-llm"; `fraction` is in newer backends only).
    _picked("nv_trt_llm_request_metrics", "requests_running", ("request_type", "scheduled")),
    _picked("nv_trt_llm_request_metrics", "requests_waiting", ("request_type", "waiting")),
    _picked(
        "nv_trt_llm_kv_cache_block_metrics", "kv_cache_usage", ("kv_cache_block_type", "fraction"), "mean"
    ),
    *_family(
        "triton",
        ("nv_inference_pending_request_count", "requests_waiting", "gauge"),  # without the backend's
        ("nv_inference_request_success", "requests_finished_total", "counter"),
        ("nv_inference_request_failure", "requests_failed_total", "counter"),
    ),
    Series(
        "nv_inference_request_duration_us", "request_duration_seconds_total", "counter", "triton", scale=US
    ),
    Series("nv_inference_queue_duration_us", "queue_duration_seconds_total", "counter", "triton", scale=US),
    Series("nv_inference_first_response_histogram_ms", "ttft_seconds", "histogram", "triton", scale=MS),
    # TensorRT-LLM's trtllm-serve (NVIDIA/TensorRT-LLM tensorrt_llm/metrics/collector.py).
    *_family(
        "trtllm",
        ("trtllm_num_requests_running", "requests_running", "gauge"),
        ("trtllm_num_requests_waiting", "requests_waiting", "gauge"),
        ("trtllm_kv_cache_utilization", "kv_cache_usage", "gauge", "mean"),  # 0-1
        ("trtllm_generation_tokens_total", "generation_tokens_total", "counter"),
        ("trtllm_prompt_tokens_total", "prompt_tokens_total", "counter"),
        ("trtllm_request_success_total", "requests_finished_total", "counter"),
        ("trtllm_time_to_first_token_seconds", "ttft_seconds", "histogram"),
        ("trtllm_time_per_output_token_seconds", "itl_seconds", "histogram"),
        ("trtllm_e2e_request_latency_seconds", "e2e_seconds", "histogram"),
        ("trtllm_request_queue_time_seconds", "queue_wait_seconds", "histogram"),
    ),
    # NVIDIA Dynamo's HTTP frontend (ai-dynamo docs/observability/metrics.md, "Frontend Metrics"):
    # in flight counts everything it has not answered, queued what waits for a first token.
    *_family(
        "dynamo",
        ("dynamo_frontend_inflight_requests", "requests_in_flight", "gauge"),
        ("dynamo_frontend_queued_requests", "requests_waiting", "gauge"),
        ("dynamo_frontend_output_tokens_total", "generation_tokens_total", "counter"),
        ("dynamo_frontend_input_sequence_tokens_sum", "prompt_tokens_total", "counter"),
        ("dynamo_frontend_time_to_first_token_seconds", "ttft_seconds", "histogram"),
        ("dynamo_frontend_inter_token_latency_seconds", "itl_seconds", "histogram"),
        ("dynamo_frontend_request_duration_seconds", "e2e_seconds", "histogram"),
    ),
    # the built-in engines (servers/http/exposition.py)
    *_family(
        "builtin",
        ("loadtest_server_batch_size", "requests_running", "gauge"),
        ("loadtest_server_queue_size", "requests_waiting", "gauge"),
        ("loadtest_server_kv_cache_usage_ratio", "kv_cache_usage", "gauge", "mean"),
        ("loadtest_server_requests_in_flight", "requests_in_flight", "gauge"),
        ("loadtest_server_generated_tokens_total", "generation_tokens_total", "counter"),
        ("loadtest_server_prefix_cache_queries_total", "prefix_cache_queries_total", "counter"),
        ("loadtest_server_prefix_cache_hits_total", "prefix_cache_hits_total", "counter"),
        ("loadtest_server_requests_aborted_total", "requests_aborted_total", "counter"),
    ),
    # the feature slices' counters (loadgen.features: an adapter cache's), in their place
    *(Series(counter.series, counter.name, "counter", "builtin") for counter in SLICE_SERVER_COUNTERS),
    *_family(
        "builtin",
        ("loadtest_server_ttft_seconds", "ttft_seconds", "histogram"),
        ("loadtest_server_e2e_seconds", "e2e_seconds", "histogram"),
        ("loadtest_server_queue_wait_seconds", "queue_wait_seconds", "histogram"),
    ),
)
