"""A real Spark smoke test: a handful of barrier jobs on local-cluster, end to end through the parser."""

import json
import os
import subprocess
import sys
import time

import pytest

from barrier_queues import ParameterError
from barrier_queues.spark_analysis import load_run
from barrier_queues.spark_bench import SparkBenchConfig, check_master_reachable, java_version, run_spark_bench


def test_java_is_17_or_newer():
    assert java_version() >= 17


@pytest.mark.slow
def test_real_spark_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "barrier_queues.cli", "spark-bench", "--executors", "2", "--tasks", "2",
           "--arrival-rate", "0.8", "--jobs", "6", "--warmup-jobs", "2", "--task-mean", "0.5",
           "--seed", "3", "--time-limit", "300", "--out", str(out), "--archive", str(tmp_path / "kept"), "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    meta = json.loads(run.stdout)
    assert meta["status"] == "complete" and meta["submitted"] == 6 and meta["spark"] == "4.3.0"
    # the machine's load was sampled during the run, and the serving check was recorded at its end
    assert meta["loadavg_1min"]["samples"] >= 1 and meta["loadavg_1min"]["max"] >= meta["loadavg_1min"]["mean"]
    assert 0 < meta["cpu_busy"] <= 1 and len(meta["loadavg_at_start"]) == 3
    serving = meta["serving"]
    assert serving["assessed"] == "at the end of the run" and serving["executors"] == 2
    assert serving["load_source"] == "mean of 1-minute samples during the run"
    assert isinstance(serving["honest"], bool) and serving["honest"] == (serving["problems"] == [])
    assert json.loads((out / "metadata.json").read_text())["serving"] == serving
    arrivals = (out / "arrivals.csv").read_text().splitlines()
    status = arrivals[0].split(",").index("status")
    assert len(arrivals) == 1 + 2 + 6 and all(line.split(",")[status] == "ok" for line in arrivals[1:])
    log = next((out / "eventlog").iterdir())
    analysis = json.loads(subprocess.run(
        [sys.executable, "-m", "barrier_queues.cli", "spark-analyze", str(log), "--skip-jobs", "2", "--json"],
        capture_output=True, text=True, timeout=120).stdout)
    assert analysis["jobs"] == 6 and analysis["tasks"] == 12
    assert 0 <= analysis["mean_waiting"] < analysis["mean_sojourn"]
    # the archived copy reads back as a run, joined with the harness's records
    kept = load_run(meta["archive"])
    assert len(kept.jobs) == 6 and (kept.jobs.waiting >= 0).all() and kept.tasks.startup.between(0, 5).all()
    # nothing outlives the run: no JVM started from this run's Spark home
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(out) not in ps


@pytest.mark.slow
def test_real_spark_saturated_run_with_phases(tmp_path):
    """A backlog submitted at once, each job 2 phases with barrier() between: recorded and analysable."""
    from barrier_queues import spark_analysis as sa

    config = SparkBenchConfig(executors=2, tasks=2, arrival_rate=None, saturated=True, phases=2, jobs=5,
                              warmup_jobs=1, task_mean=0.3, seed=4, time_limit=300)
    run = sa.load_run(run_spark_bench(config, tmp_path / "run", progress=False))
    assert run.metadata["status"] == "complete" and run.saturated and run.phases == 2 and run.sync_points == 1
    planned = run.jobs.sort_values("planned").planned.to_numpy()
    assert abs((planned[1:] - planned[:-1]).mean() - 0.01) < 0.005           # submitted 10 ms apart
    assert run.metadata["offered_utilization"] is None
    sleeps = run.harness_tasks.sleeps.str.split(";")
    assert (sleeps.str.len() == 2).all()                                     # two iid phase sleeps per task
    assert all(len(a) == 1 for a in run.harness_tasks.sync_arrive)          # one barrier() per task
    assert sa.serving_check(run)["limits"]["submission_lag_max"] is None     # a backlog: lag not judged
    rate = sa.saturation_rate(run)
    assert rate["jobs"] == 5 and rate["lambda_max"] > 0
    spark_replay = sa.replay(run, "plain", sync="spark")
    ideal_replay = sa.replay(run, "plain", sync="ideal")
    assert (spark_replay.completion >= ideal_replay.completion - 1e-9).all()


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(executors=2, tasks=3), "tasks must be an integer with 1 <= tasks <= executors = 2 (got 3)"),
    (dict(saturated=True), "arrival_rate must be None for a saturated run"),
    (dict(phases=2, sync_points=1), "sync_points must be 0 with phases > 1"),
    (dict(arrival_rate=0), "arrival_rate must be a finite number > 0"),
    (dict(master="yarn"), "master must be 'spark://host:port' or 'local-cluster[N,1,MB]'"),
    (dict(executor_memory_mb=100), "executor_memory_mb must be an integer >= 256"),
])
def test_bad_benchmark_configurations(kwargs, fragment):
    with pytest.raises(ParameterError) as info:
        SparkBenchConfig(**kwargs)
    assert fragment in str(info.value)


def test_missing_java_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ParameterError, match="java must be installed"):
        java_version()


@pytest.mark.parametrize("banner, major", [('openjdk version "11.0.22" 2024-01-16', 11),
                                           ('java version "1.8.0_392"', 8)])
def test_wrong_java_version_is_a_clear_error(tmp_path, monkeypatch, banner, major):
    fake = tmp_path / "jdk" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(ParameterError) as info:
        java_version()
    assert f"java must be version 17 or newer for Spark 4 (got Java {major} at {fake})" in str(info.value)


def test_unreachable_master_is_a_clear_error_and_keeps_the_metadata(tmp_path):
    """Nothing listens on port 9 of the loopback: one message at once, no JVM started, metadata kept."""
    config = SparkBenchConfig(executors=2, tasks=2, jobs=2, warmup_jobs=0, master="spark://127.0.0.1:9",
                              registration_timeout=10)
    with pytest.raises(ParameterError) as info:
        run_spark_bench(config, tmp_path / "run", progress=False)
    message = str(info.value)
    assert message.startswith("master must be reachable: nothing accepted a connection at spark://127.0.0.1:9")
    assert "Connection refused" in message and "\n" not in message
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["status"].startswith("failed: ParameterError: master must be reachable")
    assert meta["master"] == "spark://127.0.0.1:9" and (tmp_path / "run" / "arrivals.csv").exists()
    with pytest.raises(ParameterError, match="127.0.0.1:9: .*127.0.0.1:10: "):
        check_master_reachable("spark://127.0.0.1:9,127.0.0.1:10")
    check_master_reachable("local-cluster[2,1,1024]")      # nothing to check for the embedded cluster


def test_a_run_never_overwrites_an_earlier_one(tmp_path):
    """An --out or --archive folder that holds data is refused before Spark starts; its files stay as they were."""
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "metadata.json").write_text('{"status": "complete"}')
    (earlier / "arrivals.csv").write_text("tag,warmup,planned,submitted,completed,status\n0,False,1,1,2,ok\n")
    before = {p.name: p.read_bytes() for p in earlier.iterdir()}
    with pytest.raises(ParameterError) as info:
        run_spark_bench(SparkBenchConfig(executors=2, tasks=2, jobs=2), earlier, progress=False)
    assert str(info.value) == (f"out_dir must be a new or empty folder, so that no measured data is overwritten "
                               f"({str(earlier)!r} already holds a run; choose another folder)")
    assert {p.name: p.read_bytes() for p in earlier.iterdir()} == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    for flags in (["--out", str(other)], ["--out", str(tmp_path / "new"), "--archive", str(earlier)]):
        cli = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "spark-bench", "-s", "2", "-k", "2",
                              "--arrival-rate", "0.5", "--jobs", "2", *flags],
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 2 and cli.stderr.count("\n") == 1
    assert not (tmp_path / "new").exists()
    assert "barrier-queues: error: --archive must be a new or empty folder" in cli.stderr
    assert (other / "notes.txt").read_text() == "mine" and {p.name: p.read_bytes() for p in earlier.iterdir()} == before


def test_load_sampler_measures_a_busy_core():
    """One core spinning for a second is at least 1/cores of the machine's CPU time (Linux /proc/stat)."""
    from barrier_queues.spark_bench import _LoadSampler

    sampler = _LoadSampler(interval=0.2)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        pass
    out = sampler.stop()
    assert out["loadavg_1min"]["samples"] >= 3
    assert 0.9 / os.cpu_count() <= out["cpu_busy"] <= 1.0


def test_mixed_workload_configs_draw_each_jobs_kind_from_their_own_stream():
    base = SparkBenchConfig(executors=8, tasks=8, tasks_pmf="2:0.5,8:0.5", task_mean=2.0, arrival_rate=0.2,
                            jobs=4000, seed=5)
    ks, barrier = base.job_kinds()
    assert set(ks) == {2, 8} and barrier.all() and abs((ks == 8).mean() - 0.5) < 0.03
    assert base.system().tasks_pmf == ((2, 0.5), (8, 0.5))
    hybrid = SparkBenchConfig(executors=8, tasks=4, barrier_fraction=0.5, task_mean=2.0, arrival_rate=0.3,
                              jobs=4000, seed=5)
    ks, barrier = hybrid.job_kinds()
    assert (ks == 4).all() and abs(barrier.mean() - 0.5) < 0.03
    assert hybrid.system().barrier_fraction == 0.5
    single = SparkBenchConfig(executors=8, tasks=4, arrival_rate=0.3, jobs=50, seed=5)
    assert single.job_kinds()[1].all()
    with pytest.raises(ParameterError, match="tasks must be the largest k of tasks_pmf"):
        SparkBenchConfig(executors=8, tasks=4, tasks_pmf="2:0.5,8:0.5", task_mean=2.0)
    with pytest.raises(ParameterError, match="task_mean must be given with tasks_pmf"):
        SparkBenchConfig(executors=8, tasks=8, tasks_pmf="2:0.5,8:0.5")
    with pytest.raises(ParameterError, match="phases must be 1 and sync_points 0 for a mixed workload"):
        SparkBenchConfig(executors=8, tasks=4, barrier_fraction=0.5, phases=2)


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_a_real_standalone_cluster_runs_a_sweep_and_a_benchmark_and_is_torn_down(tmp_path):
    """A Spark standalone cluster from the installed pyspark (a master and 2 workers of 1 core, bound to
    127.0.0.1, work and logs under tmp_path): ``sweep --backend spark --master spark://...`` gives the local
    table byte for byte (and again when a rerun adds a replication), and a short
    ``spark-bench --master spark://...`` run completes on its 2 executors. Stopping it ends every process the
    cluster started (daemons, executors, Python workers), checked by PID."""
    import threading

    import pandas as pd

    from barrier_queues.backends import StandaloneCluster

    cluster = StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory_mb=1024)
    seen: set[int] = set()
    running = threading.Event()
    with cluster:
        running.set()

        def sample():
            while running.is_set():
                seen.update(cluster.pids())
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            grid = ["-s", "8", "-k", "2,4", "--utilization", "0.3,0.6", "--jobs", "2000", "--replications", "2",
                    "--seed", "9"]
            cli = [sys.executable, "-m", "barrier_queues.cli"]
            spark = subprocess.run(cli + ["sweep", *grid, "--backend", "spark", "--master", cluster.master,
                                          "--out", str(tmp_path / "spark"), "--json"],
                                   capture_output=True, text=True, timeout=600)
            assert spark.returncode == 0, spark.stderr[-3000:]
            assert "FutureWarning" not in spark.stderr                  # pyspark's pandas notice is silenced
            spark2 = (tmp_path / "spark" / "results.csv").read_bytes()
            grown = subprocess.run(cli + ["sweep", *grid[:-3], "3", *grid[-2:], "--backend", "spark", "--master",
                                          cluster.master, "--out", str(tmp_path / "spark"), "--json"],
                                   capture_output=True, text=True, timeout=600)
            assert grown.returncode == 0, grown.stderr[-3000:]
            spark3 = (tmp_path / "spark" / "results.csv").read_bytes()
            bench = subprocess.run(cli + ["spark-bench", "--master", cluster.master, "--executors", "2", "--tasks",
                                          "2", "--arrival-rate", "0.8", "--jobs", "4", "--warmup-jobs", "1",
                                          "--task-mean", "0.5", "--seed", "3", "--time-limit", "300",
                                          "--out", str(tmp_path / "bench"), "--json"],
                                   capture_output=True, text=True, timeout=600)
            assert bench.returncode == 0, bench.stderr[-3000:]
        finally:
            running.clear()
            sampler.join()
    local = subprocess.run(cli + ["sweep", *grid, "--out", str(tmp_path / "local"), "--json"],
                           capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr[-3000:]
    assert spark2 == (tmp_path / "local" / "results.csv").read_bytes()
    local3 = subprocess.run(cli + ["sweep", *grid[:-3], "3", *grid[-2:], "--out", str(tmp_path / "local"), "--json"],
                            capture_output=True, text=True, timeout=600)
    assert local3.returncode == 0, local3.stderr[-3000:]
    assert spark3 == (tmp_path / "local" / "results.csv").read_bytes()         # 2 replications grown to 3
    assert len(pd.read_csv(tmp_path / "local" / "results.csv")) == 4
    meta = json.loads(bench.stdout)
    assert meta["status"] == "complete" and meta["submitted"] == 4 and meta["master"] == cluster.master
    assert meta["serving"]["executors"] == 2
    # executors ran (more than the master and 2 workers were seen), and nothing of the cluster is left
    assert len(seen) > 3, seen
    assert [p for p in seen if os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z"] \
        == []
    assert cluster.pids() == []
