"""Scheduling disciplines (EXTENSIONS.md section 4): kernel = plain reference per job, identity oracles,
queueing theory and invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import barrier_queues as bq
from barrier_queues.inputs import chunk_jobs, draw_jobs
from barrier_queues.order_stats import harmonic
from barrier_queues.runs import run_replication
from barrier_queues.schedulers import central, waitlist
from barrier_queues.schedulers.waitlist_reference import simulate_waitlist_reference

S = bq.BarrierSystem
DISCIPLINES = ("fcfs", "first-fit", "backfill", "server-filling")

SYSTEMS = {
    "heterogeneous k": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.9),
    "hybrid": dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.0),
    "hybrid pmf": dict(servers=12, tasks_pmf={1: 0.5, 3: 0.3, 12: 0.2}, barrier_fraction=0.7, arrival_rate=1.0),
    "2-barrier powers of two": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, barriers=2, arrival_rate=0.5),
    "2-barrier (s,k,l)": dict(servers=16, tasks=8, needed=6, barriers=2, arrival_rate=1.0),
    "knee release": dict(servers=16, tasks_pmf={4: 0.5, 8: 0.5}, barriers=2, release="knee",
                         task_dist="bimodal:p=0.9,rate1=2,rate2=0.2", arrival_rate=0.5),
    "phases, Spark sync": dict(servers=8, tasks_pmf={2: 0.5, 4: 0.5}, phases=3, sync="spark", arrival_rate=0.3),
    "deterministic arrivals, Erlang tasks": dict(servers=8, tasks_pmf={1: 0.7, 8: 0.3}, arrival="deterministic",
                                                 task_dist="erlang:shape=3,rate=3", arrival_rate=1.5),
}


def _inputs(system, n, seed):
    return draw_jobs(system, n, np.random.default_rng(seed))


def _same(kernel, ref):
    for key in ("start", "departure", "work", "useful", "completed"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key


@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("discipline", DISCIPLINES)
def test_the_waitlist_kernel_equals_its_reference_job_by_job(name, discipline):
    try:
        system = S(**SYSTEMS[name], scheduling=discipline if discipline != "fcfs" else "first-fit")
    except bq.ParameterError:
        assert discipline == "server-filling"            # defined for 2-barrier powers of two only
        return
    inputs = _inputs(system, 3000, seed=11)
    _same(waitlist.run_inputs(system, inputs, discipline=discipline),
          waitlist.reference(system, inputs, discipline=discipline))


@pytest.mark.parametrize("name", SYSTEMS)
def test_fcfs_of_the_waitlist_is_the_papers_fifo_queue_bit_for_bit(name):
    """The waiting list under fcfs (event by event) and the central queue's start recursion agree per job."""
    system = S(**SYSTEMS[name])
    inputs = _inputs(system, 3000, seed=12)
    _same(waitlist.run_inputs(system.replace(scheduling="first-fit"), inputs, discipline="fcfs"),
          central.run_inputs(system, inputs))


@pytest.mark.parametrize("discipline", ("first-fit", "backfill"))
def test_across_chunk_boundaries_a_replication_equals_the_reference_on_its_inputs(discipline):
    """Jobs of 4,096 draws make chunks of 1,024 jobs: a window of unstarted jobs crosses chunk boundaries."""
    system = S(servers=64, tasks_pmf={1: 0.6, 64: 0.4}, phases=64, arrival_rate=0.01, scheduling=discipline)
    size = chunk_jobs(system)
    assert size == 1024
    jobs = 2600
    rep = run_replication(system, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    rng, parts, done, start = np.random.default_rng(5), [], 0, 0.0
    while done < jobs:
        part = draw_jobs(system, min(size, jobs - done), rng, start_time=start)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    times = np.concatenate([p["times"] for p in parts])
    tasks = np.concatenate([p["tasks"] for p in parts])
    ref = simulate_waitlist_reference(np.concatenate([p["arrival"] for p in parts]), tasks,
                                      np.concatenate([p["barrier"] for p in parts]), times, 64, discipline,
                                      phases=64, release="fixed")
    _same(rep.jobs, ref)


@pytest.mark.parametrize("discipline", ("first-fit", "backfill"))
def test_with_one_k_of_barrier_jobs_first_fit_and_backfill_are_fcfs(discipline):
    system = S(servers=16, tasks=4, arrival_rate=3.0)
    inputs = _inputs(system, 5000, seed=3)
    _same(waitlist.run_inputs(system.replace(scheduling=discipline), inputs), central.run_inputs(system, inputs))
    two = S(servers=16, tasks=4, needed=3, barriers=2, arrival_rate=2.0)
    inputs = _inputs(two, 5000, seed=4)
    _same(waitlist.run_inputs(two.replace(scheduling=discipline), inputs), central.run_inputs(two, inputs))


def _erlang_c_waiting(s, lam, mu):
    a = lam / mu
    rho = a / s
    terms = sum(a**i / math.factorial(i) for i in range(s))
    last = a**s / math.factorial(s) / (1 - rho)
    return last / (terms + last) / (s * mu - lam)


@pytest.mark.parametrize("discipline", DISCIPLINES)
def test_with_k_1_every_discipline_is_the_m_m_s_queue(discipline):
    barriers = 2 if discipline == "server-filling" else 1
    system = S(servers=4, tasks=1, barriers=barriers, arrival_rate=3.0, scheduling=discipline)
    res = bq.simulate(system, jobs=40_000, replications=8, seed=21, workers=1)
    lo, hi = res.summary()["ci"]["waiting"]
    assert lo <= _erlang_c_waiting(4, 3.0, 1.0) <= hi


def test_one_or_all_fifo_limit_against_a_saturated_run():
    """fcfs, 1 barrier, exponential tasks, a share beta of k = s jobs and the rest k = 1:
    lambda_max = s mu / (1 - beta + beta s H_s) (EXTENSIONS.md section 4)."""
    s_, beta = 8, 0.2
    exact = s_ / (1 - beta + beta * s_ * harmonic(s_))
    est = bq.saturated_throughput(S(servers=s_, tasks_pmf={1: 1 - beta, s_: beta}), jobs=100_000,
                                  replications=8, seed=2)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact <= hi, (lo, exact, hi)


def test_first_fit_lets_small_jobs_overtake_and_large_jobs_wait_longer():
    """Spark's rule against the paper's FIFO on one mixed workload: small jobs wait less, large ones more."""
    base = S(servers=16, tasks_pmf={2: 0.8, 16: 0.2}, arrival_rate=0.6)
    out = {}
    for d in ("fcfs", "first-fit"):
        res = bq.simulate(base.replace(scheduling=d), jobs=30_000, replications=4, seed=8, keep_jobs=True)
        frame = res.to_frame()
        frame = frame[~frame.warmup]
        out[d] = frame.groupby("tasks").waiting.mean()
    assert out["first-fit"][2] < out["fcfs"][2] and out["first-fit"][16] > out["fcfs"][16]


@pytest.mark.parametrize("discipline", DISCIPLINES)
def test_per_class_summary_equals_the_kept_jobs_of_each_class(discipline):
    """Per-class results name each job by its own class under every discipline (the waiting list once put every
    job of a --tasks-pmf mix into the first class)."""
    base = S(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, barriers=2, arrival_rate=0.4, scheduling=discipline)
    res = bq.simulate(base, jobs=3_000, replications=2, seed=5, keep_jobs=True)
    frame = res.to_frame()
    measured = frame[~frame.warmup]
    classes = {c["tasks"]: c for c in res.summary()["classes"]}
    assert sorted(classes) == [2, 8, 16]
    for k, c in classes.items():
        sel = measured[measured.tasks == k]
        assert c["jobs"] == len(sel)
        assert c["mean_waiting"] == pytest.approx(sel.waiting.mean(), rel=1e-9)


def _busy_at(trace, t):
    return int(((trace["start"] <= t) & (t < trace["end"])).sum())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), discipline=st.sampled_from(["first-fit", "backfill", "fcfs"]),
       servers=st.integers(2, 12), barriers=st.sampled_from([1, 2]))
def test_invariants_no_worker_serves_two_tasks_and_first_fit_leaves_no_fitting_job_waiting(
        seed, discipline, servers, barriers):
    rng = np.random.default_rng(seed)
    ks = sorted({1, int(rng.integers(1, servers + 1)), servers})
    system = S(servers=servers, tasks_pmf={k: 1 / len(ks) for k in ks}, barriers=barriers,
               barrier_fraction=1.0 if barriers == 2 else 0.8, arrival_rate=0.5 / servers * 4,
               scheduling="first-fit")
    inputs = draw_jobs(system, 60, rng)
    res, tr = waitlist.reference(system, inputs, trace=True, discipline=discipline)
    k = inputs["tasks"]
    first = np.concatenate([inputs["offsets"][j] + np.arange(k[j]) for j in range(k.size)])
    worker, start, end = (np.asarray(tr[x])[first] for x in ("worker", "start", "end"))
    for w in np.unique(worker):                       # each worker's tasks never overlap
        order = np.argsort(start[worker == w], kind="stable")
        s_, e_ = start[worker == w][order], end[worker == w][order]
        assert (s_[1:] >= e_[:-1]).all()
    kernel = waitlist.run_inputs(system, inputs, discipline=discipline)
    _same(kernel, res)
    if discipline == "first-fit":                     # after each decision no waiting barrier job fits
        tasks = {"start": start, "end": np.where(barriers == 2, np.repeat(
            np.asarray(res["departure"]), k), end)}
        for t in np.unique(np.concatenate([inputs["arrival"], tasks["end"]])):
            free = servers - _busy_at(tasks, t)
            waiting = (inputs["arrival"] <= t) & (np.asarray(res["start"]) > t) & inputs["barrier"]
            assert (k[waiting] > free).all()


def test_backfill_never_delays_the_reserved_job():
    """Every reservation (H, t_H) made by the reference is kept: H starts at or before t_H."""
    from barrier_queues.schedulers import waitlist_reference

    system = S(servers=16, tasks_pmf={2: 0.7, 12: 0.3}, arrival_rate=0.8, scheduling="backfill")
    inputs = _inputs(system, 4000, seed=31)
    log = []
    res = waitlist_reference.simulate_waitlist_reference(
        inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], 16, "backfill",
        reservations=log, release="fixed")
    assert len(log) > 100
    assert all(res["start"][h] <= t_h for h, t_h in log)


def test_disciplines_refuse_what_they_do_not_define():
    with pytest.raises(bq.ParameterError, match="scheduling must be one of 'fcfs' with placement = 'sample'"):
        S(servers=16, tasks=4, placement="sample", scheduling="first-fit")
    with pytest.raises(bq.ParameterError, match="server-filling' needs every k a power of two dividing"):
        S(servers=12, tasks_pmf={3: 0.5, 4: 0.5}, barriers=2, scheduling="server-filling")
    with pytest.raises(bq.ParameterError, match="overhead must be None with scheduling = 'backfill'"):
        S(servers=8, tasks=2, overhead="event", arrival_rate=1.0, scheduling="backfill")
    with pytest.raises(bq.ParameterError, match="overhead must be None or event with scheduling = 'first-fit'"):
        S(servers=8, tasks=2, overhead="paper", arrival_rate=1.0, scheduling="first-fit")
    with pytest.raises(bq.ParameterError, match="scheduling must be 'fcfs' for a saturated run"):
        bq.saturated_throughput(S(servers=8, tasks=2, scheduling="backfill"), jobs=1000, replications=2)
    with pytest.raises(bq.ParameterError, match="scheduling must be one of"):
        S(servers=8, tasks=2, scheduling="lifo")


EVENT = {
    "one k": dict(servers=8, tasks=4, arrival_rate=0.8),
    "hybrid": dict(servers=8, tasks=4, barrier_fraction=0.5, arrival_rate=0.9),
    "pmf with k = 1": dict(servers=8, tasks_pmf={1: 0.5, 2: 0.25, 8: 0.25}, arrival_rate=0.5),
}


@pytest.mark.parametrize("name", EVENT)
def test_fcfs_with_spark_offers_is_the_central_event_model_bit_for_bit(name):
    """Spark's offers in the waiting list (releases offer single executors, ticks and arrivals global ones)
    under fcfs give the central queue's event-accurate model job by job (1 barrier)."""
    system = S(**EVENT[name], overhead="event", revive_interval=1.0)
    inputs = _inputs(system, 3000, seed=14)
    _same(waitlist.run_inputs(system.replace(scheduling="first-fit"), inputs, phase=0.37, discipline="fcfs"),
          central.run_inputs(system, inputs, phase=0.37))


@pytest.mark.parametrize("name", EVENT)
@pytest.mark.parametrize("barriers", (1, 2))
def test_first_fit_with_spark_offers_equals_its_reference(name, barriers):
    system = S(**EVENT[name], barriers=barriers, overhead="event", revive_interval=1.0, scheduling="first-fit")
    inputs = _inputs(system, 3000, seed=15)
    _same(waitlist.run_inputs(system, inputs, phase=0.61), waitlist.reference(system, inputs, phase=0.61))


def test_spark_offers_across_chunk_boundaries():
    system = S(servers=64, tasks_pmf={1: 0.6, 64: 0.4}, phases=64, arrival_rate=0.01, scheduling="first-fit",
               overhead="event", revive_interval=1.0)
    jobs = 2600
    rep = run_replication(system, jobs, np.random.default_rng(6), keep_jobs=True, warmup=0)
    rng, parts, done, start = np.random.default_rng(6), [], 0, 0.0
    phase = np.random.default_rng(6).uniform(0.0, 1.0)      # the replication's first draw
    rng.uniform(0.0, 1.0)
    while done < jobs:
        part = draw_jobs(system, min(chunk_jobs(system), jobs - done), rng, start_time=start)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    ref = simulate_waitlist_reference(np.concatenate([p["arrival"] for p in parts]),
                                      np.concatenate([p["tasks"] for p in parts]),
                                      np.concatenate([p["barrier"] for p in parts]),
                                      np.concatenate([p["times"] for p in parts]), 64, "first-fit",
                                      event_overhead=True, revive=1.0, phase=phase, phases=64, release="fixed")
    _same(rep.jobs, ref)


@pytest.mark.parametrize("config", [
    dict(servers=16, tasks=4, arrival_rate=2.8, scheduling="first-fit"),
    dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.3, scheduling="backfill"),
    dict(servers=16, tasks_pmf={2: 0.8, 16: 0.2}, arrival_rate=1.2, scheduling="first-fit"),
    dict(servers=64, tasks_pmf={1: 0.6, 64: 0.4}, phases=64, arrival_rate=0.01, scheduling="backfill"),
    dict(servers=16, tasks_pmf={2: 0.5, 8: 0.5}, barriers=2, arrival_rate=1.0, scheduling="server-filling"),
    dict(servers=8, tasks_pmf={1: 0.5, 4: 0.5}, arrival_rate=1.0, scheduling="first-fit", overhead="event"),
    dict(servers=16, tasks=4, arrival_rate=2.0, failure_rate=0.05, max_attempts=3, resubmit_delay=0.1),
    dict(servers=16, tasks_pmf={2: 0.5, 8: 0.5}, barriers=2, arrival_rate=0.8, failure_rate=0.05,
         max_attempts=4, resubmit_delay=0.2, scheduling="backfill"),
    dict(servers=16, tasks=4, barrier_fraction=0.5, arrival_rate=1.5, failure_rate=0.05, max_attempts=3,
         scheduling="first-fit"),
    dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.2, failure_rate=0.1, max_attempts=2,
         scheduling="backfill"),
    dict(servers=12, tasks_pmf={1: 0.5, 3: 0.3, 12: 0.2}, barrier_fraction=0.3, arrival_rate=2.0,
         failure_rate=0.1, max_attempts=2, resubmit_delay=0.3),
    dict(servers=128, tasks_pmf={1: 0.5, 4: 0.3, 32: 0.15, 128: 0.05}, arrival_rate=9.0, scheduling="backfill"),
    dict(servers=100, tasks=20, barrier_fraction=0.5, arrival_rate=4.0, failure_rate=0.1, max_attempts=2,
         scheduling="backfill"),
])
def test_the_releases_in_a_sorted_array_and_in_the_heap_give_the_same_jobs(config, monkeypatch):
    """Up to ``SORTED_FREE_MAX`` workers, and under backfill at any number, without a trace, the kernel keeps
    the pending releases in an ascending array instead of the heap, with no worker ids: the same jobs, bit for
    bit, over chunk boundaries
    (the releases carried from call to call in ``rel_time``) and with 1 and 2 barriers, ties included (2
    barriers: k releases at one instant). With failures the same jobs, attempts and aborts as with worker ids
    and the heap, also where a non-barrier job's abort kills its running tasks (found by worker id in the
    heap, by their release times in the array)."""
    system = S(**config)
    jobs = 3 * chunk_jobs(system) + 17                   # three chunk boundaries, the pipeline's threads
    array = waitlist.SORTED_FREE_MAX
    assert waitlist.releases_in_array(system, waitlist.discipline_code(system.scheduling))
    run = waitlist._Window.run

    def with_ids(self, *args, **kwargs):                 # worker ids whenever there are failures
        self.kills = self.fail
        return run(self, *args, **kwargs)

    runs = {}
    for limit in (array, 0):                            # 0: always the heap (and the ids)
        if limit == 0:
            monkeypatch.setattr(waitlist, "releases_in_array", lambda system, code: False)
            monkeypatch.setattr(waitlist._Window, "run", with_ids)
        runs[limit] = run_replication(system, jobs, np.random.default_rng(8), keep_jobs=True, warmup=0).jobs
    keys = ("start", "departure", "work", "useful", "completed")
    if system.failure_rate is not None:
        keys += ("attempts", "aborted")
        assert runs[0]["aborted"].any() and (runs[0]["attempts"] > 1).any()
        if system.barrier_fraction < 1:                  # non-barrier aborts, their tasks killed
            assert (runs[0]["aborted"] & ~runs[0]["barrier"]).any()
    for key in keys:
        assert np.array_equal(runs[0][key], runs[array][key]), key


def test_the_chunk_pipeline_hands_on_every_chunk_in_order_with_or_without_threads():
    """``chunk_pipeline`` draws chunks in order, tells each step the next chunk, hands the steps' results to
    ``add`` in order (a step's pieces one by one), and lets an error of a step or of ``add`` surface."""
    from barrier_queues.schedulers.base import chunk_pipeline

    def draw(start_time, done):
        n = min(10, 47 - done)
        return {"arrival": start_time + np.arange(1, n + 1, dtype=float), "first": done}

    def collect(threads, fail_at=None, fail_add=False):
        seen, added = [], []

        def step(chunk, following):
            seen.append((chunk["first"], None if following is None else following["first"]))
            if chunk["first"] == fail_at:
                raise ValueError("step")
            if chunk["first"] == 10:                 # pieces: an iterator of results, added in order
                return iter([{"first": 10, "last": None}, {"first": 15, "last": chunk["arrival"][-1]}])
            return None if chunk["first"] == 20 else {"first": chunk["first"], "last": chunk["arrival"][-1]}

        def add(result):
            if fail_add and result["first"] == 30:
                raise KeyError("add")
            added.append(result)

        chunk_pipeline(draw, step, add, 47, 10, threads=threads)
        return seen, added

    serial, threaded = collect(False), collect(True)
    assert serial == threaded
    assert serial[0] == [(0, 10), (10, 20), (20, 30), (30, 40), (40, None)]
    assert [r["first"] for r in serial[1]] == [0, 10, 15, 30, 40] and serial[1][-1]["last"] == 47.0
    for threads in (False, True):
        with pytest.raises(ValueError, match="step"):
            collect(threads, fail_at=30)
        with pytest.raises(KeyError, match="add"):
            collect(threads, fail_add=True)


@pytest.mark.parametrize("config", [
    dict(servers=16, tasks_pmf={2: 0.8, 16: 0.2}, arrival_rate=1.6),        # overloaded: long class queues
    dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=2.1),
    dict(servers=12, tasks_pmf={1: 0.5, 3: 0.3, 12: 0.2}, barrier_fraction=0.7, arrival_rate=2.3),
    dict(servers=16, tasks_pmf={4: 0.5, 8: 0.5}, barriers=2, release="knee",
         task_dist="bimodal:p=0.9,rate1=2,rate2=0.2", arrival_rate=3.0),
])
def test_backfill_finds_the_same_jobs_in_its_class_lists_and_in_its_trees(config, monkeypatch):
    """Backfill walks a class's waiting jobs while at most ``BACKFILL_LIST_MAX`` wait and searches its segment
    tree above: always the tree (0), the default and never the tree give the reference's jobs, bit for bit, on
    overloaded systems whose class queues (a class: k and barrier or not) grow past the default."""
    system = S(**config, scheduling="backfill")
    inputs = _inputs(system, 3000, seed=17)
    ref = waitlist.reference(system, inputs)
    start, arrival, tasks, barrier = np.asarray(ref["start"]), inputs["arrival"], inputs["tasks"], inputs["barrier"]
    longest = max(int(((start[:j] > arrival[j]) & (tasks[:j] == tasks[j]) & (barrier[:j] == barrier[j])).sum())
                  for j in range(tasks.size))
    assert longest > waitlist.BACKFILL_LIST_MAX          # a class's queue outgrows the lists (its tree is used)
    for limit in (0, waitlist.BACKFILL_LIST_MAX, 10**9):
        monkeypatch.setattr(waitlist, "BACKFILL_LIST_MAX", limit)
        _same(waitlist.run_inputs(system, inputs), ref)


def test_the_windows_rows_grow_in_place_and_keep_handed_views_for_two_steps():
    """``waitlist._Rows``: a chunk is written after the rows kept (growing keeps them), keeping a subset moves it
    to the next buffer, and views of a step's rows handed on (a chunk's results, read by the statistics thread
    while the next chunk runs) hold their values until two more steps have kept and extended, as
    ``chunk_pipeline``'s order needs (it waits for chunk i's statistics before handing on chunk i + 1's)."""
    rows = waitlist._Rows({"x": np.float64, "n": np.int64})
    rng = np.random.default_rng(3)
    handed = []                                           # (views, their values when handed), newest last
    sizes = [5, 40, 7, 300, 1, 0, 64, 3000, 9]
    for step, n in enumerate(sizes):
        before = {f: v.copy() for f, v in rows.view.items()}
        x = rng.random(n)
        rows.extend({"x": x, "n": step}, n)
        m = before["x"].size
        assert np.array_equal(rows.view["x"][:m], before["x"]) and np.array_equal(rows.view["n"][:m], before["n"])
        assert np.array_equal(rows.view["x"][m:], x) and (rows.view["n"][m:] == step).all()
        cut = rows.size // 2                              # hand on the first half, keep every third of the rest
        handed.append(({f: v[:cut] for f, v in rows.view.items()}, {f: v[:cut].copy() for f, v in rows.view.items()}))
        keep = np.arange(cut, rows.size, 3)
        kept = {f: v[keep].copy() for f, v in rows.view.items()}
        rows.keep(keep)
        assert all(np.array_equal(rows.view[f], kept[f]) for f in kept)
        for views, values in handed[-2:]:                 # this step's and the previous step's results
            assert all(np.array_equal(views[f], values[f]) for f in views)


@pytest.mark.parametrize("discipline, pmf, rate", [("first-fit", {2: 0.8, 16: 0.2}, 1.6),
                                                   ("backfill", {2: 0.8, 16: 0.2}, 4.0),
                                                   ("first-fit", {4: 1.0}, 5.0)])
def test_a_window_of_starving_gangs_keeps_done_jobs_in_place_until_they_outnumber_the_others(discipline, pmf, rate,
                                                                                                monkeypatch):
    """Without failures, done jobs stay in the window (marked handed on) until they are more than twice the
    others: over chunks of 300 jobs of systems whose window keeps growing (first-fit on k in {2, 16}: the
    16-task jobs starve, done jobs behind them are parked; backfill, with its class trees, and one k:
    overloaded, the done jobs a prefix of the rest), the run equals the reference on its inputs job for job,
    and the window both left handed jobs in place and compacted."""
    system = S(servers=16, tasks_pmf=pmf, arrival_rate=rate, scheduling=discipline)
    monkeypatch.setattr(waitlist, "chunk_jobs", lambda system: 300)
    seen, take, keep = [], waitlist._Window.take_started, waitlist._Window._keep

    def spy_take(self, cuts=None):
        out = take(self, cuts)
        seen.append(("handed", self.handed, self.rows.size))
        return out

    def spy_keep(self, rows):
        seen.append(("compact", rows.size, self.rows.size))
        return keep(self, rows)

    monkeypatch.setattr(waitlist._Window, "take_started", spy_take)
    monkeypatch.setattr(waitlist._Window, "_keep", spy_keep)
    jobs = 6000
    rep = run_replication(system, jobs, np.random.default_rng(9), keep_jobs=True, warmup=0)
    rng, parts, done, start = np.random.default_rng(9), [], 0, 0.0
    while done < jobs:
        part = draw_jobs(system, min(300, jobs - done), rng, start_time=start)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    ref = simulate_waitlist_reference(*(np.concatenate([p[f] for p in parts]) for f in ("arrival", "tasks", "barrier",
                                                                                        "times")),
                                      16, discipline, release="fixed")
    _same(rep.jobs, ref)
    assert any(kind == "handed" and handed > 0 for kind, handed, _ in seen)            # left in place
    assert any(kind == "compact" and 0 < kept < size for kind, kept, size in seen)     # compacted, some kept
    assert max(size for kind, _, size in seen) > 1000                                  # a growing window


def test_a_drain_of_starving_gangs_is_handed_on_in_pieces_with_the_statistics_of_one_piece(monkeypatch):
    """First-fit on k in {2, 16} parks the jobs started behind starving gangs and hands most of them on when the
    gangs start; past two chunks such a hand-off goes to the statistics in pieces cut at ``Sink.cuts`` (the next
    piece written while the previous one is added). With chunks of 300: pieces occur, and the jobs, block
    sums, histograms and segment times are those of the hand-offs in one piece, bit for bit."""
    from barrier_queues.runs import Sink

    system = S(servers=16, tasks_pmf={2: 0.8, 16: 0.2}, arrival_rate=1.6, scheduling="first-fit")
    monkeypatch.setattr(waitlist, "chunk_jobs", lambda system: 300)
    monkeypatch.setattr(waitlist, "CHUNK", 300)
    real, pieces = waitlist._merged, []

    def counting(parts, first, bounds):
        pieces.append(len(bounds) - 1)
        return real(parts, first, bounds)

    monkeypatch.setattr(waitlist, "_merged", counting)
    split = run_replication(system, 6000, np.random.default_rng(9), keep_jobs=True)
    assert pieces and max(pieces) >= 3
    monkeypatch.setattr(Sink, "cuts", lambda self, first, n, every: [])
    whole = run_replication(system, 6000, np.random.default_rng(9), keep_jobs=True)
    for key in ("arrival", "start", "departure", "work", "completed"):
        assert np.array_equal(split.jobs[key], whole.jobs[key]), key
    a, b = split.partial, whole.partial
    assert a.blocks.tobytes() == b.blocks.tobytes()
    assert np.array_equal(a.arrival_at, b.arrival_at, equal_nan=True)
    for mine, theirs in zip(a.segment_hists + [a.tail_hist], b.segment_hists + [b.tail_hist], strict=True):
        assert all(np.array_equal(mine[m].counts, theirs[m].counts) for m in mine)


def test_the_compiled_sort_equals_numpys_on_every_shape_of_input():
    """``_sort_doubles`` (a job's release times, a release rule's order statistics): numpy's sorted values on
    random, few distinct, sorted, reversed and constant inputs of 0 to 4,096 values, and libc's ``qsort``
    through the same wrapper agrees."""
    from barrier_queues.kernels import kernels_module

    sort = kernels_module().sort_doubles
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 18, 33, 100, 1000, 4096):
        for values in (rng.random(n), rng.integers(0, 5, n).astype(float), np.sort(rng.exponential(size=n)),
                       np.sort(rng.random(n))[::-1].copy(), np.full(n, 2.5), rng.normal(size=n) * 1e300,
                       np.where(rng.random(n) < 0.3, np.inf, rng.random(n))):
            ours, theirs = values.copy(), values.copy()
            sort(ours)
            sort(theirs, True)
            assert np.array_equal(ours, np.sort(values)) and np.array_equal(theirs, ours), n


def test_the_sorting_networks_sort_every_input_of_zeros_and_ones():
    """Up to 16 values ``_sort_doubles`` runs a sorting network (Batcher's, padded with infinities): by the 0-1
    principle (Knuth, TAOCP vol. 3, 5.3.4: a comparator network that sorts every input of
    zeros and ones sorts every input) checked on all 2**n such inputs for n = 2 to 16."""
    from barrier_queues.kernels import kernels_module

    sort = kernels_module().sort_doubles
    for n in range(2, 17):
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
        expected = np.sort(bits, axis=1).astype(float)
        for row, want in zip(bits.astype(float), expected, strict=True):
            sort(row)
            assert np.array_equal(row, want), (n, row)


def test_compact_runs_moves_the_kept_draws_to_the_front_and_refuses_bad_runs():
    """``compact_runs`` (the window's draws of the jobs it keeps): the runs' values, in order, at the front,
    the rest untouched; overlapping, descending or outside runs are refused before anything moves."""
    from barrier_queues.kernels import kernels_module

    compact = kernels_module().compact_runs
    rng = np.random.default_rng(6)
    values = rng.random(1000)
    sizes = rng.integers(0, 20, 40)
    starts = np.cumsum(sizes + rng.integers(0, 5, 40)) - sizes
    assert starts[-1] + sizes[-1] <= values.size
    expected = np.concatenate([values[a:a + b] for a, b in zip(starts, sizes, strict=True)])
    buf = values.copy()
    assert compact(buf, starts, sizes) == expected.size == sizes.sum()
    assert np.array_equal(buf[:expected.size], expected)
    assert np.array_equal(buf[starts[-1] + sizes[-1]:], values[starts[-1] + sizes[-1]:])
    for bad in ((np.array([0, 3]), np.array([5, 2])), (np.array([4, 0]), np.array([1, 1])),
                (np.array([995]), np.array([10])), (np.array([0]), np.array([-1]))):
        buf = values.copy()
        with pytest.raises(ValueError, match="runs must be"):
            compact(buf, *bad)
        assert np.array_equal(buf, values)
    with pytest.raises(ValueError, match="one entry per run"):
        compact(values.copy(), np.array([0, 1]), np.array([1]))


@pytest.mark.parametrize("name", ["heterogeneous k", "2-barrier powers of two", "2-barrier (s,k,l)", "knee release",
                                  "phases, Spark sync"])
@pytest.mark.parametrize("discipline", ("sjf", "sjf-first-fit"))
def test_shortest_job_first_kernel_equals_its_reference_job_by_job(name, discipline):
    system = S(**SYSTEMS[name], scheduling=discipline)
    inputs = _inputs(system, 3000, seed=12)
    _same(waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs))


def test_shortest_job_first_on_one_server_is_the_m_g_1_priority_queue():
    """s = 1, k = 1, exponential jobs: non-preemptive SJF's mean waiting E[W] = int lambda E[S^2] / 2 /
    (1 - rho(x))^2 dF(x), rho(x) = lambda int_0^x t dF(t) (Phipps 1956; Kleinrock vol. 2, 3.8), by quadrature;
    it must lie in the run's 95 % t interval over 4 replications, and sjf-first-fit is the same queue."""
    from scipy.integrate import quad

    lam = 0.7
    exact = quad(lambda x: lam / (1 - lam * (1 - math.exp(-x) * (1 + x))) ** 2 * math.exp(-x), 0, math.inf)[0]
    for discipline in ("sjf", "sjf-first-fit"):
        out = bq.simulate(S(servers=1, tasks=1, arrival_rate=lam, scheduling=discipline), jobs=200_000,
                          replications=4, seed=3).summary()
        lo, hi = out["ci"]["waiting"]
        assert lo <= exact <= hi, (discipline, exact, lo, hi)


def test_shortest_job_first_refuses_plain_jobs():
    with pytest.raises(bq.ParameterError, match="barrier jobs only"):
        S(servers=8, tasks=2, barrier_fraction=0.5, arrival_rate=1.0, scheduling="sjf")
