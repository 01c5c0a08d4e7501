"""Analysis of Spark benchmark runs, on a real harness run (tests/data) and synthetic data."""

import csv
import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard

from barrier_queues import ParameterError
from barrier_queues import spark_analysis as sa
from barrier_queues.eventlog import EventLogError
from barrier_queues.overhead import OverheadModel
from barrier_queues.spark_bench import archive_run

RUN = Path(__file__).parent / "data" / "spark-run-s2-k2"


@pytest.fixture(scope="module")
def run():
    return sa.load_run(RUN)


def _raw_csv(name):
    with gzip.open(RUN / f"{name}.csv.gz", "rt") as f:
        return list(csv.DictReader(f))


def _raw_events():
    log = next((RUN / "eventlog").glob("*.zstd"))
    return [json.loads(line) for line in zstandard.ZstdDecompressor().decompress(log.read_bytes()).splitlines()]


def test_jobs_join_harness_and_log_on_one_clock(run):
    assert len(run.jobs) == 8 and list(run.jobs.tag) == [str(i) for i in range(8)]
    assert (run.jobs.waiting >= 0).all() and (run.jobs.execution > 0).all()
    assert np.allclose(run.jobs.sojourn, run.jobs.waiting + run.jobs.execution)
    # independent: the harness's epoch submission and Spark's epoch-ms launch, straight from the files
    events = _raw_events()
    props = {e["Job ID"]: e["Properties"]["bq.job"] for e in events if e["Event"] == "SparkListenerJobStart"}
    stage_job = {s: e["Job ID"] for e in events if e["Event"] == "SparkListenerJobStart" for s in e["Stage IDs"]}
    launch = {}
    for e in events:
        if e["Event"] == "SparkListenerTaskStart":
            tag = props[stage_job[e["Stage ID"]]]
            launch[tag] = min(launch.get(tag, np.inf), e["Task Info"]["Launch Time"] / 1000)
    for row in _raw_csv("arrivals"):
        if row["warmup"] == "False":
            expected = launch[row["tag"]] - float(row["submitted"])
            got = run.jobs.set_index("tag").loc[row["tag"], "waiting"]
            assert got == pytest.approx(expected, abs=1e-6)


def test_python_startup_is_harness_start_minus_spark_launch(run):
    events = _raw_events()
    props = {e["Job ID"]: e["Properties"]["bq.job"] for e in events if e["Event"] == "SparkListenerJobStart"}
    stage_job = {s: e["Job ID"] for e in events if e["Event"] == "SparkListenerJobStart" for s in e["Stage IDs"]}
    launch = {(props[stage_job[e["Stage ID"]]], e["Task Info"]["Index"]): e["Task Info"]["Launch Time"] / 1000
              for e in events if e["Event"] == "SparkListenerTaskStart"}
    expected = sorted(float(r["start"]) - launch[(r["tag"], int(r["partition"]))]
                      for r in _raw_csv("tasks") if not r["tag"].startswith("warmup"))
    got = sorted(sa.python_startup(run))
    assert len(got) == 16 and np.allclose(got, expected, atol=1e-6)
    assert 0 < min(got) and max(got) < 1.0        # tens to hundreds of milliseconds, as SPARK.md measured


def test_sync_delays_match_a_plain_loop_and_spark_polling(run):
    d = sa.sync_delays(run)
    rows = [r for r in _raw_csv("tasks") if not r["tag"].startswith("warmup")]
    assert len(d) == len(rows) == 16
    for tag in {r["tag"] for r in rows}:
        mine = [r for r in rows if r["tag"] == tag]
        last = max(float(r["sync_arrive"]) for r in mine)
        for r in mine:
            got = d[(d.tag == tag) & (d.partition == int(r["partition"]))].iloc[0]
            assert got.excess == pytest.approx(float(r["sync_release"]) - last, abs=1e-6)
            lag = last - float(r["sync_arrive"])
            assert got.predicted == pytest.approx(1.0 - lag % 1.0, abs=1e-6)
    tests = sa.sync_delay_tests(d)
    # measured on Spark 4.3.0: every task released within 50 ms of the polling prediction,
    # and the last task a full second after its own arrival (the paper says at once)
    assert tests["code_within_50ms"] == 1.0
    assert tests["last_task_excess_ci"][0] > 0.9


def _synthetic_delays(rule, barriers=400, k=4, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(barriers):
        arrive = rng.exponential(1.0, k)
        last = arrive.max()
        for p, a in enumerate(arrive):
            lag = last - a
            if rule == "code":
                release = last + (1.0 - lag % 1.0) + rng.uniform(0.002, 0.01)
            else:
                release = last if lag == 0 else last + rng.uniform(0, 1)
            rows.append((str(b), 0, p, a, release))
    d = pd.DataFrame(rows, columns=["tag", "sync", "partition", "arrive", "release"])
    d["last_arrival"] = d.groupby(["tag", "sync"]).arrive.transform("max")
    d["lag"] = d.last_arrival - d.arrive
    d["excess"] = d.release - d.last_arrival
    d["is_last"] = d.lag == 0
    d["predicted"] = 1.0 - np.mod(d.lag, 1.0)
    return d


def test_sync_delay_tests_tell_the_two_descriptions_apart():
    code = sa.sync_delay_tests(_synthetic_delays("code"))
    paper = sa.sync_delay_tests(_synthetic_delays("paper"))
    assert code["code_within_50ms"] == 1.0 and code["last_task_excess_ci"][0] > 0.99
    assert paper["code_within_50ms"] < 0.2 and paper["last_task_mean_excess"] == 0.0
    assert paper["paper_uniform_ks_pvalue"] > 0.01
    with pytest.raises(ParameterError, match="sync points"):
        sa.sync_delay_tests(_synthetic_delays("code").iloc[:0])


def test_run_summary_numbers(run):
    s = sa.run_summary(run)
    assert s["jobs"] == 8 and s["servers"] == 2 and s["tasks"] == 2 and s["task_mean"] == 1.0
    assert s["offered_utilization"] == pytest.approx(0.4)
    sub = run.jobs.arrival.to_numpy()
    assert s["achieved_arrival_rate"] == pytest.approx(7 / (sub[-1] - sub[0]))
    assert s["mean_waiting"] == pytest.approx(run.jobs.waiting.mean())
    lo, hi = s["mean_sojourn_ci"]
    assert lo < s["mean_sojourn"] < hi
    # 8 jobs cannot bound a 0.99 quantile from above at 95 %
    assert np.isnan(s["sojourn_q_ci"][1])
    assert s["overhead_samples"] == 7 and s["overhead"]["mle"]["revive"] >= 0.777 - 1e-9  # largest sample
    assert 0 < s["achieved_utilization"] < s["busy_utilization"] < 1
    # one computation of the costs: the summary carries the serving check and takes its numbers from it
    assert s["serving"] == sa.serving_check(run)
    assert s["submission_lag_max"] == s["serving"]["submission_lag_max"]
    assert s["python_startup_median"] == pytest.approx(np.median(sa.python_startup(run)))


def test_quantile_interval_covers_a_known_quantile():
    rng = np.random.default_rng(11)
    x = rng.exponential(1.0, 2000)
    lo, hi = sa.quantile_interval(x, 0.9)
    assert lo < np.log(10) < hi and hi - lo < 0.4


def test_overhead_tests_accept_the_true_model_and_reject_plain_uniform():
    model = OverheadModel(1.0, 3.0)
    out = sa.overhead_tests(model.rvs(2000, random_state=5), revive=1.0, rate=3.0)
    assert out["model"]["ks_pvalue"] > 0.01 and out["uniform"]["ks_pvalue"] < 1e-6
    assert out["mean"] == pytest.approx(model.mean(), rel=0.05)
    assert abs(out["mle"]["revive"] - 1.0) < 0.05


def test_compare_with_simulation_orders_the_models(run):
    """The fixture run has one barrier() call per task: the paper's iid overhead (defined for one-phase
    tasks) is not offered for it; the same run read as one-phase gets it, above plain simulation."""
    table = sa.compare_with_simulation([run], jobs=20_000, replications=2, seed=1)
    assert list(table.source) == ["Spark", "event overhead", "plain"]
    config = {**run.metadata["config"], "sync_points": 0}
    one_phase = sa.SparkRun(run.path, {**run.metadata, "config": config}, run.jobs, run.tasks, run.harness_tasks,
                            run.log)
    table = sa.compare_with_simulation([one_phase], jobs=20_000, replications=2, seed=1)
    assert list(table.source) == ["Spark", "event overhead", "paper overhead", "plain"]
    sim = table.set_index("source")
    # the paper's model adds an overhead to every task: its sojourn lies above plain simulation
    assert sim.loc["paper overhead", "mean_sojourn_ci"][0] > sim.loc["plain", "mean_sojourn_ci"][1]
    assert (table["k/s"] == 1.0).all() and np.allclose(table.utilization, 0.4)
    best = sa.best_match(table)
    assert set(best.metric) == {"mean_waiting", "mean_sojourn", "waiting_q", "sojourn_q"}
    assert set(best.closest) <= {"plain", "paper overhead", "event overhead"}


def _raw_run(folder: Path) -> Path:
    """The committed archive unpacked into the harness's raw form (plain CSVs and event log)."""
    (folder / "eventlog").mkdir(parents=True)
    shutil.copy(RUN / "metadata.json", folder)
    for name in ("arrivals", "tasks"):
        (folder / f"{name}.csv").write_bytes(gzip.decompress((RUN / f"{name}.csv.gz").read_bytes()))
    log = next((RUN / "eventlog").glob("*.zstd"))
    (folder / "eventlog" / log.stem).write_bytes(zstandard.ZstdDecompressor().decompress(log.read_bytes()))
    return folder


def test_archive_is_reproducible_and_loads_the_same(tmp_path, run):
    raw = _raw_run(tmp_path / "raw")
    log = next((RUN / "eventlog").glob("*.zstd"))
    a, b = archive_run(raw, tmp_path / "a"), archive_run(raw, tmp_path / "b")
    for f in ("arrivals.csv.gz", "tasks.csv.gz", f"eventlog/{log.name}"):
        assert (a / f).read_bytes() == (b / f).read_bytes()
    again = sa.load_run(a)
    pd.testing.assert_frame_equal(again.jobs, run.jobs)
    pd.testing.assert_frame_equal(sa.load_run(raw).jobs, run.jobs)


def test_bad_run_folders(tmp_path):
    with pytest.raises(ParameterError, match="must contain metadata.json"):
        sa.load_run(tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(RUN, broken)
    with gzip.open(broken / "arrivals.csv.gz", "at") as f:
        f.write("99,False,1.0,1.0,2.0,ok\n")
    with pytest.raises(EventLogError, match="job 99 finished in the harness but is not in the event log"):
        sa.load_run(broken)
    (broken / "tasks.csv.gz").unlink()
    with pytest.raises(ParameterError, match="must hold tasks.csv or tasks.csv.gz"):
        sa.load_run(broken)
    with pytest.raises(ParameterError, match="runs folder must be an existing directory"):
        sa.discover_runs(tmp_path / "nope")
    assert sa.discover_runs(RUN.parent) == [RUN]


def _toy_run(arrivals, sleeps, servers, tasks):
    meta = {"config": {"executors": servers, "tasks": tasks, "revive_interval": 1.0, "arrival_rate": 1.0,
                       "sync_points": 0}, "task_mean": 1.0}
    tags = [str(i) for i in range(len(arrivals))]
    jobs = pd.DataFrame({"tag": tags, "arrival": arrivals})
    harness = pd.DataFrame([(t, p, x) for t, xs in zip(tags, sleeps, strict=True) for p, x in enumerate(xs)],
                           columns=["tag", "partition", "sleep"])
    return sa.SparkRun(Path("toy"), meta, jobs, pd.DataFrame(), harness, None)


def test_replay_by_hand():
    run = _toy_run([0.0, 0.5, 2.1], [[1.0, 2.0], [1.0, 1.0], [0.5, 0.5]], servers=2, tasks=2)
    plain = sa.replay(run, "plain")
    assert list(plain.start) == [0.0, 2.0, 3.0] and list(plain.completion) == [2.0, 3.0, 3.5]
    # job 1 is blocked until 2.0; the next global offer is the arrival of job 2 at 2.1 (tick at 2.3);
    # job 2 is blocked until 3.1 and no job arrives later: the tick at 3.3
    event = sa.replay(run, "event", phase=0.3)
    assert list(event.start) == [0.0, 2.1, 3.3]
    costly = sa.replay(run, "event", phase=0.3, task_cost=0.05)
    assert costly.completion.iloc[0] == pytest.approx(2.05)
    with pytest.raises(ParameterError, match="model must be one of"):
        sa.replay(run, "magic")
    with pytest.raises(ParameterError, match="task_cost must be a finite number >= 0"):
        sa.replay(run, "plain", task_cost=-1)


def test_replay_invariants_on_random_workloads():
    rng = np.random.default_rng(3)
    for servers, tasks in ((4, 2), (6, 3), (5, 5)):
        n = 300
        arrivals = np.cumsum(rng.exponential(1.0, n))
        sleeps = [rng.exponential(servers / tasks * 0.6, tasks) for _ in range(n)]
        run = _toy_run(arrivals, sleeps, servers, tasks)
        plain = sa.replay(run, "plain")
        event = sa.replay(run, "event", phase=0.25)
        paper = sa.replay(run, "paper", seed=1)
        for d in (plain, event, paper):
            assert (d.start >= d.arrival - 1e-12).all() and (np.diff(d.start) >= -1e-12).all()
        # delays only ever push later jobs later (FIFO with a start barrier is monotone)
        assert (event.start >= plain.start - 1e-12).all() and (paper.start >= plain.start - 1e-12).all()
        # an event-model start that differs from plain lies on a tick or on an arrival
        moved = event[event.start > plain.start + 1e-12]
        on_tick = np.isclose(np.mod(moved.start - 0.25, 1.0), 0) | np.isclose(np.mod(moved.start - 0.25, 1.0), 1)
        on_arrival = np.isin(moved.start, arrivals)
        assert (on_tick | on_arrival).all()
        # never more than `servers` tasks at once: count busy workers at every start
        for d in (plain, event):
            ends = [(s + x) for s, xs in zip(d.start, sleeps, strict=True) for x in xs]
            begins = [s for s, xs in zip(d.start, sleeps, strict=True) for _ in xs]
            for t in d.start:
                busy = sum(b <= t + 1e-12 and e > t + 1e-12 for b, e in zip(begins, ends, strict=True))
                assert busy <= servers


def test_replay_event_model_explains_the_real_run(run):
    """On real Spark data the event-accurate replay is closer, job by job, than plain FIFO."""
    table = sa.replay_comparison(run).set_index("source")
    assert table.loc["event + task cost", "per_job_waiting_error"] < table.loc["plain", "per_job_waiting_error"]
    assert sa.revive_phase(run) == pytest.approx(np.median(np.mod(sa.overhead_samples(run).launch, 1.0)), abs=0.1)


def test_executor_handoffs_against_a_plain_loop(run):
    gaps = sorted(sa.executor_handoffs(run))
    tasks = run.log.tasks.sort_values("launch")
    sub = dict(zip(run.log.jobs.job_id, run.log.jobs.submission, strict=True))
    measured = set(run.jobs.job_id)
    expected = []
    for ex in tasks.executor.unique():
        d = tasks[tasks.executor == ex].sort_values("launch").to_dict("records")
        for before, after in zip(d, d[1:], strict=False):
            if sub[after["job_id"]] < before["finish"] and after["job_id"] in measured:
                expected.append(after["launch"] - before["finish"])
    assert np.allclose(gaps, sorted(expected)) and len(gaps) > 0


def test_task_cost_and_serving_check_against_the_raw_files(run):
    """Spark's duration minus the function's own, and the serving check, from the raw log and CSVs."""
    events = _raw_events()
    props = {e["Job ID"]: e["Properties"]["bq.job"] for e in events if e["Event"] == "SparkListenerJobStart"}
    stage_job = {s: e["Job ID"] for e in events if e["Event"] == "SparkListenerJobStart" for s in e["Stage IDs"]}
    spark = {(props[stage_job[e["Stage ID"]]], e["Task Info"]["Index"]):
             (e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]) / 1000
             for e in events if e["Event"] == "SparkListenerTaskEnd"}
    expected = sorted(spark[(r["tag"], int(r["partition"]))] - (float(r["end"]) - float(r["start"]))
                      for r in _raw_csv("tasks") if not r["tag"].startswith("warmup"))
    assert np.allclose(sorted(sa.task_cost(run)), expected, atol=1e-6) and len(expected) == 16
    check = sa.serving_check(run)
    lags = [float(r["submitted"]) - float(r["planned"]) for r in _raw_csv("arrivals") if r["warmup"] == "False"]
    assert check["submission_lag_max"] == pytest.approx(max(lags), abs=1e-9)
    assert check["task_cost_median"] == pytest.approx(np.median(expected), abs=1e-9)
    assert check["cores"] == run.metadata["cores"] and check["executors"] == 2
    # this run predates the sampled load: the 1-minute value at its end, per core
    assert check["load_per_core"] == pytest.approx(run.metadata["loadavg_1_5_15min"][0] / run.metadata["cores"])
    assert check["load_source"] == "1-minute value at the end"
    assert check["honest"] and check["problems"] == []
    strict = sa.serving_check(run, {"python_startup_median": 0.001, "submission_lag_max": 1e-6})
    assert not strict["honest"] and len(strict["problems"]) == 2
    assert strict["problems"][0].startswith("largest submission lag behind the planned Poisson arrival ")
    assert strict["problems"][0].endswith(" s exceeds 1e-06 s")
    assert strict["problems"][1].startswith("median Python start-up per task ")


def test_serving_check_uses_the_load_sampled_during_the_run(run):
    sampled = sa.SparkRun(run.path, {**run.metadata, "cores": 2, "loadavg_1min": {"mean": 5.0, "max": 7.0}},
                          run.jobs, run.tasks, run.harness_tasks, run.log)
    check = sa.serving_check(sampled)
    assert check["load_per_core"] == 2.5 and check["load_source"] == "mean of 1-minute samples during the run"
    assert check["problems"] == ["load average per core (mean of 1-minute samples during the run) 2.5 exceeds 1.5"]
    assert check["cpu_busy"] is None           # not recorded by this run: not checked
    busy = sa.SparkRun(run.path, {**run.metadata, "cpu_busy": 0.93}, run.jobs, run.tasks, run.harness_tasks,
                       run.log)
    assert sa.serving_check(busy)["problems"] == ["busy share of the machine's CPU time during the run 0.93 "
                                                  "exceeds 0.8"]


def test_record_serving_check_adds_one_key_and_never_loses_data(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    before = json.loads((folder / "metadata.json").read_text())
    check = sa.record_serving_check(folder, assessed="in a test")
    after = json.loads((folder / "metadata.json").read_text())
    assert after.pop("serving") == check and after == before and check["assessed"] == "in a test"
    # a run the analysis cannot read gets an error entry; its files stay as they were
    (folder / "tasks.csv.gz").rename(folder / "kept.csv.gz")
    broken = sa.record_serving_check(folder)
    assert broken["error"].startswith("ParameterError: run folder") and (folder / "kept.csv.gz").exists()
    assert {k: v for k, v in json.loads((folder / "metadata.json").read_text()).items() if k != "serving"} == before


def test_archive_never_overwrites(tmp_path):
    raw, dest = _raw_run(tmp_path / "raw"), tmp_path / "kept"
    archive_run(raw, dest)
    first = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    with pytest.raises(ParameterError, match=r"dest must be a new or empty folder, so that no measured data is "
                                             r"overwritten \('.*kept' already holds a run; choose another folder\)"):
        archive_run(raw, dest)
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == first


def test_replay_runs_on_the_simulators_kernel(run):
    """One scheduler: the replay is the kernel fed the run's own arrivals and sleeps."""
    from barrier_queues.runs import run_inputs

    inputs = sa.run_inputs_of(run)
    plain = sa.replay(run, "plain")
    out = run_inputs(run.system(), inputs)
    np.testing.assert_array_equal(plain.start.to_numpy(), out["start"])


def test_cross_validation_fits_on_one_run_and_tests_on_another(run):
    other = sa.SparkRun(run.path.with_name("other"), run.metadata, run.jobs, run.tasks, run.harness_tasks, run.log)
    table = sa.cross_validate_overhead([run, other], min_samples=5)
    assert list(table.fitted_on) == [run.name, "other"] and (table.ks_pvalue > 0).all()


@pytest.mark.slow                      # (about 8 s here: the full suite runs it)
def test_parametric_bootstrap_pvalue_is_calibrated():
    """At fitted parameters the plain KS p-value is too large; the bootstrap's is uniform under the model."""
    from barrier_queues.overhead import ks_test_fitted

    model = OverheadModel(1.0, 2.0)
    ps = [ks_test_fitted(model.rvs(60, random_state=s), bootstrap=39, seed=s)["ks_pvalue"] for s in range(40)]
    plain = [ks_test_fitted(model.rvs(60, random_state=s), bootstrap=0)["ks_pvalue"] for s in range(40)]
    assert np.mean(plain) > 0.7                 # the plain p-value at fitted parameters is far too large
    assert 0.3 < np.mean(ps) < 0.7              # the bootstrap's is about uniform (mean 1/2)


COMMITTED = Path(__file__).parents[1] / "data"


def _committed(folder):
    return [sa.load_run(p) for p in sa.discover_runs(COMMITTED / folder)]


def test_the_chapter_tables_from_the_committed_runs_match_the_committed_results():
    """The Spark chapter's repeat-spread and saturation tables come from library functions; on the committed
    runs they give the committed results/ tables (the saturation simulation is checked by its Spark columns)."""
    runs = [r for r in _committed("spark") if r.sync_points == 0 and not r.saturated]
    repeats, spread = sa.repeat_spread(runs, quantile=0.99)
    committed = pd.read_csv(COMMITTED.parent / "results" / "spark_repeats.csv")
    assert list(repeats.run) == list(committed.run)
    assert np.allclose(repeats["mean waiting (s)"], committed["mean waiting (s)"], rtol=1e-12)
    assert len(spread) == len(repeats) // 2
    assert (spread["waiting: relative difference"] >= 0).all()
    sat = sa.saturation_table(_committed("spark-saturated"), jobs=2_000, replications=2, seed=1)
    committed = pd.read_csv(COMMITTED.parent / "results" / "spark_saturation.csv")
    assert list(sat.run) == list(committed.run)
    assert np.allclose(sat["Spark lambda_max"], committed["Spark lambda_max"], rtol=1e-12)
    assert list(sat["used (longest at its k)"]) == list(committed["used (longest at its k)"])
    assert sat.groupby("k")["used (longest at its k)"].sum().eq(1).all()


def _spark_rows(values, half=0.2, unsteady=()):
    return pd.DataFrame([{"source": "Spark", "servers": 8, "utilization": u, "tasks": k, "mean_waiting": w,
                          "mean_sojourn": so, "mean_sojourn_ci": [so - half, so + half],
                          "stable": (u, k) not in unsteady} for u, k, w, so in values])


def test_ushape_reads_the_minimum_and_the_trend():
    table = _spark_rows([(0.3, 1, 0.1, 9.0), (0.3, 2, 0.2, 6.0), (0.3, 4, 0.5, 7.0),
                         (0.5, 1, 0.3, 9.0), (0.5, 2, 0.2, 8.0), (0.5, 4, 0.9, 7.5),
                         (0.7, 1, 0.1, 5.0), (0.7, 2, 0.4, 6.0)])
    u = sa.ushape(table).set_index("utilization")
    assert list(u.index) == [0.3, 0.5]                    # 0.7 has two k only
    assert u.loc[0.3, "U-shape"] and u.loc[0.3, "best k (sojourn, steady runs)"] == 2
    assert u.loc[0.3, "waiting grows with k"]
    assert not u.loc[0.5, "U-shape"] and u.loc[0.5, "best k (sojourn, steady runs)"] == 4
    assert not u.loc[0.5, "waiting grows with k"]


def test_a_ushape_needs_steady_runs_and_significant_rises_on_both_sides():
    """The issue's two cases: the only k right of the minimum comes from a run without a steady state (no U),
    and a k right of the minimum whose interval overlaps the minimum's (not significant: no U)."""
    points = [(0.5, 1, 0.1, 9.0), (0.5, 2, 0.2, 6.0), (0.5, 4, 0.3, 5.0), (0.5, 6, 0.9, 8.0)]
    u = sa.ushape(_spark_rows(points, unsteady={(0.5, 6)})).iloc[0]
    assert u["k without steady state"] == [6] and not u["U-shape"] and u["best k (sojourn, steady runs)"] == 4
    close = [(0.3, 1, 0.1, 9.0), (0.3, 4, 0.2, 5.0), (0.3, 6, 0.3, 5.3)]
    u = sa.ushape(_spark_rows(close, half=0.2)).iloc[0]
    assert not u["significantly higher on both sides"] and not u["U-shape"] and u["best k interior"]
    assert sa.ushape(_spark_rows(close, half=0.1)).iloc[0]["U-shape"]


def test_blocking_gap_averages_repeats_and_reads_the_trends():
    runs = [_toy_run([0.0], [[1.0]], 8, k) for k in (2, 4)]
    for r, name in zip(runs, ("a", "b"), strict=True):
        r.path = Path(name)
    replays = pd.DataFrame([{"run": "a", "source": "Spark", "mean_waiting": 1.0},
                            {"run": "a", "source": "plain", "mean_waiting": 0.5},
                            {"run": "b", "source": "Spark", "mean_waiting": 3.0},
                            {"run": "b", "source": "plain", "mean_waiting": 1.0}])
    g = sa.blocking_gap(replays, runs)
    assert list(g["gap"]["Spark - plain (s)"]) == [0.5, 2.0]
    assert list(g["blocking"].rho) == [0.25, 0.5]           # rho = lambda k E[T] / s: two loads, one k each
    assert g["grows_with_k"] == [] and g["grows_with_load"] == []   # no load with two k, no k at two loads


MIXED = Path(__file__).parent / "data" / "mixed" / "spark-run-s4-mixed"


def test_overtakes_by_hand():
    arrivals = np.array([0.0, 1.0, 2.0, 3.0])
    starts = np.array([5.0, 1.5, 2.5, 6.0])        # job 0 (barrier) overtaken by jobs 1 and 2
    barrier = np.array([True, False, True, True])
    assert list(sa.overtakes(starts, arrivals, barrier)) == [2, 0, 0, 0]


def test_a_mixed_run_records_each_jobs_k_and_kind_and_replays_under_both_rules():
    run = sa.load_run(MIXED)
    assert sa.is_mixed(run) and set(run.jobs.tasks) == {1, 4} and set(run.jobs.barrier) == {True, False}
    inputs = sa.mixed_inputs(run)
    assert inputs["times"].size == int(run.jobs.tasks.sum())
    fcfs = sa.mixed_replay(run, "fcfs")
    ff = sa.mixed_replay(run, "first-fit")
    # under first-fit no job waits longer for a moment with k free workers than FIFO makes it wait in total
    assert (ff.waiting >= -1e-12).all() and (fcfs.waiting >= -1e-12).all()
    assert list(fcfs.tag) == list(run.jobs.sort_values("arrival").tag)
    table = sa.mixed_comparison(run)
    assert set(table.source) == {"Spark", *sa.MIXED_MODELS}
    assert table.groupby("source").jobs.sum().eq(len(run.jobs)).all()
    with pytest.raises(ParameterError, match="model must be one of"):
        sa.mixed_replay(run, "lifo")


def test_barrier_calls_of_several_runs_are_counted_apart(run):
    """Job tags repeat from run to run: two runs' delays concatenated have twice the barrier() calls of one (they
    were merged by tag, and the book's count was halved)."""
    import copy

    other = copy.copy(run)
    other.path = run.path.with_name(f"{run.name}-again")
    one = sa.sync_delay_tests(sa.sync_delays(run))
    both = sa.sync_delay_tests(pd.concat([sa.sync_delays(run), sa.sync_delays(other)], ignore_index=True))
    assert both["barriers"] == 2 * one["barriers"] and both["tasks"] == 2 * one["tasks"]


def test_same_length_sets_a_run_against_simulated_runs_of_its_own_length(run):
    """Like with like: the simulated runs are the model started empty with the run's own warm-up and measured
    jobs (reproduced here by hand from the same stream); Spark's percentile and 'inside' follow from them."""
    import barrier_queues as bq
    from barrier_queues.inputs import spawn_seeds

    t = sa.same_length([run], "event overhead", replications=40, seed=3)
    assert list(t.metric) == ["waiting", "sojourn"] and (t.jobs == len(run.jobs)).all()
    warm = int(run.metadata["config"]["warmup_jobs"])
    res = bq.simulate(sa.simulation_configs(run)["event overhead"], jobs=warm + len(run.jobs), replications=40,
                      seed=spawn_seeds(3, 1)[0], warmup=warm, allow_unstable=True, progress=False)
    for row in t.to_dict("records"):
        sims = np.array([st.mean(row["metric"]) for st in res.stats])
        assert row["same-length median"] == pytest.approx(np.median(sims), rel=1e-12)
        assert row["Spark percentile"] == pytest.approx(np.mean(sims <= row["Spark"]), abs=1e-12)
        assert row["inside"] == bool(row["same-length low"] <= row["Spark"] <= row["same-length high"])
    assert sa.same_length([run], "paper overhead", replications=5).empty     # no iid model for a run with barrier()


def test_launch_delays_classify_every_job_and_the_overhead_sources_follow_from_them():
    """Every measured job of a run is blocked, free or behind; the blocked ones are exactly blocking_overhead's
    samples; a free job's delay is its launch minus its submission, with k free executors and no job ahead;
    overhead_sources reports these and the execution interval around the jobs' own mean."""
    from barrier_queues.eventlog import blocking_overhead, launch_delays
    from barrier_queues.order_stats import harmonic

    root = Path(__file__).resolve().parents[1]
    run = sa.load_run(root / "data" / "spark" / "s4-k2-rho0.3")
    delays = launch_delays(run.log)
    assert set(delays.kind) <= {"blocked", "free", "behind"} and (delays.delay >= 0).all()
    blocked = delays[delays.kind == "blocked"].reset_index(drop=True)
    samples = blocking_overhead(run.log)
    assert np.array_equal(blocked.job_id, samples.job_id) and np.array_equal(blocked.delay, samples.overhead)
    free = delays[delays.kind == "free"]
    assert len(free) and np.allclose(free.delay, free.launch - free.submission)
    assert (free.ready <= free.submission).all()
    row = sa.overhead_sources([run]).iloc[0]
    measured = free[free.job_id.isin(run.jobs.job_id)]
    assert row["free jobs"] == len(measured) and row["free launch (ms)"] == pytest.approx(
        1000 * measured.delay.median())
    lo, hi = row["execution 95% CI"]
    assert row["execution (s)"] == pytest.approx(run.jobs.execution.mean()) and lo < row["execution (s)"] < hi
    assert row["model E[X_(k:k)] (s)"] == pytest.approx(run.task_mean * harmonic(2))
    assert 0 < row["sleep precision (ms)"] < 5 and 0 <= row["non-blocking (ms)"] < 50
