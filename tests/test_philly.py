"""The Philly GPU cluster's log (the Pollux extract): read as rigid gangs with their virtual cluster, and replayed
cluster by cluster on each one's own size, the jobs of unsized clusters counted by name."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues.replay import parse_cluster_sizes, replay, replay_by_cluster
from barrier_queues.traces import Trace, read_trace

TRACES = Path(os.environ["BARRIER_QUEUES_TRACES"]) if os.environ.get("BARRIER_QUEUES_TRACES") else None
PHILLY = TRACES / "philly-pollux.csv.gz" if TRACES is not None else None
#: the Helios study's VC sizes in 8-GPU nodes (the traces' README), as GPUs
HELIOS = {"6214e9": 512, "7f04ca": 256, "11cb48": 128, "b436b2": 512, "ee9e8c": 512, "e13805": 128, "6c71a0": 256,
          "2869ce": 128, "ed69ec": 64, "103959": 64, "0e4a51": 256}
CLI = [sys.executable, "-m", "barrier_queues.cli"]

SMALL = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:00:10,100.0,2,200.0,a
2017-10-01 00:00:00,50.0,1,50.0,b
2017-10-01 00:00:05,30.0,4,120.0,a
2017-10-01 00:01:00,10.0,1,10.0,c
"""


def _write(tmp_path, text, name="philly.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_philly_log_is_read_as_rigid_gangs_in_submission_order(tmp_path):
    trace = read_trace(_write(tmp_path, SMALL))
    assert trace.format == "philly" and trace.rigid and trace.servers is None
    jobs = trace.jobs
    assert jobs.submit.tolist() == [0.0, 5.0, 10.0, 60.0]                 # seconds since the first, sorted
    assert jobs.tasks.tolist() == [1, 4, 2, 1] and jobs.runtime.tolist() == [50.0, 30.0, 100.0, 10.0]
    assert jobs.cluster.tolist() == ["b", "a", "a", "c"] and jobs.estimate.isna().all()


@pytest.mark.parametrize("bad, message", [
    (SMALL.replace("2017-10-01 00:00:05", "yesterday"), "row 4: timestamp"),
    (SMALL.replace("30.0,4,120.0", "30.0,4,121.0"), "row 4: gpu_time"),
    (SMALL.replace("100.0,2,200.0", "0.0,2,0.0"), "duration"),
    (SMALL.replace("1,50.0", "1.5,75.0"), "num_gpus must be a whole number"),
])
def test_a_bad_philly_row_is_refused_naming_it(tmp_path, bad, message):
    with pytest.raises(bq.ParameterError, match=message):
        read_trace(_write(tmp_path, bad))


def test_each_cluster_runs_on_its_own_size_and_unsized_ones_are_counted_by_name(tmp_path):
    trace = read_trace(_write(tmp_path, SMALL))
    result = replay_by_cluster(trace, "a:4,b:1", scheduling="fcfs")
    out = result.summary()
    assert out["unsized"] == {"clusters": {"c": 1}, "jobs": 1}
    assert out["clusters"]["a"]["servers"] == 4 and out["clusters"]["b"]["jobs"] == 1
    # cluster a alone: the 4-GPU gang (t = 5) runs to 35, the 2-GPU gang submitted at 10 waits until then
    a = result.results["a"].jobs
    assert a.start.tolist() == [5.0, 35.0]
    assert out["all"]["jobs"] == 3 and out["all"]["mean_waiting"] == pytest.approx(25.0 / 3)
    with pytest.raises(bq.ParameterError, match="does not have"):
        replay_by_cluster(trace, "a:4,zz:8")
    with pytest.raises(bq.ParameterError, match="twice"):
        parse_cluster_sizes("a:4,a:8")
    with pytest.raises(bq.ParameterError, match="no cluster column"):
        replay_by_cluster(Trace(trace.jobs.drop(columns="cluster"), "x", "csv"), "a:4")


@pytest.mark.skipif(PHILLY is None or not PHILLY.is_file(),
                    reason="the logs' folder (BARRIER_QUEUES_TRACES; make sets it) is not here")
def test_the_philly_log_by_cluster_on_the_helios_sizes():
    """82,247 jobs in 15 VCs; the 18 jobs of the 4 VCs with no published size are skipped and named; each VC's
    replay equals a replay of its own jobs on its size, job by job."""
    trace = read_trace(PHILLY)
    assert len(trace.jobs) == 82_247 and trace.jobs.cluster.nunique() == 15
    result = replay_by_cluster(trace, HELIOS, scheduling="first-fit")
    out = result.summary()
    assert out["unsized"]["jobs"] == 18 and len(out["unsized"]["clusters"]) == 4
    assert out["all"]["jobs"] == 82_247 - 18
    vc = trace.jobs[trace.jobs.cluster == "2869ce"].reset_index(drop=True)
    alone = replay(Trace(vc, "2869ce", "philly"), servers=128, scheduling="first-fit").jobs
    assert np.array_equal(alone.start.to_numpy(), result.results["2869ce"].jobs.start.to_numpy())
    cli = subprocess.run([*CLI, "replay", str(PHILLY), "--scheduling", "first-fit", "--by-cluster",
                          ",".join(f"{k}:{v}" for k, v in HELIOS.items()), "--json"], capture_output=True, text=True,
                         check=True)
    assert json.loads(cli.stdout)["all"]["mean_waiting"] == out["all"]["mean_waiting"]


def test_by_cluster_refuses_what_it_cannot_honour(tmp_path):
    path = _write(tmp_path, SMALL)
    for extra, flag in ((["--servers", "8"], "--servers"), (["--scheduling", "fcfs,fcfs"], "--scheduling"),
                        (["--scheduling", "fcfs,first-fit", "--aging-after", "5"], "aging_after"),
                        (["--shake", "3"], "--shake must not be given"),            # (it was ignored)
                        (["--resample", "3", "--resample-load", "2"], "--resample, --resample-load must not")):
        out = subprocess.run([*CLI, "replay", str(path), "--by-cluster", "a:4", *extra], capture_output=True,
                             text=True)
        assert out.returncode == 2 and flag in out.stderr and len(out.stderr.strip().splitlines()) == 1
    sizes = _write(tmp_path, "a:4\nb:1\n", "sizes.txt")
    out = subprocess.run([*CLI, "replay", str(path), "--by-cluster", str(sizes)], capture_output=True, text=True,
                         check=True)
    assert "unsized           1 jobs of clusters given no size, skipped: c (1)" in out.stdout


def test_several_rules_by_cluster_in_one_command_equal_one_command_each(tmp_path):
    path = _write(tmp_path, SMALL)
    rules = ["fcfs", "first-fit", "backfill", "sjf", "aging"]
    both = subprocess.run([*CLI, "replay", str(path), "--by-cluster", "a:4,b:1", "--scheduling", ",".join(rules),
                           "--aging-after", "20", "--json"], capture_output=True, text=True, check=True)
    runs = json.loads(both.stdout)["runs"]
    assert [r["scheduling"] for r in runs] == rules
    for rule, run in zip(rules, runs, strict=True):
        extra = ["--aging-after", "20"] if rule == "aging" else []
        one = subprocess.run([*CLI, "replay", str(path), "--by-cluster", "a:4,b:1", "--scheduling", rule, *extra,
                              "--json"], capture_output=True, text=True, check=True)
        alone = json.loads(one.stdout)
        assert alone["mode"] == "by-cluster" and run == {k: v for k, v in alone.items() if k != "mode"}
    text = subprocess.run([*CLI, "replay", str(path), "--by-cluster", "a:4,b:1", "--scheduling", "fcfs,sjf"],
                          capture_output=True, text=True, check=True).stdout
    assert text.count("cluster ") >= 2 and ", fcfs, load scale" in text and ", sjf, load scale" in text


def test_a_shaken_log_moves_each_submission_within_its_bound_and_keeps_every_job():
    from barrier_queues.replay import shake

    rng = np.random.default_rng(3)
    n = 500
    jobs = {"job_id": np.arange(n), "submit": np.arange(n) * 100.0, "tasks": rng.integers(1, 9, n),
            "runtime": rng.uniform(1, 300, n), "barrier": True, "estimate": np.nan}
    import pandas as pd

    trace = Trace(pd.DataFrame(jobs), "synthetic", "csv", servers=8)
    shaken = shake(trace, 30.0, np.random.default_rng(1))
    moved = shaken.jobs.sort_values("job_id")
    assert (np.abs(moved.submit.to_numpy() - trace.jobs.submit.to_numpy()) <= 30.0).all()
    assert (np.diff(shaken.jobs.submit.to_numpy()) >= 0).all()
    assert np.array_equal(moved.runtime.to_numpy(), trace.jobs.runtime.to_numpy())


def test_a_grid_on_shaken_logs_gives_intervals_and_rank_agreement():
    """Submissions 100 s apart moved by at most 1e-6 s: no job's order or start changes, so every shaken log
    gives the log's metrics, every point keeps its rank and the best stays the best."""
    import pandas as pd

    from barrier_queues.replay import shaken_grid

    rng = np.random.default_rng(5)
    n = 400
    trace = Trace(pd.DataFrame({"job_id": np.arange(n), "submit": np.arange(n) * 20.0,
                                "tasks": rng.choice([1, 2, 8], n), "runtime": rng.uniform(1, 200, n),
                                "barrier": True, "estimate": np.nan}), "synthetic", "csv", servers=8)
    table, info = shaken_grid(trace, {"scheduling": ["fcfs", "first-fit", "backfill"]}, shakes=4, by=1e-6)
    for m in ("mean_waiting", "mean_bounded_slowdown"):
        assert np.allclose(table[f"{m}_shaken"], table[m], rtol=1e-6)
        assert (table[f"{m}_rank_kept"] == 1.0).all() and info["best_kept"][m] == 1.0
    wide, wide_info = shaken_grid(trace, {"scheduling": ["fcfs", "first-fit", "backfill"]}, shakes=4, by=15.0, seed=2)
    again, _ = shaken_grid(trace, {"scheduling": ["fcfs", "first-fit", "backfill"]}, shakes=4, by=15.0, seed=2)
    pd.testing.assert_frame_equal(wide, again)                      # one seed, one answer
    assert ((wide.mean_waiting_shaken_low <= wide.mean_waiting_shaken)
            & (wide.mean_waiting_shaken <= wide.mean_waiting_shaken_high)).all()


@pytest.mark.skipif(TRACES is None or not (TRACES / "KTH-SP2.swf.gz").is_file(),
                    reason="the logs' folder (BARRIER_QUEUES_TRACES; make sets it) is not here")
def test_the_manuals_shaken_replay_says_what_the_manual_says():
    """The manual: on KTH-SP2 at load scale 1.2 with ten shaken copies, first-fit stays the worst on every copy by
    mean waiting, and the log's best by mean waiting is not the best on every copy."""
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "book" / "reference" / "manual.md").read_text()
    line = next(x for x in readme.splitlines() if "--shake 10" in x)
    args = shlex.split(line.removeprefix("$ barrier-queues "))
    args[1] = str(TRACES / args[1])
    out = json.loads(subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, check=True).stdout)
    rows = {r["scheduling"]: r for r in out["rows"]}
    assert rows["first-fit"]["mean_waiting_rank_kept"] == 1.0
    assert rows["first-fit"]["mean_waiting_shaken_low"] > max(rows[d]["mean_waiting_shaken_high"]
                                                              for d in ("backfill", "aging"))
    assert out["shaken"]["best_kept"]["mean_waiting"] < 1.0


def test_a_window_of_wall_clock_time_keeps_its_jobs_and_counts_from_its_start(tmp_path):
    """traces.window: the jobs submitted from start to end (both included), their submit times from start; a log
    without dates, an end before its start, a malformed time and an empty window are refused in one line."""
    from barrier_queues.traces import window

    trace = read_trace(_write(tmp_path, SMALL))
    assert trace.origin == "2017-10-01 00:00:00"
    part = window(trace, "2017-10-01 00:00:05", "2017-10-01 00:00:10")
    assert part.jobs.submit.tolist() == [0.0, 5.0] and part.jobs.tasks.tolist() == [4, 2]
    assert part.origin == "2017-10-01 00:00:05" and part.jobs.cluster.tolist() == ["a", "a"]
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    for args, message in [((read_trace(swf), "2017-10-01 00:00:00", "2017-10-02 00:00:00"), "no wall-clock origin"),
                          ((trace, "2017-10-01 00:00:10", "2017-10-01 00:00:05"), "end must be after start"),
                          ((trace, "2017-10-01", "2017-10-02 00:00:00"), "start must be YYYY-MM-DD HH:MM:SS"),
                          ((trace, "2017-11-01 00:00:00", "2017-11-02 00:00:00"), "has no job submitted")]:
        with pytest.raises(bq.ParameterError, match=message):
            window(*args)


@pytest.mark.skipif(PHILLY is None or not PHILLY.exists(), reason="the Philly log (BARRIER_QUEUES_TRACES)")
def test_the_helios_window_of_the_philly_log():
    """The Helios study's window (2017-10-01 to 2017-11-30 23:59): 68,510 of the extract's 82,247 jobs, the last
    submitted within the window's 61 days; replayed per VC on nodes of 8, SJF waits less than FIFO over all."""
    from barrier_queues.traces import window

    win = window(read_trace(PHILLY), "2017-10-01 00:00:00", "2017-11-30 23:59:00")
    assert len(win.jobs) == 68_510 and 0 <= win.jobs.submit.min() and win.jobs.submit.max() <= 61 * 86400 - 60
    wait = {r: replay_by_cluster(win, HELIOS, scheduling=r, node_size=8).summary()["all"]["mean_waiting"]
            for r in ("fcfs", "sjf")}
    assert wait["sjf"] < wait["fcfs"]
