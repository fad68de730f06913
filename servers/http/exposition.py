"""Server-side metrics for /metrics, in a registry owned by one app (no global metric objects)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from servers.engines.engine import Engine, EngineStats

PREFIX = "loadtest_server_"
CLIENT_GONE = "499"  # nginx's code for "client closed the connection", as a status label

# Seconds; fine at the low end where simulated and small-model servers live.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ServerMetrics:
    def __init__(self, engine: Engine) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            PREFIX + "requests",
            "Requests answered, by endpoint and HTTP status",
            ["endpoint", "status"],
            registry=r,
        )
        self.in_flight = Gauge(
            PREFIX + "requests_in_flight",
            "Requests being served (generations, embeddings, scores)",
            registry=r,
        )
        self.generated_tokens = Counter(PREFIX + "generated_tokens", "Output tokens generated", registry=r)
        # Named like vLLM's prefix_cache_queries/hits: in tokens, so hits/queries is the hit rate.
        self.prefix_cache_queries = Counter(
            PREFIX + "prefix_cache_queries", "Prompt tokens looked up in the prefix cache", registry=r
        )
        self.prefix_cache_hits = Counter(
            PREFIX + "prefix_cache_hits", "Prompt tokens found in the prefix cache", registry=r
        )
        # LoRA adapters (engines serving some): requests whose adapter was resident, or was loaded.
        self.lora_hits = Counter(
            PREFIX + "lora_hits", "Requests whose LoRA adapter was resident", ["adapter"], registry=r
        )
        self.lora_misses = Counter(
            PREFIX + "lora_misses", "Requests whose LoRA adapter had to be loaded", ["adapter"], registry=r
        )
        for name in engine.adapters:  # every adapter's series from the start, at 0
            self.lora_hits.labels(adapter=name)
            self.lora_misses.labels(adapter=name)
        self.requests_aborted = Counter(
            PREFIX + "requests_aborted",
            "Requests whose client went away before the answer ended",
            registry=r,
        )
        self.queue_wait = Histogram(
            PREFIX + "queue_wait_seconds",
            "Time from arrival to a batch slot",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.ttft = Histogram(
            PREFIX + "ttft_seconds", "Server-side time to first token", buckets=_LATENCY_BUCKETS, registry=r
        )
        # vLLM's e2e_request_latency_seconds counterpart, over every answer of every endpoint.
        self.e2e = Histogram(
            PREFIX + "e2e_seconds",
            "Server-side time from a request's arrival to its answer's end (every answered request)",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        # Embeddings, rerank and score answers (no tokens, so no TTFT): arrival to the answer.
        self.pooling_latency = Histogram(
            PREFIX + "pooling_seconds",
            "Server-side latency of embeddings, rerank and score requests",
            ["endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        # KServe v2 infer requests (a classic model's): the items of their batches, for items/s.
        self.inferences = Counter(
            PREFIX + "inferences", "Batch items (inferences) run by KServe v2 infer requests", registry=r
        )
        # Read from the engine at scrape time, so the gauges are never stale.
        batch = Gauge(PREFIX + "batch_size", "Requests in the running batch", registry=r)
        batch.set_function(lambda: engine.stats().running)
        waiting = Gauge(PREFIX + "queue_size", "Requests waiting for a batch slot", registry=r)
        waiting.set_function(lambda: engine.stats().waiting)
        # vLLM's kv_cache_usage_perc counterpart: each batch slot holds one request's KV cache.
        kv_cache = Gauge(
            PREFIX + "kv_cache_usage_ratio", "Share of batch slots (KV caches) in use", registry=r
        )
        kv_cache.set_function(lambda: _usage(engine.stats()))
        ready = Gauge(PREFIX + "ready", "1 once the engine serves requests", registry=r)
        ready.set_function(lambda: 1.0 if engine.ready() else 0.0)

    async def counted(self, endpoint: str, answer: Awaitable[web.StreamResponse]) -> web.StreamResponse:
        """`answer`, counted: in flight while it runs, then by endpoint and status; a client
        gone before the end (its handler cancelled, or a write reset) is an abort, status 499."""
        status = "500"
        self.in_flight.inc()
        try:
            response = await answer
            status = str(response.status)
            return response
        except (asyncio.CancelledError, ConnectionResetError):
            status = CLIENT_GONE
            self.requests_aborted.inc()
            raise
        finally:
            self.in_flight.dec()
            self.requests.labels(endpoint=endpoint, status=status).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _usage(stats: EngineStats) -> float:
    return stats.running / stats.slots if stats.slots else 0.0
