"""The simulated server's load curve in closed form: what tests compare measurements against.

The engine (servers.engines.simulated_engine) decodes up to S = `slots` requests at once; each
holds its slot for T = t + (N − 1)·i (TTFT t, ITL i, N output tokens). With S requests always in
flight and none waiting, TTFT stays t, so

    capacity = S / T  requests/s,   S·N / T  output tokens/s      (if the TTFT SLO ≥ t)
    capacity = 0                                                   (if it is < t: never met)

More load only queues: in a closed loop with c > S users, Little's law gives e2e = c·T/S and
TTFT = t + T·(c/S − 1) with throughput still S/T, so the SLO can admit more users but never
more throughput. (Open loop with Poisson arrivals sits below S/T: queueing starts before full
utilisation.)
"""

from __future__ import annotations

from loadgen.evaluate.curve import LevelResult


def service_time(ttft_s: float, itl_s: float, output_tokens: int) -> float:
    """Seconds one request holds a slot of the simulated engine: T = t + (N − 1)·i."""
    return ttft_s + max(output_tokens - 1, 0) * itl_s


def capacity(
    slots: int, ttft_s: float, itl_s: float, output_tokens: int, ttft_p95_slo_s: float | None = None
) -> tuple[float, float]:
    """(requests/s, output tokens/s) the simulated engine sustains under a TTFT-p95 SLO."""
    if ttft_p95_slo_s is not None and ttft_p95_slo_s < ttft_s:
        return 0.0, 0.0
    rate = slots / service_time(ttft_s, itl_s, output_tokens)
    return rate, rate * output_tokens


def closed_loop(
    concurrency: float,
    slots: int,
    ttft_s: float,
    itl_s: float,
    output_tokens: int,
    ttft_p95_slo_s: float | None = None,
) -> LevelResult:
    """The engine's steady state at a closed-loop concurrency (deterministic: every percentile
    equals the mean)."""
    service = service_time(ttft_s, itl_s, output_tokens)
    queued = max(concurrency / slots - 1.0, 0.0) * service  # wait for a slot beyond S users
    throughput = min(concurrency, slots) / service
    ttft_ms = (ttft_s + queued) * 1000.0
    e2e_ms = (service + queued) * 1000.0
    passed = ttft_p95_slo_s is None or ttft_ms <= ttft_p95_slo_s * 1000.0 + 1e-9
    return LevelResult(
        level=concurrency,
        throughput_rps=throughput,
        output_tokens_per_s=throughput * output_tokens,
        ttft_ms={"p50": ttft_ms, "p95": ttft_ms},
        itl_ms={"p50": itl_s * 1000.0, "p95": itl_s * 1000.0},
        e2e_ms={"p50": e2e_ms, "p95": e2e_ms},
        slo_passed=passed,
        failed_slos=() if passed else ("ttft p95",),
    )
