"""A run folder written by hand (scenario.yaml, run.json, requests.jsonl): what `loadtest report`
and render_reports read, without paying for a real run."""

from __future__ import annotations

from pathlib import Path

from loadgen.collect.records import RecordWriter, RequestRecord
from loadgen.rundir.folder import RunMeta, utc_now, write_scenario
from loadgen.scenario.loader import load_scenario


def make_run_folder(run_dir: Path, scenario_text: str, records: int, *, finished: bool) -> Path:
    """`records` whole, quick records (10 ms TTFT, 20 ms e2e, 10 per second); `finished: False`
    is a load generator killed mid-run."""
    run_dir.mkdir(parents=True)
    scenario_file = run_dir.parent / f"{run_dir.name}.yaml"
    scenario_file.write_text(scenario_text, encoding="utf-8")
    write_scenario(load_scenario(scenario_file), run_dir)
    meta = RunMeta(started_at=utc_now().isoformat(), server={"kind": "simulated"}, finished=finished)
    meta.duration_s = records / 10
    meta.save(run_dir)
    writer = RecordWriter(run_dir / "requests.jsonl")
    for number in range(records):
        sent = number * 0.1
        writer.write(
            RequestRecord(
                id=number,
                phase=0,
                scheduled_s=sent,
                sent_s=sent,
                first_token_s=sent + 0.01,
                done_s=sent + 0.02,
                output_tokens=4,
            )
        )
    writer.close()
    return run_dir
