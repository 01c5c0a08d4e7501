"""Failures (Appendix B, section 5): kernel = plain reference per job, exact results against simulation,
identities and refusals."""

import math
import threading

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues import failures as fl
from barrier_queues.inputs import chunk_jobs, draw_jobs
from barrier_queues.runs import run_replication
from barrier_queues.schedulers import central, waitlist
from barrier_queues.schedulers.waitlist_reference import simulate_waitlist_reference

S = bq.BarrierSystem

SYSTEMS = {
    "1-barrier different work": dict(servers=16, tasks=4, arrival_rate=2.0, failure_rate=0.2),
    "2-barrier capped, delay": dict(servers=16, tasks=8, barriers=2, arrival_rate=0.8, failure_rate=0.1,
                                    max_attempts=3, resubmit_delay=0.2),
    "pmf, Result stage (1 attempt)": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.8,
                                          failure_rate=0.05, max_attempts=1),
    "identical work, Erlang tasks": dict(servers=12, tasks=3, arrival_rate=2.0, failure_rate=0.3,
                                         retry_work="identical", task_dist="erlang:shape=3,rate=3"),
    "checkpoints and restarts": dict(servers=8, tasks=4, barriers=2, arrival_rate=0.5, failure_rate=0.2,
                                     retry_work="identical", checkpoint_interval=0.25, checkpoint_cost=0.05,
                                     restart_cost=0.1, resubmit_delay=0.3),
    "2-barrier powers of two": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, barriers=2, arrival_rate=0.4,
                                    failure_rate=0.1, max_attempts=4, resubmit_delay=0.2),
    "hybrid: tasks retried alone": dict(servers=16, tasks=4, barrier_fraction=0.5, arrival_rate=2.0,
                                        failure_rate=0.3, max_attempts=2, resubmit_delay=0.1),
    "non-barrier, identical work, checkpoints": dict(servers=8, tasks=4, barrier_fraction=0.0, arrival_rate=1.2,
                                                     failure_rate=0.5, max_attempts=3, retry_work="identical",
                                                     checkpoint_interval=0.3, checkpoint_cost=0.02,
                                                     restart_cost=0.05, resubmit_delay=0.2),
    "hybrid pmf, 2 barriers, no delay": dict(servers=16, tasks_pmf={2: 0.5, 4: 0.3, 8: 0.2}, barriers=2,
                                             barrier_fraction=0.6, arrival_rate=1.0, failure_rate=0.2,
                                             max_attempts=2),
}
DISCIPLINES = ("fcfs", "first-fit", "backfill", "server-filling")


def _inputs(system, n, seed):
    rng = np.random.default_rng(seed)
    chunk = draw_jobs(system, n, rng)
    return fl.attempts(system, chunk, waitlist.failure_stream(rng))


def _same(kernel, ref):
    for key in ("start", "departure", "work", "useful", "completed", "attempts", "aborted"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key


@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("discipline", DISCIPLINES)
def test_the_kernel_with_failures_equals_its_reference_job_by_job(name, discipline):
    try:
        system = S(**SYSTEMS[name], scheduling=discipline)
    except bq.ParameterError:
        assert discipline == "server-filling"
        return
    inputs = _inputs(system, 2000, seed=7)
    assert inputs["attempts"].max() > 1 or system.max_attempts == 1
    assert inputs["aborted"].any() or system.max_attempts is None
    _same(waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs))


@pytest.mark.slow                      # (11-27 s each here: the full suite runs them)
@pytest.mark.parametrize("discipline, barrier_fraction", [("fcfs", 1.0), ("first-fit", 1.0), ("fcfs", 0.5),
                                                          ("backfill", 0.5)])
def test_across_chunk_boundaries_with_failures(discipline, barrier_fraction):
    """Chunks of 1,024 jobs; failed jobs (and a non-barrier job's failed tasks, its aborts) wait across chunk
    boundaries (their heap entries move with the window)."""
    system = S(servers=64, tasks_pmf={1: 0.6, 64: 0.4}, phases=1, arrival_rate=0.5, failure_rate=0.01,
               max_attempts=4 if barrier_fraction == 1 else 2, resubmit_delay=0.5, scheduling=discipline,
               task_dist="exponential:rate=2", barrier_fraction=barrier_fraction)
    size = chunk_jobs(system)
    jobs = 3 * size + 100
    rep = run_replication(system, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    ref = _chunked_reference(system, jobs, size, 5, 0.5)
    assert rep.jobs["attempts"].max() > 1
    if barrier_fraction < 1:
        assert (rep.jobs["aborted"] & ~rep.jobs["barrier"]).any()
    _same(rep.jobs, ref)


def _chunked_reference(system, jobs, size, seed, delay):
    """The plain reference on the inputs a run draws in chunks of ``size`` jobs, concatenated."""
    rng, parts, done, start = np.random.default_rng(seed), [], 0, 0.0
    frng = waitlist.failure_stream(rng)
    while done < jobs:
        part = fl.attempts(system, draw_jobs(system, min(size, jobs - done), rng, start_time=start), frng)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    cat = {key: np.concatenate([p[key] for p in parts]) for key in ("arrival", "tasks", "barrier", "times",
                                                                     "clocks", "fresh", "unit_attempts")}
    fail = {"clocks": cat["clocks"], "fresh": cat["fresh"], "unit_attempts": cat["unit_attempts"],
            "max_attempts": system.max_attempts, "delay": delay, "identical": False, "tau": None, "delta": None,
            "restart": 0.0, "attempt": fl.get("different").attempt}
    return simulate_waitlist_reference(cat["arrival"], cat["tasks"], cat["barrier"], cat["times"],
                                       system.servers, system.scheduling, failures=fail, release="fixed")


#: a workload of three job classes with laws of their own
WORKLOAD = [{"share": 0.6, "tasks": 2, "barrier": True, "task_dist": "exponential:rate=2"},
            {"share": 0.3, "tasks": 4, "barrier": False, "task_dist": "erlang:shape=2,rate=2"},
            {"share": 0.1, "tasks": 8, "barrier": True, "task_dist": "exponential:rate=0.5"}]

#: heavy load and many failures: hybrid jobs on 16 workers (tasks due again wait at chunk boundaries),
#: non-barrier jobs of 8 tasks on 8 workers (aborts while some of a job's tasks have not started), an
#: overloaded hybrid (the window, and with it the retry and abort heaps, keeps growing), and a workload's
#: classes (the window carries each job's own class)
HEAVY = {"hybrid": dict(servers=16, tasks_pmf={2: 0.5, 4: 0.3, 8: 0.2}, barrier_fraction=0.5, arrival_rate=3.0,
                        failure_rate=0.3, max_attempts=3, resubmit_delay=0.3),
         "non-barrier": dict(servers=8, tasks=8, barrier_fraction=0.0, arrival_rate=0.9, failure_rate=0.2,
                             max_attempts=2, resubmit_delay=0.3),
         "overloaded": dict(servers=8, tasks=8, barrier_fraction=0.5, arrival_rate=1.3, failure_rate=0.2,
                            max_attempts=2, resubmit_delay=0.3),
         "workload": dict(servers=16, workload=WORKLOAD, arrival_rate=1.6, failure_rate=0.3, max_attempts=3,
                          resubmit_delay=0.3)}


def _heavy_in_small_chunks(name, discipline):
    """A :data:`HEAVY` system in chunks of 50 jobs (the window shrinks at every boundary): the run's jobs and
    the reference's."""
    size = 50
    system = S(**HEAVY[name], scheduling=discipline)
    jobs = 40 * size + 3
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(waitlist, "chunk_jobs", lambda system: size)
        rep = run_replication(system, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    return rep.jobs, _chunked_reference(system, jobs, size, 5, system.resubmit_delay)


@pytest.mark.parametrize("name", ["hybrid", "overloaded"])
@pytest.mark.parametrize("discipline", ["fcfs", "backfill"])
def test_failed_tasks_due_again_keep_their_units_when_the_window_shrinks(name, discipline, monkeypatch):
    """A non-barrier job waiting at a chunk boundary with failed tasks due again (its list ``rtop``, then
    ``unext``, of unit indices) keeps them when the window drops the units of jobs done before it: the
    indices are renumbered with the units. The case occurs here (counted), on the overloaded system with lists
    of more than one task (``unext`` read); without the renumbering the kernel started the wrong units (a job
    never started, or a crash)."""
    append, pending, chained = waitlist._Window._append_prebuilt, [], []

    def counting(self, chunk, prep):
        if self.pending is not None:                    # (the jobs kept from the last chunk)
            top = self.arrays["rtop"][self.pending]
            top = top[top >= 0]
            pending.append(top.size)
            chained.append(int((self.units.view["unext"][top] >= 0).sum()))
        return append(self, chunk, prep)

    monkeypatch.setattr(waitlist._Window, "_append_prebuilt", counting)
    jobs, ref = _heavy_in_small_chunks(name, discipline)
    assert sum(pending) > 0
    assert name != "overloaded" or sum(chained) > 0
    _same(jobs, ref)


def test_a_workloads_jobs_keep_their_own_classes_through_the_window_with_failures(monkeypatch):
    """With failures the window's buffers carry each job's class of the workload (``job_class``: what the
    per-class statistics read, not the kernel), written where the chunk is drawn: under backfill, in chunks of
    50 jobs, every job reaches the statistics with the class it was drawn with, in arrival order."""
    from barrier_queues.runs import Sink

    add, seen = Sink.add, []

    def spy(self, chunk):
        if "attempts" in chunk:                             # (this run's jobs, not ensure_compiled's warm-up)
            seen.append((chunk["arrival"].copy(), chunk["cls"].copy()))
        return add(self, chunk)

    monkeypatch.setattr(Sink, "add", spy)
    size = 50
    system = S(**HEAVY["workload"], scheduling="backfill")
    jobs = 40 * size + 3
    monkeypatch.setattr(waitlist, "chunk_jobs", lambda system: size)
    run_replication(system, jobs, np.random.default_rng(5), warmup=0)
    rng, drawn, done, start = np.random.default_rng(5), [], 0, 0.0
    waitlist.failure_stream(rng)                            # (as a run: its attempts' stream spawned first)
    while done < jobs:
        drawn.append(draw_jobs(system, min(size, jobs - done), rng, start_time=start))
        done += drawn[-1]["arrival"].size
        start = drawn[-1]["arrival"][-1]
    assert np.array_equal(np.concatenate([a for a, _ in seen]), np.concatenate([p["arrival"] for p in drawn]))
    classes = np.concatenate([c for _, c in seen])
    assert np.array_equal(classes, np.concatenate([p["cls"] for p in drawn]))
    assert np.unique(classes).size == 3


@pytest.mark.parametrize("discipline", ["fcfs", "backfill"])
def test_a_chunk_prepared_with_too_little_room_for_the_jobs_kept_is_rebuilt_and_the_room_grows(discipline,
                                                                                           monkeypatch):
    """With failures a chunk's buffers are written where it is drawn, with room before it for the jobs, units
    and draws the window keeps from the last chunk (at least ``ROOMS``, else twice the most kept so far). With
    rooms of one, the first chunks that keep more are rebuilt with more room (the rest fit), and the jobs
    are the reference's; an overloaded system keeps ever more."""
    prebuild, rebuilt, rooms = waitlist._Window._prebuild, [], []

    def spy(self, chunk, prep, room, seq):
        if threading.current_thread() is threading.main_thread() and self.rows is not None:
            rebuilt.append(room)                            # (append's rebuild, on the kernel's thread)
        rooms.append(room)
        return prebuild(self, chunk, prep, room, seq)

    monkeypatch.setattr(waitlist._Window, "ROOMS", (1, 1, 1))
    monkeypatch.setattr(waitlist._Window, "_prebuild", spy)
    jobs, ref = _heavy_in_small_chunks("overloaded", discipline)
    assert rebuilt and len(rebuilt) < 40                    # some chunks rebuilt, not every one
    assert max(r[0] for r in rooms) > 100                   # the room grew with the window
    _same(jobs, ref)


@pytest.mark.parametrize("name", HEAVY)
@pytest.mark.parametrize("discipline", ["fcfs", "backfill"])
def test_the_unit_fields_left_unfilled_are_written_before_they_are_read(name, discipline, monkeypatch):
    """The window does not fill ``unext`` and ``urun`` of a chunk's units. With those rows poisoned at every chunk
    (floats +inf: each unit's attempt would still run; integers 2**40, far out of range) the jobs are the
    reference's, with non-barrier aborts (which read ``urun``) and tasks due again (``unext``)."""
    write = waitlist._write
    poison = {np.dtype(np.float64): np.inf, np.dtype(np.int64): 2 ** 40}
    poisoned = []

    def poisoning(buffers, new, at):                    # (a chunk's rows and units, written where it is drawn)
        for field, values in buffers.items():
            if field not in new:
                values[at:] = poison[values.dtype]
                poisoned.append(field)
        write(buffers, new, at)

    monkeypatch.setattr(waitlist, "_write", poisoning)
    jobs, ref = _heavy_in_small_chunks(name, discipline)
    assert set(poisoned) == {"unext", "urun"}
    assert (jobs["aborted"] & ~jobs["barrier"]).any()
    _same(jobs, ref)


@pytest.mark.parametrize("discipline", ["fcfs", "backfill"])
def test_the_retry_and_abort_heaps_grow_with_the_entries_they_hold(discipline, monkeypatch):
    """The heaps of failed units due again and of aborts get room for every unit of a growing window; what they
    hold when they grow moves with them (the rest is left untouched): the jobs are the reference's, and a
    growth with entries held occurred."""
    append, grew = waitlist._Window.append, []

    def spy(self, chunk):
        size, held = self.state.rt_time.size, int(self.state.heap_state[2:].sum())
        pos = append(self, chunk)
        if self.state.rt_time.size > size:
            grew.append(held)
        return pos

    monkeypatch.setattr(waitlist._Window, "append", spy)
    jobs, ref = _heavy_in_small_chunks("overloaded", discipline)
    assert max(grew) > 0
    _same(jobs, ref)


def test_a_non_barrier_jobs_abort_kills_its_running_tasks():
    """Hand-made draws: job 0 (non-barrier, 2 tasks, 1 attempt each) fails its task 0 at 0.5 and aborts; its
    task 1 (work 3) is killed at 0.5, freeing its worker for job 1 (barrier, 2 tasks)."""
    system = S(servers=2, tasks=2, barrier_fraction=0.5, arrival_rate=1.0, failure_rate=0.1, max_attempts=1)
    chunk = {"arrival": np.array([0.0, 0.1]), "tasks": np.array([2, 2]), "barrier": np.array([False, True]),
             "offsets": np.array([0, 2]), "times": np.array([1.0, 3.0, 1.0, 1.0])}
    u = fl.units(chunk)
    inputs = dict(chunk, toff=np.array([0, 2]), holds=np.array([0.5, 3.0, 1.0, 1.0]),
                  attempts=np.array([1, 1]), aborted=np.array([True, False]), useful=np.array([0.0, 2.0]),
                  unit_attempts=np.array([1, 1, 1]), unit_aborted=np.array([True, False, False]),
                  unit_toff=np.array([0, 1, 2]), unit_first=u["first"], clocks=np.array([0.5, 9.0, 9.0, 9.0]),
                  fresh=np.full(4, np.nan))
    for discipline in ("fcfs", "first-fit", "backfill"):
        out = waitlist.run_inputs(system.replace(scheduling=discipline), inputs)
        ref = waitlist.reference(system.replace(scheduling=discipline), inputs)
        _same(out, ref)
        assert out["departure"].tolist() == [0.5, 1.5]             # job 1 starts at the abort, on both workers
        assert out["work"].tolist() == [1.0, 2.0]                  # task 1 held its worker 0.5, not 3
        assert out["completed"].tolist() == [0, 2]


def test_retried_exponential_non_barrier_tasks_change_nothing_but_the_work():
    """Appendix B, section 5: with D = 0 and no cap, a task retried alone holds its worker Exp(mu) in all
    (memorylessness): k = 1 non-barrier jobs stay the M/M/s queue (Erlang C), and the work per job is k E[X];
    an attempt cap aborts a job with probability 1 - (1 - (1 - p)^A)^k."""
    from barrier_queues.bounds import erlang_c
    from barrier_queues.stability import known_limit

    lam, s_, gamma = 3.0, 4, 0.5
    system = S(servers=s_, tasks=1, barrier_fraction=0.0, arrival_rate=lam, failure_rate=gamma)
    res = bq.simulate(system, jobs=40_000, replications=8, seed=41, workers=1)
    summary = res.summary()
    lo, hi = summary["ci"]["waiting"]
    assert lo <= erlang_c(s_, lam) / (s_ - lam) <= hi
    lo, hi = summary["failure_ci"]["mean_attempts"]
    assert lo <= 1 + gamma <= hi                          # geometric: 1 / p with p = mu / (mu + gamma)
    assert known_limit(system)[0] == pytest.approx(s_)
    k, cap = 4, 2
    p = 1.0 / (1.0 + gamma)
    capped = bq.simulate(S(servers=8, tasks=k, barrier_fraction=0.0, arrival_rate=0.5, failure_rate=gamma,
                           max_attempts=cap), jobs=20_000, replications=8, seed=42).summary()
    lo, hi = capped["failure_ci"]["aborted_share"]
    assert lo <= 1 - (1 - (1 - p) ** cap) ** k <= hi


def test_without_a_failure_the_failure_path_is_the_papers_fifo_bit_for_bit():
    """A failure rate too small to strike: the waiting list with attempts gives the central FIFO kernel's jobs."""
    base = S(servers=16, tasks_pmf={2: 0.5, 8: 0.5}, arrival_rate=1.0)
    tiny = base.replace(failure_rate=1e-12)
    inputs = _inputs(tiny, 3000, seed=3)
    assert (inputs["attempts"] == 1).all()
    out = waitlist.run_inputs(tiny, inputs)
    plain = central.run_inputs(base, inputs)
    for key in ("start", "departure", "work"):
        assert np.array_equal(out[key], plain[key]), key


def test_attempt_moments_closed_forms():
    k, mu, gamma = 5, 1.0, 0.3
    m = fl.attempt_moments(k, mu, gamma)
    q = mu / (mu + gamma)
    assert m["p"] == pytest.approx(q ** k, rel=1e-14)
    assert m["mean"] == pytest.approx(sum(q ** (k - j) / (j * (mu + gamma)) for j in range(1, k + 1)), rel=1e-14)
    assert m["p"] + m["failure_prob"] == pytest.approx(1.0, rel=1e-14)
    # the transform's slope at 0 is minus the mean execution (identity), checked by a central difference
    h = 1e-5
    slope = (fl.execution_transform(h, k, mu, gamma, 0.4) - fl.execution_transform(-h, k, mu, gamma, 0.4)) / (2 * h)
    assert -slope == pytest.approx(fl.mean_execution(k, mu, gamma, 0.4), rel=1e-6)
    assert fl.execution_transform(0.0, k, mu, gamma) == pytest.approx(1.0, rel=1e-14)


def _one_job_at_a_time(k=4, gamma=0.25, delay=0.0, cap=None, rate=0.1, **kw):
    return S(servers=k, tasks=k, barriers=2, arrival_rate=rate, failure_rate=gamma, resubmit_delay=delay,
             max_attempts=cap, **kw)


def test_mean_execution_attempts_and_aborts_against_simulation():
    """A job alone (arrivals so rare that no other job takes its workers during a resubmit delay)."""
    k, gamma, delay = 4, 0.25, 0.5
    m = fl.attempt_moments(k, 1.0, gamma)
    res = bq.simulate(_one_job_at_a_time(k, gamma, delay, rate=1e-6), jobs=40_000, replications=8, seed=31)
    s = res.summary()
    lo, hi = s["ci"]["execution"]
    assert lo <= fl.mean_execution(k, 1.0, gamma, delay) <= hi
    lo, hi = s["failure_ci"]["mean_attempts"]
    assert lo <= 1 / m["p"] <= hi
    assert s["aborted_share"] == 0
    capped = bq.simulate(_one_job_at_a_time(k, gamma, 0.0, cap=2), jobs=40_000, replications=8, seed=32).summary()
    lo, hi = capped["failure_ci"]["aborted_share"]
    assert lo <= fl.abort_probability(m["p"], 2) <= hi
    lo, hi = capped["failure_ci"]["mean_attempts"]
    assert lo <= 1 + (1 - m["p"]) <= hi                  # min(G + 1, 2): 1 + P(first attempt fails)


@pytest.mark.parametrize("cap", [None, 3])
def test_one_job_at_a_time_is_an_m_g_1_queue(cap):
    """s = k, 2 barriers, D = 0: Pollaczek-Khinchine with the service law of all of a job's attempts."""
    k, gamma = 4, 0.25
    first, _ = fl.holding_moments(k, 1.0, gamma, cap)
    rate = 0.5 / first
    res = bq.simulate(_one_job_at_a_time(k, gamma, 0.0, cap=cap, rate=rate), jobs=100_000, replications=10, seed=33)
    lo, hi = res.summary()["ci"]["waiting"]
    assert lo <= fl.mg1_waiting(rate, k, 1.0, gamma, cap) <= hi


def test_dalys_wall_time_for_lockstep_deterministic_tasks_with_checkpoints():
    k, gamma, work, tau, delta, restart = 4, 0.05, 6.0, 1.5, 0.2, 0.3
    system = S(servers=k, tasks=k, barriers=2, arrival_rate=0.01, failure_rate=gamma, retry_work="identical",
               checkpoint_interval=tau, checkpoint_cost=delta, restart_cost=restart,
               task_dist=f"deterministic:value={work}")
    res = bq.simulate(system, jobs=20_000, replications=8, seed=34)
    lo, hi = res.summary()["ci"]["execution"]
    exact = fl.daly_wall_time(work, tau, delta, restart, 1 / (k * gamma))
    assert lo <= exact <= hi, (lo, exact, hi)


def test_best_checkpoint_interval_beside_young_and_daly():
    delta, mtbf = 0.1, 50.0
    best = fl.best_interval(delta, mtbf)

    def per_work(t):
        return math.expm1((t + delta) / mtbf) / t

    assert per_work(best) <= per_work(best * 1.01) and per_work(best) <= per_work(best * 0.99)
    assert fl.young_interval(delta, mtbf) == pytest.approx(math.sqrt(2 * delta * mtbf))
    assert abs(fl.daly_interval(delta, mtbf) / best - 1) < abs(fl.young_interval(delta, mtbf) / best - 1) < 0.05


def test_two_barrier_limit_with_failures_against_a_saturated_run():
    system = S(servers=8, tasks=4, barriers=2, failure_rate=0.1, max_attempts=4, resubmit_delay=0.2)
    exact = fl.two_barrier_lambda_max(8, 4, 1.0, 0.1, 4)
    est = bq.saturated_throughput(system, jobs=50_000, replications=8, seed=35)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact <= hi, (lo, exact, hi)


def test_one_barrier_limit_with_failures_ctmc_against_ctmc_module_and_a_saturated_run():
    """The failure chain's own breadth-first enumeration: with gamma -> 0 it is the paper's (s, k, k) chain
    (barrier_queues.ctmc, key arithmetic); with gamma = 0.2 a saturated simulation's interval contains it, and
    the simulator's guard uses it."""
    from barrier_queues.ctmc import ctmc_stability
    from barrier_queues.stability import known_limit

    assert fl.one_barrier_lambda_max(12, 4, 1.0, 1e-12) == pytest.approx(ctmc_stability(12, 4).lambda_max,
                                                                          rel=1e-9)
    exact = fl.one_barrier_lambda_max(8, 4, 1.0, 0.2)
    system = S(servers=8, tasks=4, failure_rate=0.2)
    assert known_limit(system) == pytest.approx((exact, known_limit(system)[1]))
    assert exact < ctmc_stability(8, 4).lambda_max
    est = bq.saturated_throughput(system, jobs=50_000, replications=8, seed=37)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact <= hi, (lo, exact, hi)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_attempts=2), "max_attempts must be None without failure_rate"),
    (dict(failure_rate=0.1, checkpoint_interval=1.0), "retry_work must be 'identical' with checkpoint_interval"),
    (dict(failure_rate=0.1, checkpoint_cost=1.0), "checkpoint_cost must be None without checkpoint_interval"),
    (dict(failure_rate=0.1, release="timeout", timeout=2.0), "release must be 'fixed' with failure_rate"),
    (dict(failure_rate=-1.0), "failure_rate must be"),
    (dict(failure_rate=10.0), "failure_rate must keep gamma k E\\[X\\] <= 20 without max_attempts"),
    (dict(failure_rate=0.1, retry_work="same"), "retry_work must be one of"),
])
def test_refusals_name_the_parameter(kwargs, message):
    with pytest.raises(bq.ParameterError, match=message):
        S(servers=8, tasks=4, arrival_rate=1.0, **kwargs)


def test_aborted_jobs_are_reported_apart_and_kept():
    system = S(servers=8, tasks=4, arrival_rate=0.5, failure_rate=0.2, max_attempts=1)
    res = bq.simulate(system, jobs=5_000, replications=2, seed=36, keep_jobs=True)
    frame = res.to_frame()
    s = res.summary()
    assert frame.aborted.any() and (frame.attempts == 1).all()
    assert s["aborted_jobs"] == int(frame.aborted.sum())
    assert s["jobs"] <= int((~frame.aborted).sum())
    assert 0 < s["goodput"] < 1


def test_retries_change_the_work_per_submitted_job_but_not_per_completed_job():
    """Barrier jobs of k = 4 Exp(1) tasks, gamma = 0.2, a fresh draw per attempt. An attempt spends task time
    sum_{j=k..1} q^(k-j) / (mu + gamma) (j tasks run a stage of mean 1 / (j (mu + gamma)), reached with
    probability q^(k-j), q = mu / (mu + gamma)) and succeeds with p = q^k: per completed job E[work] / p = 5.367
    with 1 attempt or 4 (renewal-reward), while per submitted job the 4-attempt cap spends more, (1 - (1-p)^4) / p
    attempts against 1."""
    mu, gamma, k = 1.0, 0.2, 4
    q = mu / (mu + gamma)
    attempt_work = sum(q ** (k - j) for j in range(k, 0, -1)) / (mu + gamma)
    p = q ** k
    per = {}
    for cap in (1, 4):
        system = S(servers=8, tasks=k, arrival_rate=0.1, failure_rate=gamma, max_attempts=cap, resubmit_delay=0.5)
        per[cap] = bq.simulate(system, jobs=20_000, replications=4, seed=7).summary()
    for cap, s in per.items():
        lo, hi = s["failure_ci"]["work_per_completed"]
        assert lo <= attempt_work / p <= hi, (cap, s["work_per_completed"], attempt_work / p)
        expected_submitted = attempt_work * (1 - (1 - p) ** cap) / p
        lo, hi = s["failure_ci"]["work_per_job"]
        assert lo <= expected_submitted <= hi, (cap, s["work_per_job"], expected_submitted)
    assert per[4]["work_per_job"] > 1.5 * per[1]["work_per_job"]


def test_the_command_line_reports_failures_and_refuses_bad_options():
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "8", "-k", "4", "-b", "2",
           "--arrival-rate", "0.3", "--failure-rate", "0.1", "--max-attempts", "2", "--resubmit-delay", "0.2",
           "--jobs", "4000", "--replications", "2", "--seed", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert 0 < doc["aborted_share"] < 1 and 1 < doc["mean_attempts"] < 2 and 0 < doc["goodput"] < 1
    assert doc["config"]["failure_rate"] == 0.1 and doc["config"]["max_attempts"] == 2
    bad = subprocess.run(cmd[:-1] + ["--checkpoint-interval", "1", "--json"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "retry_work must be 'identical' with checkpoint_interval" in bad.stderr


def test_plan_gang_prefers_a_middle_k():
    """Work 8 on 8 workers, gamma 0.1, restart cost 3: a job alone takes M e^(R/M) (e^(W/(k M)) - 1) with
    M = 1/(k gamma) (Daly, one segment): 16.5, 11.2, 10.2, 16.9 for k = 1, 2, 4, 8 (the failure probability of an
    attempt, gamma W, does not depend on k; the restart cost weighs more as M shrinks). The planner's best k is
    in the middle."""
    from barrier_queues.planning import plan_gang

    out = plan_gang(8, 8.0, 0.1, 0.05, restart_cost=3.0, jobs=3000, replications=3, seed=2)
    assert [c["k"] for c in out["curve"]] == [1, 2, 4, 8]
    sojourn = {c["k"]: c["mean_sojourn"] for c in out["curve"]}
    assert out["best_k"] in (2, 4) and sojourn[out["best_k"]] < min(sojourn[1], sojourn[8])


def test_the_failure_commands_printed_in_the_manual_and_the_chapter_run_as_printed():
    """Each `simulate` line with --failure-rate in the manual and book/failures.md runs and exits 0 (one printed
    example was once above its stability limit and refused)."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    lines = [line.strip().lstrip("$ ").split("barrier-queues ", 1)[1]
             for f in ("book/reference/manual.md", "book/failures.md") for line in (root / f).read_text().splitlines()
             if "barrier-queues simulate" in line and "--failure-rate" in line]
    assert len(lines) >= 4
    for line in lines:
        out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", *shlex.split(line)], capture_output=True,
                             text=True)
        assert out.returncode == 0, (line, out.stderr[-500:])


def test_a_sweep_of_failure_systems_reports_aborts_attempts_and_goodput(tmp_path):
    """Plain, hybrid and barrier jobs with failures under Spark's rule in one sweep: each row carries the
    aborted share (Wilson interval), mean attempts and goodput (t intervals)."""
    table = bq.sweep({"servers": 16, "tasks": 4, "barrier_fraction": [0.0, 0.5, 1.0], "failure_rate": 0.1,
                      "max_attempts": 4, "scheduling": "first-fit", "utilization": 0.4}, tmp_path / "sw",
                     jobs=5_000, replications=2, seed=3, workers=1)
    assert len(table) == 3
    for key in ("aborted_share", "mean_attempts", "goodput"):
        assert (table[f"{key}_ci_low"] <= table[key]).all() and (table[key] <= table[f"{key}_ci_high"]).all()
    assert (table.mean_attempts > 1).all() and table.goodput.between(0, 1).all()


@pytest.mark.parametrize("name", [*SYSTEMS, "workload classes", "uncapped, many rounds"])
def test_the_compiled_attempts_equal_numpys_bit_for_bit(name):
    """``attempts`` with each round's arithmetic and the layout compiled (``attempt_round``,
    ``attempt_layout``) against the numpy code of the same steps, its plain reference: every array equal bit
    for bit (NaN where no fresh draw), the same draws taken from the stream, on every system of this file
    (different and identical work, checkpoints and restarts, caps, hybrid and non-barrier units), a workload's
    classes with their own laws, and a rate high enough for many rounds."""
    if name == "workload classes":
        system = S(servers=16, workload=WORKLOAD, arrival_rate=1.0, failure_rate=0.3, max_attempts=5)
    elif name == "uncapped, many rounds":
        system = S(servers=16, tasks=16, arrival_rate=0.5, failure_rate=0.15)
    else:
        system = S(**SYSTEMS[name])
    chunk = draw_jobs(system, 3000, np.random.default_rng(31))
    rngs = [np.random.default_rng(32), np.random.default_rng(32)]
    fast, ref = (fl.attempts(system, chunk, rng, compiled=c) for rng, c in zip(rngs, (True, False), strict=True))
    assert fast.keys() == ref.keys()
    for key in ref:
        assert fast[key].dtype == ref[key].dtype and np.array_equal(fast[key], ref[key], equal_nan=True), key
    assert rngs[0].random() == rngs[1].random()                # the same draws, in the same order
    assert ref["unit_attempts"].max() >= (3 if name == "uncapped, many rounds" else min(2, system.max_attempts or 2))
    assert ref["aborted"].any() == (system.max_attempts is not None)     # caps abort some jobs here


def test_attempts_without_the_raw_draws_lay_out_the_same_holds():
    """``raw=False`` (a run's chunks: the kernel reads the holds, only the reference the clocks and fresh
    draws) leaves out ``clocks`` and ``fresh`` and changes nothing else: every other array equal, the same
    draws taken from the stream."""
    system = S(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.0, failure_rate=0.2, max_attempts=4,
               retry_work="different")
    chunk = draw_jobs(system, 3000, np.random.default_rng(5))
    rngs = [np.random.default_rng(6), np.random.default_rng(6)]
    full, lean = (fl.attempts(system, chunk, rng, raw=raw) for rng, raw in zip(rngs, (True, False), strict=True))
    assert set(full) - set(lean) == {"clocks", "fresh"} and set(lean) <= set(full)
    for key in lean:
        assert np.array_equal(full[key], lean[key]), key
    assert rngs[0].random() == rngs[1].random()
    assert (full["unit_attempts"] > 1).any() and np.isfinite(full["fresh"]).any()


def test_an_error_drawing_attempts_in_their_own_thread_surfaces_and_ends_the_run(monkeypatch):
    """A chunk's attempts are drawn in a thread of their own: an error there reaches the caller (no hang), and
    no thread of the run is left behind."""
    import threading

    real, calls = fl.attempts, []

    def failing(*args, **kwargs):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise bq.ParameterError("the third chunk's attempts failed")
        return real(*args, **kwargs)

    monkeypatch.setattr(fl, "attempts", failing)
    system = S(servers=16, tasks=4, barrier_fraction=0.5, arrival_rate=2.0, failure_rate=0.05, max_attempts=3)
    before = threading.active_count()
    with pytest.raises(bq.ParameterError, match="third chunk"):
        run_replication(system, 5 * chunk_jobs(system), np.random.default_rng(1), warmup=0)
    assert threading.active_count() == before
    assert threading.main_thread().name not in calls          # (drawn off the kernel's thread)


def test_stability_limit_knows_failures():
    """stability_limit of a system with failures gave the limit without them (0.96 for s = 8, k = 4, 2 barriers)
    while simulate refused loads with the failure-aware one: it now gives that one (floor(s/k) / E[time a job
    holds its workers]: 0.884 at gamma = 0.1 with 4 attempts), and refuses where none is known."""
    from barrier_queues.stability import known_limit

    system = S(servers=8, tasks=4, barriers=2, failure_rate=0.1, max_attempts=4)
    lim = bq.stability_limit(system)
    assert lim.lambda_max == known_limit(system)[0] < bq.stability_limit(8, 4, barriers=2).lambda_max
    assert lim.rho_max == pytest.approx(lim.lambda_max * 4 / 8)
    with pytest.raises(bq.ParameterError, match="stability limit with failures is known for"):
        bq.stability_limit(S(servers=8, tasks=4, barriers=2, failure_rate=0.1, task_dist="erlang:shape=2,rate=2"))


@pytest.mark.parametrize("warmup", [None, 0])
def test_the_sojourn_of_every_submitted_job_is_its_per_job_mean(warmup):
    """mean_sojourn_submitted is the mean of departure - arrival over every submitted job (an aborted one until
    its abort) after the warm-up, computed here from the per-job records over 3 chunks of 65,536 jobs: the
    measured jobs' warm-up carried to the first multiple of 100 submitted jobs by which that many completed;
    mean_abort_sojourn is the aborted jobs' alone; metric() gives the completed jobs summary() measures."""
    system = S(servers=8, tasks=4, arrival_rate=0.6, failure_rate=0.2, max_attempts=2)
    res = bq.simulate(system, jobs=150_000, replications=2, seed=11, warmup=warmup, keep_jobs=True)
    s = res.summary()
    sums = np.zeros(4)
    per_rep = []
    for r in res.replications:
        j = r.jobs
        sojourn, aborted = j["departure"] - j["arrival"], j["aborted"]
        done = np.cumsum(~aborted)
        cut = 0
        if r.stats.warmup > 0:
            cut = next(m for m in range(100, sojourn.size + 1, 100) if done[m - 1] >= r.stats.warmup)
            assert cut - 100 <= np.flatnonzero(done >= r.stats.warmup)[0] < cut
        kept, lost = sojourn[cut:], aborted[cut:]
        sums += [kept.sum(), kept.size, kept[lost].sum(), lost.sum()]
        per_rep.append(kept.mean())
    assert s["mean_sojourn_submitted"] == pytest.approx(sums[0] / sums[1], rel=1e-12)
    assert s["mean_abort_sojourn"] == pytest.approx(sums[2] / sums[3], rel=1e-12)
    lo, hi = s["failure_ci"]["sojourn_submitted"]
    assert lo < np.mean(per_rep) < hi and s["aborted_jobs"] > 1000
    assert res.metric("sojourn").mean() == pytest.approx(s["mean_sojourn"], rel=1e-12)
    assert "mean_sojourn_submitted" in s["measured_jobs"]
