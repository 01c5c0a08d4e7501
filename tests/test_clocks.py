"""Gang clocks (EXTENSIONS.md section 8): kernel = plain reference job by job, across chunk boundaries; no clock
= today's model; queueing oracles M/M/s+M (Erlang-A) and M/M/s/s (Erlang-B); what a requeue costs."""

import math
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

import barrier_queues as bq
from barrier_queues import clocks
from barrier_queues.inputs import child_stream, chunk_jobs, draw_jobs
from barrier_queues.runs import run_replication
from barrier_queues.schedulers import waitlist
from barrier_queues.schedulers.waitlist_reference import simulate_waitlist_reference

S = bq.BarrierSystem
FIELDS = ("start", "departure", "work", "useful", "completed", "lost", "requeues", "backoff")

SYSTEMS = {
    "heterogeneous k": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.9),
    "hybrid": dict(servers=12, tasks_pmf={1: 0.5, 3: 0.3, 12: 0.2}, barrier_fraction=0.7, arrival_rate=1.0),
    "2-barrier powers of two": dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, barriers=2, arrival_rate=0.5),
    "classes, Erlang tasks": dict(servers=8, workload=[{"share": 0.7, "tasks": 1, "task_dist": "erlang:shape=3,rate=3"},
                                                       {"share": 0.3, "tasks": 8}], arrival_rate=1.5),
}
CLOCKS = {
    "constant, leave": dict(wait_budget=2.0),
    "zero, leave": dict(wait_budget=0),
    "patience, leave": dict(wait_budget="exp:3"),
    "runtime, requeue": dict(wait_budget="runtime:1.5", on_budget="requeue", requeue_backoff="0.5,4"),
    "tasks, requeue twice": dict(wait_budget="tasks:0.3", on_budget="requeue", requeue_backoff=1, requeue_limit=2),
    "work, requeue never": dict(wait_budget="work:0.05", on_budget="requeue", requeue_backoff="1", requeue_limit=0),
}


def _same(kernel, ref, fields=FIELDS):
    for key in fields:
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key


def _with_budgets(system, n, seed):
    inputs = draw_jobs(system, n, np.random.default_rng(seed))
    inputs["budget"] = clocks.budgets(system, inputs, np.random.default_rng(seed + 1))
    return inputs


@pytest.mark.parametrize("clock", CLOCKS)
@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("discipline", ("fcfs", "first-fit", "backfill", "server-filling", "aging"))
def test_the_kernel_equals_its_reference_job_by_job(discipline, name, clock):
    aging = {"aging_after": 3.0} if discipline == "aging" else {}
    try:
        system = S(**SYSTEMS[name], scheduling=discipline, **CLOCKS[clock], **aging)
    except bq.ParameterError:
        assert discipline == "server-filling"            # defined for 2-barrier powers of two only
        return
    inputs = _with_budgets(system, 2500, seed=11)
    kernel = waitlist.run_inputs(system, inputs)
    _same(kernel, waitlist.reference(system, inputs))
    if clock == "work, requeue never":                   # a limit of 0: the first firing loses the job
        assert not kernel["requeues"].any()


def _chunked_inputs(system, jobs, seed, size):
    """The inputs a replication of ``jobs`` jobs draws from ``seed``, chunk by chunk (``size`` jobs each), as
    one run's arrays, with each chunk's budgets from the clocks' own stream, and the run's jitter seed."""
    rng = np.random.default_rng(seed)
    crng = child_stream(rng)
    jitter = clocks.jitter_seed(crng)             # (a child of crng: the budgets' draws are not moved)
    parts, done, start = [], 0, 0.0
    while done < jobs:
        part = draw_jobs(system, min(size, jobs - done), rng, start_time=start)
        part["budget"] = clocks.budgets(system, part, crng)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    keys = ("arrival", "tasks", "barrier", "times", "budget")
    return {key: np.concatenate([p[key] for p in parts]) for key in keys}, jitter


@pytest.mark.parametrize("discipline", ("fcfs", "first-fit", "backfill", "aging", "hold", "hold, exponential"))
def test_across_chunk_boundaries_a_replication_equals_the_reference_on_its_inputs(discipline):
    """Gangs of 2,048 tasks make chunks of 2,048 jobs: waiting, requeued and returning gangs cross chunk
    boundaries (their heap entries renumbered as the window moves; hold's holder too, and its exponential
    timeouts drawn from the run's seed)."""
    own = {"aging": {"aging_after": 1.5, "wait_budget": "exp:2"}, "hold": {"hold_timeout": 0.7},
           "hold, exponential": {"hold_timeout": "exp:0.7"}}.get(discipline, {"wait_budget": "exp:2"})
    discipline = discipline.split(",")[0]
    system = S(servers=2048, tasks_pmf={1: 0.9, 2048: 0.1}, arrival_rate=0.9, scheduling=discipline,
               on_budget="requeue", requeue_backoff="0.5,3", requeue_limit=3, **own)
    size = chunk_jobs(system)
    assert size == 2048
    jobs = 5000
    rep = run_replication(system, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    cat, seed = _chunked_inputs(system, jobs, 5, size)
    ref = simulate_waitlist_reference(cat["arrival"], cat["tasks"], cat["barrier"], cat["times"], 2048, discipline,
                                      release="fixed", clock={**clocks.settings(system), "budgets": cat["budget"],
                                                              "jitter_seed": seed},
                                      aging_after=system.aging_after)
    _same(rep.jobs, ref, FIELDS + (("held",) if discipline == "hold" else ()))
    assert rep.jobs["requeues"].sum() > 100 and rep.jobs["lost"].sum() > 10       # the clocks did act


@pytest.mark.parametrize("discipline", ("fcfs", "first-fit", "backfill"))
def test_an_infinite_budget_is_todays_model_job_by_job(discipline):
    plain = S(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.9, scheduling=discipline)
    timed = plain.replace(wait_budget="inf")
    assert not clocks.enabled(timed)
    a = bq.simulate(plain, jobs=20_000, replications=1, seed=3, keep_jobs=True).replications[0].jobs
    b = bq.simulate(timed, jobs=20_000, replications=1, seed=3, keep_jobs=True).replications[0].jobs
    _same(a, b, FIELDS[:5])
    # and a budget no job reaches: the clock runs but never fires
    long = plain.replace(wait_budget=1e6, on_budget="requeue", requeue_backoff="1,2")
    c = bq.simulate(long, jobs=20_000, replications=1, seed=3, keep_jobs=True).replications[0].jobs
    _same(a, c, FIELDS[:5])
    assert not c["lost"].any() and not c["requeues"].any()


def _erlang_a(s, lam, mu, theta, n_max=2000):
    """M/M/s+M by its birth-death chain (truncated where the tail is below 1e-300), independently of any closed
    form: the share of jobs that abandon, and the served jobs' mean waiting (an arrival that finds j waiting
    moves up at rate s mu + i theta with i ahead, and leaves at rate theta: it is served with probability
    prod (s mu + i theta) / (s mu + (i + 1) theta) and waits a sum of the phases' mean lengths)."""
    logp = np.zeros(n_max)
    for n in range(1, n_max):
        death = min(n, s) * mu + max(n - s, 0) * theta
        logp[n] = logp[n - 1] + math.log(lam / death)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    abandon = theta * sum(p[n] * (n - s) for n in range(s, n_max)) / lam
    served = p[:s].sum()
    waiting = 0.0
    for n in range(s, n_max - 1):
        j = n - s
        i = np.arange(j + 1)
        rates = s * mu + i * theta
        prob = np.prod(rates / (rates + theta))
        served += p[n] * prob
        waiting += p[n] * prob * np.sum(1.0 / (rates + theta))
    return abandon, waiting / served


def test_one_task_jobs_with_exponential_patience_are_erlang_a():
    """k = 1, exponential tasks and patience, fcfs: M/M/s+M. The exact abandonment share and served mean
    waiting must lie in the run's 95 % t intervals over 4 replications (the tolerance: those intervals)."""
    s, lam, mu, theta = 4, 4.4, 1.0, 0.5                   # offered load 1.1: stable only through abandonment
    system = S(servers=s, tasks=1, arrival_rate=lam, wait_budget=f"exp:{1 / theta}")
    out = bq.simulate(system, jobs=200_000, replications=4, seed=7).summary()
    abandon, waiting = _erlang_a(s, lam, mu, theta)
    lo, hi = out["clocks"]["ci"]["lost_share"]
    assert lo <= abandon <= hi, (abandon, lo, hi)
    lo, hi = out["ci"]["waiting"]
    assert lo <= waiting <= hi, (waiting, lo, hi)
    assert out["stable"] is True                          # it loses jobs instead of growing


def test_a_zero_budget_with_one_task_jobs_is_erlang_b():
    """Budget 0: a job that cannot start at once leaves (M/M/s/s). Erlang's B formula (its recursion) must lie
    in the lost share's 95 % t interval over 4 replications; the served jobs never wait."""
    s, lam = 5, 4.0
    system = S(servers=s, tasks=1, arrival_rate=lam, wait_budget=0, scheduling="first-fit")
    out = bq.simulate(system, jobs=200_000, replications=4, seed=8).summary()
    b = 1.0
    for n in range(1, s + 1):
        b = lam * b / (n + lam * b)
    lo, hi = out["clocks"]["ci"]["lost_share"]
    assert lo <= b <= hi, (b, lo, hi)
    assert out["mean_waiting"] == 0.0


def test_requeues_wait_their_backoffs_and_stop_at_the_limit():
    system = S(servers=16, tasks_pmf={2: 0.6, 16: 0.4}, arrival_rate=0.5, scheduling="first-fit",
               wait_budget="runtime:1", on_budget="requeue", requeue_backoff="0.25,2", requeue_limit=4)
    jobs = bq.simulate(system, jobs=20_000, replications=1, seed=2, keep_jobs=True).replications[0].jobs
    n = jobs["requeues"]
    assert n.max() == 4 and (n[jobs["lost"]] == 4).all()
    expected = np.array([sum(min(2.0, 0.25 * 2 ** (i - 1)) for i in range(1, m + 1)) for m in n])
    assert np.array_equal(jobs["backoff"], expected)
    served = ~jobs["lost"]
    # a served gang waited at least the backoffs it was away for
    assert (jobs["start"][served] - jobs["arrival"][served] >= jobs["backoff"][served]).all()
    lost = jobs["lost"]
    assert (jobs["completed"][lost] == 0).all() and (jobs["departure"][lost] == jobs["start"][lost]).all()


def test_lost_jobs_are_counted_apart_per_class_and_never_measured():
    system = S(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=1.2, scheduling="first-fit",
               wait_budget="runtime:2")
    result = bq.simulate(system, jobs=50_000, replications=2, seed=1, keep_jobs=True)
    out = result.summary()
    jobs = result.replications[0].jobs
    assert jobs["lost"].any()
    waiting = result.metric("waiting", replication=0)
    served = ~jobs["lost"]
    assert waiting.size == served.sum() - result.stats[0].warmup
    rows = {r["tasks"]: r for r in out["classes"]}
    assert rows[16]["lost_share"] > 10 * rows[2]["lost_share"]      # first-fit's widest gangs run out of time
    assert sum(r["lost_jobs"] for r in out["clocks"]["classes"]) == out["clocks"]["lost_jobs"]
    # the tally against the kept jobs (no warm-up cut: every job)
    tally = clocks.tally_after(result.stats[0].extra["clocks"], 0).sum(axis=0)
    assert tally[1] == jobs["lost"].sum() and tally[0] == jobs["lost"].size
    assert math.isclose(tally[2], jobs["work"][jobs["lost"]].sum(), rel_tol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (dict(on_budget="requeue"), "on_budget must be None without wait_budget"),
    (dict(wait_budget=5, on_budget="requeue"), "requeue_backoff must be given"),
    (dict(wait_budget=5, requeue_limit=2), "requeue_limit must be None with on_budget 'leave'"),
    (dict(wait_budget=5, on_budget="requeue", requeue_backoff=1), "needs a CAP"),
    (dict(wait_budget=5, on_budget="requeue", requeue_backoff="2,1"), "CAP >= BASE"),
    (dict(wait_budget="exp:0"), "finite C > 0"),
    (dict(wait_budget="patience:3"), "wait_budget must be a time"),
    (dict(wait_budget=-1), "time >= 0"),
    (dict(wait_budget=5, phases=2), "phases must be 1 with wait_budget"),
    (dict(wait_budget=5, failure_rate=0.1), "failure_rate must be None with wait_budget"),
])
def test_bad_clock_settings_are_refused_in_one_line(bad, message):
    with pytest.raises(bq.ParameterError, match=message):
        S(servers=8, tasks=2, arrival_rate=1.0, **bad)


def test_a_saturated_run_with_a_clock_is_refused():
    system = S(servers=8, tasks=2, wait_budget=3)
    with pytest.raises(bq.ParameterError, match="saturated"):
        bq.saturated_throughput(system, jobs=1000, replications=2)


def test_budgets_are_the_starburst_policies_of_each_job():
    system = S(servers=8, tasks_pmf={1: 0.5, 4: 0.5}, barrier_fraction=0.5, arrival_rate=1.0, wait_budget="work:2")
    inputs = draw_jobs(system, 500, np.random.default_rng(1))
    b = clocks.budgets(system, inputs, None)
    k, off = inputs["tasks"], inputs["offsets"]
    r = np.array([inputs["times"][o:o + n].max() for o, n in zip(off, k, strict=True)])
    assert np.array_equal(b[inputs["barrier"]], (2 * k * r)[inputs["barrier"]])
    assert np.isinf(b[~inputs["barrier"]]).all()                   # plain jobs carry no clock
    patience = clocks.budgets(system.replace(wait_budget="exp:3"), inputs, np.random.default_rng(2))
    barrier = patience[inputs["barrier"]]
    assert sps.kstest(barrier / 3, "expon").pvalue > 1e-3


@pytest.mark.parametrize("name", SYSTEMS)
def test_aging_is_backfill_at_zero_first_fit_at_infinity_and_its_reference_between(name):
    """Volcano's sla-waiting-time as discipline aging: T = 0 gives backfill and T = inf first-fit, job by job;
    between, the kernel equals its reference."""
    plain = S(**SYSTEMS[name])
    inputs = draw_jobs(plain, 4000, np.random.default_rng(5))
    backfill = waitlist.run_inputs(plain.replace(scheduling="backfill"), inputs)
    first_fit = waitlist.run_inputs(plain.replace(scheduling="first-fit"), inputs)
    _same(waitlist.run_inputs(plain.replace(scheduling="aging", aging_after=0), inputs), backfill, FIELDS[:5])
    _same(waitlist.run_inputs(plain.replace(scheduling="aging", aging_after=math.inf), inputs), first_fit,
          FIELDS[:5])
    for t in (0.5, 4.0, 30.0):
        system = plain.replace(scheduling="aging", aging_after=t)
        _same(waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs), FIELDS[:5])


def test_aging_needs_its_wait_and_nothing_else_takes_it():
    with pytest.raises(bq.ParameterError, match="aging_after must be given"):
        S(servers=8, tasks=2, arrival_rate=1.0, scheduling="aging")
    with pytest.raises(bq.ParameterError, match="aging_after must be None unless"):
        S(servers=8, tasks=2, arrival_rate=1.0, scheduling="first-fit", aging_after=3)
    with pytest.raises(bq.ParameterError, match="aging_after must be a time"):
        S(servers=8, tasks=2, arrival_rate=1.0, scheduling="aging", aging_after=-1)


HOLDS = {
    "leave": dict(hold_timeout=2.0),
    "requeue": dict(hold_timeout=0.5, on_budget="requeue", requeue_backoff="1,4"),
    "requeue twice": dict(hold_timeout=1.0, on_budget="requeue", requeue_backoff=0.5, requeue_limit=2),
    "zero": dict(hold_timeout=0),
    "exponential, leave": dict(hold_timeout="exp:1.5"),
    "exponential, requeue with jitter": dict(hold_timeout="exp:0.5", on_budget="requeue", requeue_backoff="1,4",
                                             requeue_jitter=0.2),
}


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("name", SYSTEMS)
def test_hold_kernel_equals_its_reference_job_by_job(name, hold):
    system = S(**SYSTEMS[name], scheduling="hold", **HOLDS[hold])
    inputs = draw_jobs(system, 3000, np.random.default_rng(4))
    inputs["jitter_seed"] = 2026                        # (the exponential timeouts' and the jitter's stream)
    kernel = waitlist.run_inputs(system, inputs)
    _same(kernel, waitlist.reference(system, inputs), FIELDS + ("held",))
    assert kernel["held"].sum() > 0 or hold == "zero"


def test_a_hold_that_never_times_out_is_fcfs_and_holds_every_free_worker_while_a_gang_waits():
    """With a timeout no gang reaches, hold starts the jobs fcfs starts; its held worker time is the integral of
    the free workers over the times a gang waits (every job a barrier job), computed here from the tasks'
    records alone."""
    base = dict(servers=12, tasks_pmf={2: 0.5, 6: 0.3, 12: 0.2}, arrival_rate=0.5)
    system = S(**base, scheduling="hold", hold_timeout=1e12)
    inputs = draw_jobs(system, 3000, np.random.default_rng(9))
    kernel = waitlist.run_inputs(system, inputs)
    _same(kernel, waitlist.run_inputs(S(**base, scheduling="first-fit"), inputs, discipline="fcfs"), FIELDS[:5])
    res, tr = waitlist.reference(system, inputs, trace=True)
    busy_at = np.concatenate([tr["start"], tr["end"]])
    step = np.concatenate([np.ones(len(tr["start"])), -np.ones(len(tr["end"]))])
    arrival, start = np.asarray(inputs["arrival"]), np.asarray(res["start"])
    wait_at = np.concatenate([arrival, start])
    wait_step = np.concatenate([np.ones(arrival.size), -np.ones(start.size)])
    points = np.unique(np.concatenate([busy_at, wait_at]))
    busy = np.array([step[busy_at <= t].sum() for t in points[:-1]])
    waiting = np.array([wait_step[wait_at <= t].sum() for t in points[:-1]])
    held = np.sum((12 - busy) * (waiting > 0) * np.diff(points))
    assert math.isclose(kernel["held"].sum(), held, rel_tol=1e-9)


def test_hold_reports_its_held_share_and_counts_lost_gangs_work():
    system = S(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.77, scheduling="hold",
               hold_timeout=1.0)
    out = bq.simulate(system, jobs=30_000, replications=2, seed=1).summary()
    assert 0 < out["held_share"] < 1 - out["utilization"]
    assert out["lost_jobs"] > 0 and out["stable"] is True
    with pytest.raises(bq.ParameterError, match="hold_timeout must be given"):
        S(servers=8, tasks=2, arrival_rate=1.0, scheduling="hold")
    with pytest.raises(bq.ParameterError, match="wait_budget must be None with scheduling 'hold'"):
        S(servers=8, tasks=2, arrival_rate=1.0, scheduling="hold", hold_timeout=1, wait_budget=3)
    with pytest.raises(bq.ParameterError, match="hold_timeout must be None unless"):
        S(servers=8, tasks=2, arrival_rate=1.0, hold_timeout=1)


def test_the_overload_limit_of_a_hold_that_never_times_out_is_fifos_exact_limit():
    """Overloaded runs (1.5 x the holding ceiling) start jobs at the stability limit: with a timeout no gang
    reaches, hold is fcfs, whose limit for one k is mu / (H_s - H_{s-k}) (the paper's eq. 5); it must lie in
    the runs' 95 % t interval over 4 replications."""
    from barrier_queues.overload import overload_limit
    from barrier_queues.stability import one_barrier_lambda_max

    system = S(servers=8, tasks=4, scheduling="hold", hold_timeout=1e9, on_budget="requeue", requeue_backoff="1,4")
    out = overload_limit(system, jobs=100_000, replications=4, seed=1)
    lo, hi = out["lambda_max_ci"]
    assert lo <= one_barrier_lambda_max(8, 4) <= hi
    with pytest.raises(bq.ParameterError, match="on_budget must be 'requeue' without requeue_limit"):
        overload_limit(system.replace(on_budget="leave", requeue_backoff=None), jobs=1000)
    with pytest.raises(bq.ParameterError, match="a class starves"):
        overload_limit(S(servers=16, tasks_pmf={2: 0.5, 16: 0.5}, scheduling="first-fit"), jobs=20_000, seed=1)


@pytest.mark.parametrize("timeout", [0.1, 2.0, "exp:0.5"])
def test_with_one_k_the_holds_limit_is_fifos_exact_limit_at_every_timeout(timeout):
    """One k: while gangs wait, the head holds every free worker, and a head whose timeout fires hands them to
    the next head at once, so a start happens exactly when k workers are free, as under fcfs, whoever the head
    is; the limit is the paper's mu / (H_s - H_{s-k}) for every timeout. It must lie in the overloaded runs'
    99.9 % t interval over 8 replications (three timeouts: family false-alarm rate 0.3 %; fixed before the
    runs)."""
    from barrier_queues.overload import overload_limit
    from barrier_queues.stability import one_barrier_lambda_max

    system = S(servers=8, tasks=4, scheduling="hold", hold_timeout=timeout, on_budget="requeue",
               requeue_backoff="1,8")
    out = overload_limit(system, jobs=50_000, replications=8, seed=3, level=0.999)
    lo, hi = out["lambda_max_ci"]
    assert lo <= one_barrier_lambda_max(8, 4) <= hi, (lo, hi)


def test_the_manuals_first_clock_command_prints_what_the_manual_says():
    """The manual: under first-fit with runtime:2 budgets and three requeues, about a quarter of the k = 16
    gangs are lost (tolerance fixed before the run: 20-30 %, around the 25.1 % [23.4, 26.7] of two replications
    of 50,000 jobs) and fewer than 1 % of the k = 2 and k = 8 gangs."""
    import json
    import shlex
    import subprocess
    import sys

    readme = (Path(__file__).resolve().parents[1] / "book" / "reference" / "manual.md").read_text()
    line = next(x for x in readme.splitlines() if "--wait-budget runtime:2 --on-budget requeue" in x)
    args = shlex.split(line.removeprefix("$ barrier-queues "))
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", *args, "--json"], capture_output=True, text=True,
                         check=True)
    rows = {c["tasks"]: c for c in json.loads(out.stdout)["clocks"]["classes"]}
    assert 0.2 <= rows[16]["lost_share"] <= 0.3
    assert rows[2]["lost_share"] < 0.01 and rows[8]["lost_share"] < 0.01


def test_gangs_bounced_by_their_clock_faster_than_they_start_are_refused_not_run_forever():
    """A zero hold timeout with unlimited requeues: the k = 16 gangs starve and bounce at every release (the
    events grow without bound); the run stops with one error naming the options that end it."""
    system = S(servers=16, tasks_pmf={2: 0.5, 16: 0.5}, arrival_rate=0.5, scheduling="hold", hold_timeout=0,
               on_budget="requeue", requeue_backoff="1,4")
    with pytest.raises(bq.ParameterError, match="requeue-limit"):
        bq.simulate(system, jobs=100_000, seed=1)
    # with a limit the same gangs are lost after it, and the run ends
    out = bq.simulate(system.replace(requeue_limit=3), jobs=20_000, seed=1).summary()
    assert out["clocks"]["lost_jobs"] > 0


REQUEUES = {
    "eviction": dict(wait_budget="runtime:1.5", on_budget="requeue", requeue_backoff="0.5,4", requeue_limit=8,
                     requeue_order="eviction"),
    "jitter": dict(wait_budget="exp:2", on_budget="requeue", requeue_backoff="0.5,4", requeue_jitter=0.5),
    "eviction, jitter, limit": dict(wait_budget="tasks:0.3", on_budget="requeue", requeue_backoff=1, requeue_limit=3,
                                    requeue_order="eviction", requeue_jitter=2.0),
}


@pytest.mark.parametrize("clock", REQUEUES)
@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("discipline", ("fcfs", "first-fit", "hold"))
def test_eviction_order_and_jitter_kernel_equals_its_reference_job_by_job(discipline, name, clock):
    own = dict(REQUEUES[clock])
    if discipline == "hold":
        own.pop("wait_budget")
        own["hold_timeout"] = 0.8
    system = S(**SYSTEMS[name], scheduling=discipline, **own)
    inputs = _with_budgets(system, 2500, seed=13) if discipline != "hold" else draw_jobs(
        system, 2500, np.random.default_rng(13))
    inputs["jitter_seed"] = 2**62 + 12345
    kernel = waitlist.run_inputs(system, inputs)
    _same(kernel, waitlist.reference(system, inputs), FIELDS + (("held",) if discipline == "hold" else ()))
    assert kernel["requeues"].sum() > 20                  # the requeues did happen


def test_eviction_order_changes_who_starts_first_and_jitter_stretches_each_backoff_within_its_factor():
    base = dict(servers=16, tasks_pmf={2: 0.6, 8: 0.3, 16: 0.1}, arrival_rate=0.95, scheduling="fcfs",
                wait_budget="runtime:1", on_budget="requeue", requeue_backoff="0.25,2", requeue_limit=6)
    runs = {}
    for label, extra in (("creation", {}), ("eviction", {"requeue_order": "eviction"}),
                         ("jitter", {"requeue_jitter": 0.5})):
        runs[label] = bq.simulate(S(**base, **extra), jobs=20_000, replications=1, seed=8,
                                  keep_jobs=True).replications[0].jobs
    assert not np.array_equal(runs["creation"]["start"], runs["eviction"]["start"])
    # jitter 0.5: each wait lies in [b, min(cap, 1.5 b)] for the deterministic b of its requeue
    n = runs["jitter"]["requeues"]
    low = np.array([sum(min(2.0, 0.25 * 2 ** (i - 1)) for i in range(1, m + 1)) for m in n])
    high = np.array([sum(min(2.0, 1.5 * 0.25 * 2 ** (i - 1)) for i in range(1, m + 1)) for m in n])
    away = runs["jitter"]["backoff"]
    assert (away >= low - 1e-12).all() and (away <= high + 1e-12).all()
    assert (away[n > 0] > low[n > 0]).mean() > 0.9           # (u = 0 has probability 2^-53)


def test_the_jitter_draw_is_splitmix64_uniform_and_its_own_stream_per_job():
    # SplitMix64 seeded with 0: its first outputs are published (Vigna's reference splitmix64.c)
    assert clocks._mix((0 + clocks._GAMMA) & clocks._MASK) == 0xE220A8397B1DCDAF
    u = np.array([clocks.jitter_u(7, j, n) for j in range(200) for n in range(1, 26)])
    assert ((0 <= u) & (u < 1)).all()
    assert sps.kstest(u, "uniform").pvalue > 1e-3
    assert clocks.jitter_u(7, 3, 2) != clocks.jitter_u(7, 2, 3)


@pytest.mark.parametrize("bad, message", [
    (dict(requeue_order="eviction", scheduling="backfill"), "requeue_order 'eviction' is simulated under"),
    (dict(requeue_order="latest"), "requeue_order must be one of"),
    (dict(requeue_jitter=-0.1), "requeue_jitter must be a finite number >= 0"),
    (dict(requeue_jitter=float("nan")), "requeue_jitter must be a finite number >= 0"),
])
def test_bad_requeue_order_or_jitter_is_refused_in_one_line(bad, message):
    with pytest.raises(bq.ParameterError, match=message):
        S(servers=8, tasks=2, arrival_rate=1.0, wait_budget=5, on_budget="requeue", requeue_backoff="1,4", **bad)
    with pytest.raises(bq.ParameterError, match="must be None with on_budget 'leave'"):
        S(servers=8, tasks=2, arrival_rate=1.0, wait_budget=5, requeue_jitter=0.1)


@pytest.mark.parametrize("discipline", ("fcfs", "first-fit", "hold"))
def test_eviction_order_and_jitter_across_chunk_boundaries_equal_the_reference(discipline):
    """The window's waiting jobs are linked again at each call in their list order (entry time, then arrival):
    a replication of chunks of 2,048 jobs equals one reference run on its inputs."""
    own = {"hold_timeout": 0.7} if discipline == "hold" else {"wait_budget": "exp:2"}
    system = S(servers=2048, tasks_pmf={1: 0.9, 2048: 0.1}, arrival_rate=0.9, scheduling=discipline,
               on_budget="requeue", requeue_backoff="0.5,3", requeue_limit=3, requeue_order="eviction",
               requeue_jitter=0.3, **own)
    jobs = 5000
    rep = run_replication(system, jobs, np.random.default_rng(6), keep_jobs=True, warmup=0)
    cat, seed = _chunked_inputs(system, jobs, 6, 2048)
    ref = simulate_waitlist_reference(cat["arrival"], cat["tasks"], cat["barrier"], cat["times"], 2048, discipline,
                                      release="fixed", clock={**clocks.settings(system), "budgets": cat["budget"],
                                                              "jitter_seed": seed})
    _same(rep.jobs, ref, FIELDS + (("held",) if discipline == "hold" else ()))
    assert rep.jobs["requeues"].sum() > 100


def test_the_patience_chain_with_one_task_jobs_is_erlang_a_and_its_shares_add_up():
    from barrier_queues.patience_chain import patience_chain

    for s, lam, theta in ((4, 4.4, 0.5), (3, 1.0, 2.0), (6, 9.0, 0.25)):
        exact = patience_chain(s, 1, lam, 1 / theta)
        abandon, waiting = _erlang_a(s, lam, 1.0, theta)
        assert math.isclose(exact["lost_share"], abandon, rel_tol=1e-10)
        assert math.isclose(exact["mean_waiting_served"], waiting, rel_tol=1e-10)
        assert math.isclose(exact["served_share"] + exact["lost_share"], 1.0, rel_tol=1e-12)
        assert exact["cut_mass"] < 1e-100


@pytest.mark.parametrize("s, k, lam, patience", [(4, 2, 2.4, 2.0), (8, 4, 2.0, 1.0), (6, 3, 1.2, 4.0)])
def test_gangs_with_exponential_patience_meet_their_exact_chain(s, k, lam, patience):
    """k > 1: the chain of (waiting jobs, running jobs by tasks still running) with a tagged arrival for the
    served jobs' waiting. The exact lost share and served mean waiting must lie in the runs' 99.9 % t intervals
    over 8 replications of 200,000 jobs: six checks, so 99.9 % each keeps the family's false-alarm rate under
    1 % (Bonferroni; fixed before the runs: at 95 % one of six would miss one time in four by chance)."""
    from barrier_queues.patience_chain import patience_chain

    exact = patience_chain(s, k, lam, patience)
    assert math.isclose(exact["served_share"] + exact["lost_share"], 1.0, rel_tol=1e-10)
    system = S(servers=s, tasks=k, arrival_rate=lam, wait_budget=f"exp:{patience}")
    out = bq.simulate(system, jobs=200_000, replications=8, seed=11).summary(level=0.999)
    lo, hi = out["clocks"]["ci"]["lost_share"]
    assert lo <= exact["lost_share"] <= hi, (exact["lost_share"], lo, hi)
    lo, hi = out["ci"]["waiting"]
    assert lo <= exact["mean_waiting_served"] <= hi, (exact["mean_waiting_served"], lo, hi)


def test_the_patience_chain_refuses_what_it_cannot_build():
    from barrier_queues.patience_chain import patience_chain

    with pytest.raises(bq.ParameterError, match="tasks must be"):
        patience_chain(4, 5, 1.0, 1.0)
    with pytest.raises(bq.ParameterError, match="patience_mean must be"):
        patience_chain(4, 2, 1.0, 0.0)
    with pytest.raises(bq.ParameterError, match="more than"):
        patience_chain(64, 2, 100.0, 100.0)


def test_the_kueue_preset_is_its_options_written_out_and_given_options_take_their_place(tmp_path):
    """``--clock-preset kueue`` equals Kueue v0.7's defaults given as options (a replay, job for job through
    its JSON), says what it set on stderr, lets an option given beside it take its place, and an unknown preset
    is one line and exit 2."""
    import json
    import subprocess
    import sys

    log = tmp_path / "log.csv"
    rows = ["submit,tasks,runtime"] + [f"{10.0 * i},{(1, 4, 8)[i % 3]},{50.0 + 37 * (i % 7)}" for i in range(400)]
    log.write_text("\n".join(rows) + "\n")
    cli = [sys.executable, "-m", "barrier_queues.cli", "replay", str(log), "--servers", "8", "--scheduling",
           "first-fit", "--json"]
    written = ["--wait-budget", "300", "--on-budget", "requeue", "--requeue-backoff", "60,3600", "--requeue-order",
               "eviction", "--requeue-jitter", "0.0001"]
    preset = subprocess.run([*cli, "--clock-preset", "kueue"], capture_output=True, text=True, check=True)
    plain = subprocess.run([*cli, *written], capture_output=True, text=True, check=True)
    assert json.loads(preset.stdout) == json.loads(plain.stdout)
    assert json.loads(preset.stdout)["requeues_per_job"] > 0                       # the clock fired
    assert preset.stderr.strip() == ("barrier-queues: --clock-preset kueue: --wait-budget 300, --on-budget requeue, "
                                     "--requeue-backoff 60,3600, --requeue-order eviction, --requeue-jitter 0.0001")
    shorter = subprocess.run([*cli, "--clock-preset", "kueue", "--wait-budget", "30"], capture_output=True, text=True,
                             check=True)
    plain30 = subprocess.run([*cli, *written[:1], "30", *written[2:]], capture_output=True, text=True, check=True)
    assert json.loads(shorter.stdout) == json.loads(plain30.stdout) != json.loads(plain.stdout)
    assert "--wait-budget" not in shorter.stderr
    bad = subprocess.run([*cli, "--clock-preset", "volcano"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "clock-preset" in bad.stderr
    for command in (["simulate"], ["sweep"]):
        out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", *command, "--help"], capture_output=True,
                             text=True, check=True)
        assert "--clock-preset" in out.stdout and "Kueue v0.7" in " ".join(out.stdout.split())


@pytest.mark.skipif(not os.environ.get("BARRIER_QUEUES_TRACES"), reason="the logs' folder is not set")
def test_the_manuals_kueue_preset_on_kth_prints_what_the_manual_says():
    """The manual's Kueue command on KTH-SP2, as printed: the requeues per job and the two classes' mean waits
    it quotes, to the digits quoted, with and without the clock (a replay is deterministic: exact digits)."""
    import json
    import re
    import shlex
    import subprocess
    import sys

    text = (Path(__file__).resolve().parents[1] / "book" / "reference" / "manual.md").read_text()
    line = next(x for x in text.splitlines() if "--clock-preset kueue" in x and x.startswith("$ "))
    args = shlex.split(line.removeprefix("$ barrier-queues "))
    said = " ".join(text[text.index(line):].split("\n\n")[1].split())
    requeues, narrow, narrow0, wide, wide0 = re.search(
        r"requeues each job ([\d.]+) times.*?\(([\d,]+) s against ([\d,]+) s\).*?longer \(([\d,]+) s against "
        r"([\d,]+) s\)", said).groups()

    def run(extra):
        out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", *extra, "--json"], capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout)

    with_clock = run(args)
    without = run([a for a in args if a not in ("--clock-preset", "kueue")])
    waits = [{c["class"]: f"{c['mean_waiting']:,.0f}" for c in r["classes"]} for r in (with_clock, without)]
    assert f"{with_clock['requeues_per_job']:.2f}" == requeues
    assert (waits[0]["k = 1"], waits[1]["k = 1"], waits[0]["k >= 64"], waits[1]["k >= 64"]) == (narrow, narrow0,
                                                                                             wide, wide0)
    # and on the shaken copies the text quotes (seed 20261129; the log itself is the first of the 11)
    from barrier_queues.replay import replay, shake
    from barrier_queues.traces import read_trace

    low, high = (float(x) for x in re.search(r"widest wait ([\d.]+) to\s+([\d.]+) times", text).groups())
    kueue = {"wait_budget": "300", "on_budget": "requeue", "requeue_backoff": "60,3600",
             "requeue_order": "eviction", "requeue_jitter": 0.0001}
    log = read_trace(Path(os.environ["BARRIER_QUEUES_TRACES"]) / "KTH-SP2.swf.gz")
    rng, ratios = np.random.default_rng(20261129), []
    for i in range(11):
        copy = log if i == 0 else shake(log, 60.0, rng)
        a, b = ({c["class"]: c["mean_waiting"] for c in replay(copy, scheduling="first-fit", **clock).summary()[
            "classes"]} for clock in ({}, kueue))
        assert b["k = 1"] < a["k = 1"]
        ratios.append(b["k >= 64"] / a["k >= 64"])
    assert (f"{min(ratios[1:]):.2f}", f"{max(ratios[1:]):.2f}") == (f"{low:.2f}", f"{high:.2f}")


@pytest.mark.parametrize("s, k, lam, mean", [(4, 2, 1.2, 1.0), (6, 3, 1.0, 2.0)])
def test_a_hold_with_exponential_timeouts_meets_its_exact_chain(s, k, lam, mean):
    """Hold with Exp(mean) timeouts and ``leave``: the chain of (waiting jobs, running jobs by tasks still
    running) where only the holding head leaves. The exact lost share, served mean waiting and held share must
    lie in the runs' 99.9 % t intervals over 8 replications of 200,000 jobs (six checks: the family's false-alarm
    rate under 1 %, Bonferroni, as the patience chain's test; fixed before the runs)."""
    from barrier_queues.patience_chain import patience_chain

    exact = patience_chain(s, k, lam, mean, hold=True)
    assert math.isclose(exact["served_share"] + exact["lost_share"], 1.0, rel_tol=1e-10)
    assert exact["cut_mass"] < 1e-30
    system = S(servers=s, tasks=k, arrival_rate=lam, scheduling="hold", hold_timeout=f"exp:{mean}")
    out = bq.simulate(system, jobs=200_000, replications=8, seed=11).summary(level=0.999)
    for name, ci in (("lost_share", out["clocks"]["ci"]["lost_share"]),
                     ("mean_waiting_served", out["ci"]["waiting"]),
                     ("held_share", out["clocks"]["ci"]["held_share"])):
        assert ci[0] <= exact[name] <= ci[1], (name, exact[name], ci)


def test_the_hold_chain_differs_from_patience_and_an_exponential_timeout_is_checked():
    """Only the holding head leaves under hold: fewer jobs are lost than when every waiting job has the same
    patience, and more wait longer; bad exponential timeouts are one line naming the option."""
    from barrier_queues.patience_chain import patience_chain

    hold, patience = patience_chain(4, 2, 1.2, 1.0, hold=True), patience_chain(4, 2, 1.2, 1.0)
    assert hold["lost_share"] < patience["lost_share"] and hold["mean_waiting_all"] > patience["mean_waiting_all"]
    assert "held_share" in hold and "held_share" not in patience
    for bad, message in (("exp:0", "finite MEAN > 0"), ("exp:x", "is not a number"), ("exp:nan", "finite MEAN"),
                         ("-1", "finite time >= 0"), ("soon", "a time >= 0 or 'exp:MEAN'")):
        with pytest.raises(bq.ParameterError, match=message):
            S(servers=8, tasks=2, arrival_rate=1.0, scheduling="hold", hold_timeout=bad)
    system = S(servers=8, tasks=2, arrival_rate=1.0, scheduling="hold", hold_timeout="exp:2")
    assert str(system.hold_timeout) == "exp:2.0" and system.describe()["hold_timeout"] == "exp:2.0"
    assert S(servers=8, tasks=2, arrival_rate=1.0, scheduling="hold", hold_timeout="3").hold_timeout == 3.0


def test_the_kernels_hold_stream_number_is_the_librarys():
    from barrier_queues._kernels import KERNEL_HOLD_DRAW

    assert KERNEL_HOLD_DRAW == clocks.HOLD_DRAW == clocks.MAX_REQUEUES + 1



def test_a_replay_with_exponential_hold_timeouts_takes_its_seed(tmp_path):
    """--hold-timeout exp:MEAN draws each gang's timeout from --seed in a replay: the same seed gives the same
    replay, another seed another one (it was refused as a seed without randomness)."""
    import json
    import subprocess
    import sys

    log = tmp_path / "log.csv"
    log.write_text("submit,tasks,runtime\n" + "".join(f"{3.0 * i},{(1, 4, 8)[i % 3]},{20.0 + 7 * (i % 5)}\n"
                                                       for i in range(300)))
    cli = [sys.executable, "-m", "barrier_queues.cli", "replay", str(log), "--servers", "8", "--scheduling", "hold",
           "--hold-timeout", "exp:5", "--json"]
    runs = [json.loads(subprocess.run([*cli, "--seed", seed], capture_output=True, text=True, check=True).stdout)
            for seed in ("1", "1", "2")]
    assert runs[0] == runs[1] != runs[2] and runs[0]["lost_share"] > 0
    alone = subprocess.run([*cli[:-5], "--seed", "1"], capture_output=True, text=True)
    assert alone.returncode == 2 and "--seed must come with" in alone.stderr
