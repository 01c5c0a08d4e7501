"""Failures on a real Spark: the harness's injected failures, the event-log reading, and Spark's rules against the
model job by job (committed runs and a live run)."""

import gzip
import io
import json
from pathlib import Path

import pytest

from barrier_queues import ParameterError
from barrier_queues import spark_failures as sf
from barrier_queues.spark_bench import SparkBenchConfig, run_spark_bench

ROOT = Path(__file__).resolve().parents[1]
RUNS = sorted(p for p in (ROOT / "data" / "spark-failures").glob("*") if (p / "metadata.json").exists())


def _raw_attempts(run: Path) -> dict:
    """Per job tag, the stage attempts of its first stage and whether it succeeded: a plain loop over the raw
    JSON lines of the event log (zstd or plain), independent of barrier_queues.eventlog."""
    log = next((run / "eventlog").iterdir())
    raw = log.read_bytes()
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
    elif raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    tag_of, first_stage, attempts, result = {}, {}, {}, {}
    for line in raw.decode().splitlines():
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            tag = (e.get("Properties") or {}).get("bq.job")
            tag_of[e["Job ID"]] = tag
            first_stage[e["Job ID"]] = min(e["Stage IDs"])
        elif kind == "SparkListenerTaskEnd":
            for job, stage in first_stage.items():
                if stage == e["Stage ID"]:
                    attempts.setdefault(tag_of[job], set()).add(e.get("Stage Attempt ID", 0))
        elif kind == "SparkListenerJobEnd":
            result[tag_of[e["Job ID"]]] = e["Job Result"]["Result"] == "JobSucceeded"
    return {tag: (len(a), result[tag]) for tag, a in attempts.items()}


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_committed_failure_runs_follow_sparks_rules_as_the_model_says(run):
    table = sf.failure_jobs(run)
    raw = _raw_attempts(run)
    meta = json.loads((run / "metadata.json").read_text())
    cap = {"result": 1, "shuffle-map": 4}[meta["config"]["stage"]]
    assert len(table) == meta["config"]["jobs"]
    for _, job in table.iterrows():
        assert raw[job.tag] == (job.attempts, not job.aborted)
        assert 1 <= job.attempts <= cap
        if job.aborted:                                                  # only a job at its cap is aborted
            assert job.attempts == cap
        assert all(g > 0 for g in job.gaps)
    summary = sf.failure_summary(run)
    assert summary["jobs_as_predicted"] == summary["jobs"]
    if summary["resubmissions"]:                     # Spark waits 0.2 s before resubmitting (measured from the
        assert summary["gap_median"] > 0.2           # failed task's end; a few gaps are shorter: see data/README)
    assert meta["spark_settings"]["spark.stage.maxConsecutiveAttempts"] == "4"


def test_a_failure_run_is_refused_where_the_model_does_not_apply():
    with pytest.raises(ParameterError, match="failure_rate needs barrier jobs of one phase"):
        SparkBenchConfig(executors=4, tasks=2, phases=2, failure_rate=0.1)
    with pytest.raises(ParameterError, match="stage must be one of 'result', 'shuffle-map'"):
        SparkBenchConfig(executors=4, tasks=2, failure_rate=0.1, stage="map")
    with pytest.raises(ParameterError, match="must be a failure run"):
        sf.failure_summary(ROOT / "tests" / "data" / "spark-run-s2-k2")


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("stage", ["result", "shuffle-map"])
def test_live_failure_run(stage, tmp_path):
    """Injected failures on local-cluster: Spark aborts a ResultStage at once and resubmits a ShuffleMapStage up
    to 4 attempts, job by job as the model says on the same draws."""
    config = SparkBenchConfig(executors=2, tasks=2, arrival_rate=0.5, jobs=5, warmup_jobs=1, task_mean=0.5, seed=5,
                              failure_rate=1.0, stage=stage, time_limit=300)
    run = run_spark_bench(config, tmp_path / "run", progress=False)
    summary = sf.failure_summary(run)
    assert summary["jobs"] == 5 and summary["jobs_as_predicted"] == 5
    table = sf.failure_jobs(run)
    assert table.attempts.max() <= (1 if stage == "result" else 4)
    if stage == "shuffle-map":
        assert summary["resubmissions"] >= 1 and summary["gap_median"] > 0.2
