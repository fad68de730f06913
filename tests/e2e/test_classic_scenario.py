"""scenarios/classic.yaml as a user runs it, cut to 6 s with `--set`: ONNX Runtime serving the
bundled classifier over KServe v2, every request built from the model's metadata and every
answer (the model's logits for its image) checked; the SLOs judged on latency, items per second
reported, no token figures, and report.html written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = ROOT / "scenarios" / "classic.yaml"


def test_the_classic_scenario_serves_and_judges_the_bundled_classifier(tmp_path: Path) -> None:
    done = run_cli(tmp_path, CLASSIC, "--set", "traffic.0.duration=6s", "--set", "warmup=1s", timeout=120)
    assert done.code == 0, done.stderr
    records = done.records()
    assert len(records) > 150 and all(r["status"] == "ok" and r["items"] == 1 for r in records)
    report = done.report
    assert report["server"]["kind"] == "onnxruntime"
    assert {check["name"] for check in report["slo"]} == {"e2e p95", "e2e p99", "error_rate"}
    items = report["metrics"]["items"]
    assert items["items_per_s"] == pytest.approx(50, rel=0.25)  # 50 images/s, one a request
    assert report["metrics"]["ttft_ms"]["p50"] is None and report["metrics"]["output_tokens_per_s"] == 0
    assert "items/s" in (done.run_dir / "report.html").read_text(encoding="utf-8")
