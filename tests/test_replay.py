"""Trace replay: the scheduler room's kernel on a trace against its plain reference, the oracles of the model,
the readers' checks, the command line, and the published numbers of the KTH-SP2 log (when the logs' folder is
there)."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import barrier_queues as bq
from barrier_queues.inputs import draw_jobs
from barrier_queues.reference import mgc_fifo_starts
from barrier_queues.replay import DISCIPLINES, replay, trace_metrics, trace_system
from barrier_queues.runs import run_inputs
from barrier_queues.traces import Trace, read_swf, read_trace, trace_from_event_log

ROOT = Path(__file__).resolve().parents[1]
#: the folder of the real logs: one setting (make's TRACES, exported as this variable)
TRACES = Path(os.environ.get("BARRIER_QUEUES_TRACES", "")) if os.environ.get("BARRIER_QUEUES_TRACES") else None


def _rigid_trace(submit, k, run, estimate=None, servers=None) -> Trace:
    n = len(submit)
    jobs = pd.DataFrame({"job_id": np.arange(1, n + 1), "submit": np.asarray(submit, dtype=float),
                         "tasks": np.asarray(k, dtype=np.int64), "runtime": np.asarray(run, dtype=float),
                         "barrier": True,
                         "estimate": np.asarray(run if estimate is None else estimate, dtype=float)})
    return Trace(jobs, "test", "test", servers)


def _random_jobs(rng, n, s, powers=False):
    submit = np.sort(np.round(rng.exponential(1.0, n).cumsum() * rng.choice([1.0, 0.3]), 1))
    k = (2 ** rng.integers(0, int(np.log2(s)) + 1, n) if powers else rng.integers(1, s + 1, n)).astype(np.int64)
    run = np.round(rng.exponential(2.0, n), 1) + 0.1
    return submit, k, run, run + np.round(rng.exponential(1.0, n), 1)


@pytest.mark.parametrize("seed", range(40))
def test_the_kernel_equals_the_plain_reference_bit_for_bit(seed):
    """Random rigid traces (ties in submit and end times by rounding to 0.1), every discipline, exact and
    overestimated predictions: the room's kernel with one release per rigid job gives each job the start,
    departure and work of the plain reference fed k equal task times per job."""
    from barrier_queues.schedulers import waitlist

    rng = np.random.default_rng(seed)
    s = int(rng.choice([1, 2, 4, 8, 5]))
    submit, k, run, pred = _random_jobs(rng, 400, s, powers=s in (1, 2, 4, 8))
    for discipline in DISCIPLINES:
        if discipline == "server-filling" and s not in (1, 2, 4, 8):
            continue
        for estimates in ("exact", "requested") if discipline in ("backfill", "sjf", "sjf-first-fit") else ("exact",):
            system = trace_system(_rigid_trace(submit, k, run, pred), s, discipline, estimates)
            inputs = system.trace.inputs(estimates)
            kernel = waitlist.run_inputs(system, inputs)
            full = system.trace.expanded_inputs()
            ref = waitlist.reference(system, full, predictions=inputs["predicted"] if estimates != "exact" else None)
            for key in ("start", "departure"):
                assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), (discipline, key)
            assert np.array_equal(np.asarray(kernel["work"]), k * run), discipline


def test_a_rigid_trace_runs_as_k_equal_task_times_in_the_room():
    """The room's one release per rigid job is a representation: the same trace as k equal task times per job
    through the room's general path (k releases per job) starts every job at the same instant."""
    from barrier_queues.schedulers import waitlist

    rng = np.random.default_rng(8)
    submit, k, run, _ = _random_jobs(rng, 2000, 16, powers=True)
    for discipline in DISCIPLINES:
        system = trace_system(_rigid_trace(submit, k, run), 16, discipline)
        rigid = waitlist.run_inputs(system, system.trace.inputs())
        general = waitlist.run_inputs(system, system.trace.expanded_inputs())
        assert np.array_equal(np.asarray(rigid["start"]), np.asarray(general["start"])), discipline


def test_single_task_jobs_are_the_fifo_multiserver_queue_under_every_discipline():
    """Every k = 1: each discipline is the FIFO G/G/s queue, whose starts the Lindley-type recursion over the
    s earliest-free workers gives (an independent computation)."""
    rng = np.random.default_rng(3)
    submit = np.sort(rng.exponential(0.3, 3000).cumsum())
    run = rng.exponential(1.0, 3000) + 1e-3
    expected = np.array(mgc_fifo_starts(submit, run, 4))
    for discipline in ("fcfs", "first-fit", "backfill", "server-filling"):
        out = replay(_rigid_trace(submit, np.ones(3000), run), servers=4, scheduling=discipline)
        assert np.allclose(out.jobs.start, expected, rtol=0, atol=1e-9), discipline


def test_jobs_one_at_a_time_never_wait_and_whole_machine_jobs_ignore_the_discipline():
    rng = np.random.default_rng(4)
    run = rng.uniform(0.5, 1.0, 200)
    spaced = np.arange(200) * 2.0
    for discipline in DISCIPLINES:
        assert (replay(_rigid_trace(spaced, np.full(200, 4), run), servers=8,
                       scheduling=discipline).jobs.eval("start - submit") == 0).all()
    packed = np.sort(rng.exponential(0.2, 200).cumsum())
    starts = [replay(_rigid_trace(packed, np.full(200, 8), run), servers=8, scheduling=d).jobs.start.to_numpy()
              for d in ("fcfs", "first-fit", "backfill")]
    assert np.array_equal(starts[0], starts[1]) and np.array_equal(starts[0], starts[2])


def test_a_replay_of_a_simulated_runs_own_jobs_gives_its_starts():
    """Per-task times (1 barrier, plain and barrier jobs): the trace of a drawn workload replays to the starts
    the simulator's kernel gives on the same inputs, under every discipline of the waiting list."""
    for discipline in ("fcfs", "first-fit", "backfill"):
        system = bq.BarrierSystem(servers=8, tasks_pmf={2: 0.5, 4: 0.5}, barrier_fraction=0.7, arrival_rate=1.2,
                                  scheduling=discipline)
        inputs = draw_jobs(system, 2000, np.random.default_rng(5))
        expected = run_inputs(system, inputs)
        jobs = pd.DataFrame({"job_id": np.arange(2000), "submit": inputs["arrival"], "tasks": inputs["tasks"],
                             "runtime": np.nan, "barrier": inputs["barrier"], "estimate": np.nan})
        trace = Trace(jobs, "drawn", "test", 8, task_times=inputs["times"], task_offsets=inputs["offsets"])
        out = replay(trace, scheduling=discipline)
        assert np.array_equal(out.jobs.start.to_numpy(), np.asarray(expected["start"]))
        assert np.array_equal(out.jobs.end.to_numpy(), np.asarray(expected["departure"]))


def test_bounded_slowdown_utilization_and_trimming_by_hand():
    """Three jobs on 2 workers, fcfs: starts 0, 10, 12; bounded slowdown max(1, (w + r) / max(r, 10))."""
    out = replay(_rigid_trace([0.0, 1.0, 2.0], [2, 1, 1], [10.0, 2.0, 30.0]), servers=2)
    assert out.jobs.start.tolist() == [0.0, 10.0, 10.0]
    m = out.metrics()
    assert m["mean_bounded_slowdown"] == pytest.approx((1.0 + (9 + 2) / 10 + (8 + 30) / 30) / 3)
    assert m["max_waiting"] == 9.0 and m["makespan"] == 40.0
    assert m["utilization"] == pytest.approx((20 + 2 + 30) / (2 * 40))
    trimmed = trace_metrics(out.jobs, 2, trim=True)
    assert trimmed["measured_jobs"] == 0 and trimmed["mean_waiting"] is None   # job 1 trimmed, the others end late
    assert trimmed["jobs"] == 3                                      # every job replayed, measured or not
    assert [c["class"] for c in m["classes"]] == ["k = 1", "k >= 2"]


SWF = """; Version: 2.2
; MaxProcs: 8
    1        0    2   100    4   -1   -1    4   200   -1  1  1  1  -1 -1 -1 -1 -1
    2       10    0    50   -1   -1   -1    2    40   -1  1  1  1  -1 -1 -1 -1 -1
    3       10    0     0    2   -1   -1    2    40   -1  1  1  1  -1 -1 -1 -1 -1
    4       20    0    30   16   -1   -1   16    40   -1  1  1  1  -1 -1 -1 -1 -1
    5       -5    0    30    1   -1   -1    1    40   -1  1  1  1  -1 -1 -1 -1 -1
    6       30    0    30    3   -1   -1   -1    40   -1  1  1  1  -1 -1 -1 -1 -1
"""


def test_the_swf_reader_maps_fields_and_counts_every_skipped_job(tmp_path):
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(SWF.encode()))
    trace = read_trace(path)
    assert trace.servers == 8 and trace.format == "swf"
    assert trace.skipped == {"runtime <= 0": 1, "submit < 0": 1, "wider than the machine (k > 8)": 1}
    assert trace.jobs.job_id.tolist() == [1, 2, 6] and trace.jobs.tasks.tolist() == [4, 2, 3]
    assert trace.jobs.estimate.tolist() == [200.0, 50.0, 40.0]                  # 40 < 50 raised to the runtime
    assert any("1 requested times below the runtime" in n for n in trace.notes)
    assert read_swf(path, width="allocated").jobs.tasks.tolist() == [4, 2, 3]
    bad = tmp_path / "bad.swf"
    bad.write_text(SWF.replace("    2       10    0    50", "    2       1x    0    50"))
    with pytest.raises(bq.ParameterError, match="line 4: field 2 must be a number"):
        read_swf(bad)
    short = tmp_path / "short.swf"
    short.write_text(SWF.replace("  1  1  1  -1 -1 -1 -1 -1\n    2 ", "\n    2 ", 1))
    with pytest.raises(bq.ParameterError, match="line 3: an SWF job line has 18 fields"):
        read_swf(short)


def test_the_csv_reader_and_its_errors(tmp_path):
    good = tmp_path / "t.csv"
    good.write_text("job_id,submit,tasks,runtime,estimate\n7,0,2,5,10\n8,1,1,3,2\n")
    trace = read_trace(good)
    assert trace.rigid and trace.jobs.estimate.tolist() == [10.0, 3.0]
    out = replay(trace, servers=2, scheduling="backfill", estimates="requested")
    assert out.jobs.start.tolist() == [0.0, 5.0]
    for text, message in (("submit,tasks,runtime\n0,2,-1\n", "row 2: runtime must be a finite number > 0"),
                          ("submit,tasks,runtime\n0,1.5,1\n", "row 2: tasks must be a whole number"),
                          ("submit,tasks,runtime,colour\n0,1,1,red\n", r"unknown columns \['colour'\]"),
                          ("submit,tasks\n0,1\n", "must have columns submit, tasks and runtime or task_times"),
                          ("submit,tasks,task_times,barrier\n0,2,1;x,false\n", "row 2: task_times must be numbers")):
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(bq.ParameterError, match=message):
            read_trace(bad)


def test_a_spark_event_log_is_a_trace_of_measured_tasks():
    log = next((ROOT / "tests" / "data" / "spark-run-s2-k2" / "eventlog").iterdir())
    trace = trace_from_event_log(log)
    assert not trace.rigid and (trace.jobs.tasks == 2).all() and trace.jobs.barrier.all()
    out = replay(trace, servers=2, scheduling="fcfs")
    assert (out.jobs.start >= out.jobs.submit).all() and len(out.jobs) == len(trace.jobs)


def test_the_command_line_replays_writes_jobs_and_refuses_bad_input(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(SWF)
    cmd = [sys.executable, "-m", "barrier_queues.cli", "replay", str(path)]
    doc = json.loads(subprocess.run(cmd + ["--scheduling", "backfill", "--json", "--jobs-out",
                                           str(tmp_path / "jobs.csv")], capture_output=True, text=True,
                                    check=True).stdout)
    assert doc["jobs"] == 3 and doc["trace"]["skipped"]["runtime <= 0"] == 1 and doc["servers"] == 8
    rows = pd.read_csv(tmp_path / "jobs.csv")
    assert list(rows.columns) == ["job_id", "submit", "start", "end", "tasks"] and rows.job_id.tolist() == [1, 2, 6]
    again = subprocess.run(cmd + ["--jobs-out", str(tmp_path / "jobs.csv")], capture_output=True, text=True)
    assert again.returncode == 2 and "exists" in again.stderr
    for extra, message in ((["--servers", "0"], "servers"), (["--scheduling", "server-filling"], "power of two"),
                           (["--size-classes", "a"], "size-classes")):
        out = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    text = subprocess.run(cmd + ["--servers", "3"], capture_output=True, text=True, check=True).stdout
    assert "2 jobs replayed" in text and "1 wider than the cluster (k > 3)" in text


@pytest.mark.skipif(TRACES is None or not (TRACES / "KTH-SP2.swf.gz").is_file(),
                    reason="the logs' folder (BARRIER_QUEUES_TRACES; make sets it) is not here")
def test_the_published_numbers_of_the_kth_sp2_log():
    """The SC'15 study's metrics of EASY on KTH-SP2 (28,481 jobs, 100 processors): exact runtimes: mean bounded
    slowdown 71.72, mean flow 15,187.6 s, max bounded slowdown 10,017.2; the users' requested times: 92.58
    (within 0.5 %; the rest: the study's simulator decides after each event of an instant, see the chapter)."""
    trace = read_trace(TRACES / "KTH-SP2.swf.gz")
    assert len(trace.jobs) == 28_481 and trace.servers == 100 and not trace.skipped
    exact = replay(trace, scheduling="backfill").metrics()
    assert exact["mean_bounded_slowdown"] == pytest.approx(71.72, abs=0.005)
    assert exact["mean_sojourn"] == pytest.approx(15_187.6, abs=0.05)
    assert exact["max_bounded_slowdown"] == pytest.approx(10_017.2, abs=0.05)
    requested = replay(trace, scheduling="backfill", estimates="requested").metrics()
    assert requested["mean_bounded_slowdown"] == pytest.approx(92.58, rel=0.005)


def test_a_trace_as_the_workload_of_a_grid(tmp_path):
    """replay_grid (and the command line with comma-separated values): one row per combination, each the same
    metrics as the replay alone; a value listed twice refused."""
    from barrier_queues.replay import replay_grid

    path = tmp_path / "t.swf"
    path.write_text(SWF)
    trace = read_trace(path)
    table = replay_grid(trace, {"servers": [8, 12], "scheduling": ["fcfs", "backfill"], "load_scale": 1.5})
    assert len(table) == 4 and table.servers.tolist() == [8, 8, 12, 12]
    for row in table.itertuples():
        alone = replay(trace, servers=row.servers, scheduling=row.scheduling, load_scale=1.5).metrics()
        assert row.mean_bounded_slowdown == alone["mean_bounded_slowdown"]
    with pytest.raises(bq.ParameterError, match="must list distinct values"):
        replay_grid(trace, {"scheduling": ["fcfs", "fcfs"]})
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "replay", str(path), "--scheduling",
                          "fcfs,first-fit", "--servers", "8,12", "--json"], capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)["rows"]
    assert [(r["servers"], r["scheduling"]) for r in rows] == [(8, "fcfs"), (8, "first-fit"), (12, "fcfs"),
                                                                (12, "first-fit")]



def _random_swf(path, n=200, seed=3):
    rng = np.random.default_rng(seed)
    lines, t = ["; MaxProcs: 16"], 0
    for j in range(1, n + 1):
        t += int(rng.integers(0, 40))
        run, k = int(rng.integers(1, 300)), int(rng.integers(1, 17))
        lines.append(f"{j} {t} 0 {run} {k} -1 -1 {k} {run * 2} -1 1 1 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")


def test_a_trace_as_the_workload_of_a_sweep_folder(tmp_path, monkeypatch):
    """sweep --trace: the folder's table is replay_grid's rows; a rerun with more values replays only the new
    points; another trace content, a grid losing points, a folder of a simulated sweep and options that do not
    apply to a trace are refused in one line (exit 2), leaving the folder as it was."""
    import barrier_queues.replay as replay_module
    from barrier_queues.replay import replay_grid
    from barrier_queues.sweep import trace_sweep

    log = tmp_path / "t.swf"
    _random_swf(log)
    out = tmp_path / "sweep"
    first = trace_sweep(log, {"scheduling": ["fcfs", "first-fit", "backfill"], "load_scale": [1.0, 1.5]}, out)
    grid = replay_grid(read_trace(log), {"scheduling": ["fcfs", "first-fit", "backfill"], "load_scale": [1.0, 1.5]})
    pd.testing.assert_frame_equal(first.drop(columns="point"), grid.drop(columns="point"), check_dtype=False)
    on_disk = pd.read_csv(out / "results.csv")
    assert on_disk.mean_bounded_slowdown.tolist() == first.mean_bounded_slowdown.tolist()
    calls = []
    real = replay_module.replay_grid
    monkeypatch.setattr(replay_module, "replay_grid", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    grown = trace_sweep(log, {"servers": [16, 20], "scheduling": ["fcfs", "first-fit", "backfill"],
                              "load_scale": [1.0, 1.5]}, out)
    assert len(grown) == 12 and len(calls) == 6 and all(c["servers"] == 20 for c in calls)
    assert grown[grown.servers == 16].mean_waiting.tolist() == first.mean_waiting.tolist()
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cli = [sys.executable, "-m", "barrier_queues.cli", "sweep"]
    refusals = [
        (["--trace", str(log), "--scheduling", "fcfs", "--out", str(out)], "not in this grid"),
        (["--trace", str(log), "--servers", "16,20", "--scheduling", "fcfs,first-fit,backfill", "--load-scale",
          "1,1.5", "--bsld-tau", "60", "--out", str(out)], "differing: bsld_tau"),
        (["--trace", str(log), "--jobs", "5", "--out", str(tmp_path / "new")], "--jobs must not be given"),
        (["--trace", str(log), "--tasks", "4", "--out", str(tmp_path / "new")], "tasks must not be given"),
        (["-s", "4", "-k", "2", "--utilization", "0.5", "--load-scale", "2", "--out", str(tmp_path / "new")],
         "--load-scale must come with --trace"),
    ]
    for args, message in refusals:
        r = subprocess.run(cli + args, capture_output=True, text=True)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    changed = tmp_path / "t2.swf"
    _random_swf(changed, seed=4)
    with pytest.raises(bq.ParameterError, match="differing: trace_md5"):
        trace_sweep(changed, {"servers": [16, 20]}, out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "new").exists()
    wide = tmp_path / "wide.swf"                                            # one job of 4 processors
    wide.write_text("; MaxProcs: 8\n1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(bq.ParameterError, match="servers must be at least the width"):
        trace_sweep(wide, {"servers": [2]}, tmp_path / "refused")           # refused at its first point
    assert not (tmp_path / "refused").exists()
    (tmp_path / "mine").mkdir()                                            # a folder the user made stays
    with pytest.raises(bq.ParameterError, match="servers must be at least the width"):
        trace_sweep(wide, {"servers": [2]}, tmp_path / "mine")
    assert (tmp_path / "mine").is_dir()
    r = subprocess.run(cli + ["--trace", str(log), "--scheduling", "fcfs,backfill", "--json", "--out",
                              str(tmp_path / "j")], capture_output=True, text=True, check=True)
    rows = json.loads(r.stdout)["rows"]
    assert [x["scheduling"] for x in rows] == ["fcfs", "backfill"] and rows[1]["servers"] == 16


def test_a_simulated_sweep_lists_disciplines(tmp_path):
    """--scheduling takes a comma-separated list in a sweep of simulated systems too: one point each."""
    r = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "8", "--tasks-pmf",
                        "2:0.5,6:0.5", "--utilization", "0.5", "--scheduling", "fcfs,first-fit", "--jobs", "3000",
                        "--seed", "1", "--json", "--out", str(tmp_path / "s")], capture_output=True, text=True,
                       check=True)
    rows = json.loads(r.stdout)["rows"]
    assert [x["scheduling"] for x in rows] == ["fcfs", "first-fit"]
    assert rows[0]["mean_waiting"] != rows[1]["mean_waiting"]

# --------------------------------------------------------------------------------------------------
# failures on a trace's jobs (Appendix B, section 5 on section 7's jobs)

@pytest.mark.parametrize("seed", range(12))
def test_with_failures_so_rare_that_none_strikes_the_replay_is_the_plain_one(seed):
    """The waiting-list scheduler with failures on rigid jobs (2 barriers) starts every job when the rigid
    replay kernel does, under every discipline: sections 4 and 7 agree on the same jobs."""
    rng = np.random.default_rng(seed)
    s = int(rng.choice([2, 4, 8]))
    submit, k, run, _ = _random_jobs(rng, 400, s, powers=True)
    trace = _rigid_trace(submit, k, run, servers=s)
    for discipline in ("fcfs", "first-fit", "backfill"):
        plain = replay(trace, scheduling=discipline)
        rare = replay(trace, scheduling=discipline, failure_rate=1e-12, seed=seed)
        assert (rare.jobs.attempts == 1).all() and not rare.jobs.aborted.any()
        assert np.array_equal(plain.jobs.start.to_numpy(), rare.jobs.start.to_numpy()), discipline
        assert np.array_equal(plain.jobs.end.to_numpy(), rare.jobs.end.to_numpy()), discipline


@pytest.mark.parametrize("discipline", ["fcfs", "first-fit", "backfill"])
def test_a_replay_with_failures_equals_the_plain_reference_job_by_job(discipline):
    from barrier_queues.replay import failure_inputs
    from barrier_queues.schedulers import waitlist

    rng = np.random.default_rng(5)
    submit, k, run, _ = _random_jobs(rng, 500, 8)
    trace = _rigid_trace(submit, k, run, servers=8)
    system = trace_system(trace, 8, discipline, failure_rate=0.05, max_attempts=3, resubmit_delay=0.5)
    inputs = failure_inputs(system, seed=9, raw=True)
    kernel, ref = waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs)
    for key in ("start", "departure", "work", "attempts", "aborted"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key
    out = replay(trace, scheduling=discipline, failure_rate=0.05, max_attempts=3, resubmit_delay=0.5, seed=9)
    assert np.array_equal(out.jobs.start.to_numpy(), np.asarray(kernel["start"]))
    assert out.jobs.aborted.sum() == np.asarray(ref["aborted"]).sum() > 0


def test_one_job_at_a_time_with_failures_meets_dalys_wall_time():
    """Jobs of k = 4 tasks of runtime r = 2, far apart, on 4 workers, failure rate 0.05 per task, no cap, no
    delay, identical work without checkpoints: the execution of a job is M (e^(r/M) - 1) with M = 1/(k gamma)
    (Daly with one segment), its attempts e^(k gamma r) on average (geometric)."""
    from barrier_queues.failures import daly_wall_time

    n, k, r, gamma = 20_000, 4, 2.0, 0.05
    trace = _rigid_trace(np.arange(n) * 1000.0, [k] * n, [r] * n, servers=k)
    out = replay(trace, failure_rate=gamma, seed=3)
    execution = out.jobs.runtime.to_numpy()
    exact = daly_wall_time(r, r, 0.0, 0.0, 1 / (k * gamma))
    half = 1.96 * execution.std(ddof=1) / np.sqrt(n)
    assert abs(execution.mean() - exact) < half, (execution.mean(), exact, half)
    attempts = out.jobs.attempts.to_numpy()
    half = 1.96 * attempts.std(ddof=1) / np.sqrt(n)
    assert abs(attempts.mean() - np.exp(k * gamma * r)) < half
    assert (out.jobs.start == out.jobs.submit).all()              # nothing else runs: no job waits
    m = out.metrics()
    assert m["aborted_jobs"] == 0 and m["mean_attempts"] == pytest.approx(attempts.mean())


def test_failures_on_the_command_line(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(SWF)
    cmd = [sys.executable, "-m", "barrier_queues.cli", "replay", str(path)]
    doc = json.loads(subprocess.run(cmd + ["--failure-rate", "0.2", "--max-attempts", "2", "--seed", "4",
                                           "--json"], capture_output=True, text=True, check=True).stdout)
    assert doc["failures"] == {"failure_rate": 0.2, "max_attempts": 2, "resubmit_delay": 0.0,
                               "retry_work": "identical", "seed": 4}
    assert doc["jobs"] == 3 and doc["mean_attempts"] >= 1 and 0 <= doc["aborted_jobs"] <= 3
    again = json.loads(subprocess.run(cmd + ["--failure-rate", "0.2", "--max-attempts", "2", "--seed", "4",
                                             "--json"], capture_output=True, text=True, check=True).stdout)
    assert again == doc                                             # one seed, one answer
    for extra, message in ((["--max-attempts", "2"], "must be None without failure_rate"),
                           (["--failure-rate", "0.2", "--estimates", "requested"], "estimates must be 'exact'"),
                           (["--failure-rate", "-1"], "failure-rate"),
                           (["--failure-rate", "0.2", "--scheduling", "server-filling", "--servers", "16"],
                            "with failure_rate (got 'server-filling')")):
        out = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_the_pyss_tables_are_the_record():
    """The Benchmarks page's tables beside pyss print data/peers/pyss.json (benchmarks/replay_peer.py): the speed
    table's KTH-SP2 rows and the job-by-job table of every log, cell for cell; the record's starts add up."""
    root = Path(__file__).resolve().parents[1]
    record = json.loads((root / "data" / "peers" / "pyss.json").read_text())
    readme = (root / "book" / "reference" / "benchmarks.md").read_text()
    rows = {(r["log"].split(".swf")[0], r["pyss"]): r for r in record["rows"]}
    for r in record["rows"]:
        assert r["same_start"] + r["explained_by_event_order"] + r["unexplained"] == r["jobs"]
        assert r["unexplained"] == 0
    speed = {"fcfs": "fcfs_scheduler", "EASY, exact runtimes": "perfect_easy_backfill_scheduler",
             "EASY, requested times": "easy_backfill_scheduler"}
    seen = []
    for line in readme.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells and cells[0] in speed and len(cells) == 5:
            seen.append(cells[0])
            r = rows[("KTH-SP2", speed[cells[0]])]
            assert float(cells[1]) == r["pyss_seconds"] and float(cells[2]) == r["ours_seconds"]
            assert cells[4].startswith(f"{r['same_start']:,}")
    assert sorted(seen) == sorted(speed)
    table = readme[readme.index("| log | fcfs | clairvoyant EASY | first-fit |"):]
    table = table[:table.index("\n\n")].splitlines()[2:]
    names = ["KTH-SP2", "NASA-iPSC-1993-3.1-cln", "CEA-Curie-sample", "LANL-CM5"]
    assert len(table) == len(names)
    for name, line in zip(names, table, strict=True):
        cells = [c.strip() for c in line.split("|")[1:-1]]
        for cell, scheduler in zip(cells[1:], ("fcfs_scheduler", "perfect_easy_backfill_scheduler",
                                               "list_scheduler"), strict=True):
            r = rows.get((name, scheduler))
            if r is None:
                assert cell == "not run"
                continue
            assert cell.startswith(f"{r['same_start']:,} of {r['jobs']:,}")
            if r["explained_by_event_order"]:
                assert f"({r['explained_by_event_order']:,}: pyss decides after each event)" in cell


def test_a_starving_class_is_named_in_the_replay_its_json_and_grid_rows(tmp_path):
    """A gang of the whole machine behind a stream of one-task jobs under first-fit starts only after the last
    submission: its class counts the late start and is named starving in the summary, the text and the grid
    rows; under fcfs nothing starves (its waiting only grows as the gang waits its turn)."""
    import json
    import subprocess
    import sys

    from barrier_queues.replay import replay, replay_grid
    from barrier_queues.traces import read_trace

    rows = ["submit,tasks,runtime"] + [f"{float(i)},1,3.0" for i in range(200)]
    rows.insert(11, "10.5,4,1.0")
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    trace = read_trace(path)
    out = replay(trace, servers=4, scheduling="first-fit").summary()
    wide = next(c for c in out["classes"] if c["class"] == "k >= 4")
    assert wide["late_starts"] == 1 and wide["starving"] and out["starving_classes"] == ["k >= 4"]
    assert out["late_starts"] == 1
    fifo = replay(trace, servers=4, scheduling="fcfs").summary()
    assert fifo["late_starts"] == 0 and fifo["starving_classes"] == []
    table = replay_grid(trace, {"servers": 4, "scheduling": ["fcfs", "first-fit"]})
    assert list(table.starving_classes) == ["", "k >= 4"] and list(table.late_starts) == [0, 1]
    cli = [sys.executable, "-m", "barrier_queues.cli", "replay", str(path), "--servers", "4", "--scheduling",
           "first-fit"]
    text = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "starving          k >= 4" in text
    assert json.loads(subprocess.run([*cli, "--json"], capture_output=True, text=True,
                                     check=True).stdout)["starving_classes"] == ["k >= 4"]
