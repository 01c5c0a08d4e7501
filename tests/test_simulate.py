"""The simulator: kernels = plain-Python references bit for bit, queueing theory, invariants, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import barrier_queues as bq
from barrier_queues.inputs import CHUNK, chunk_jobs, draw_jobs, draw_probes
from barrier_queues.overhead import OverheadModel
from barrier_queues.rules import reference_rule
from barrier_queues.runs import run_inputs, run_replication
from barrier_queues.saturated import saturated_throughput
from barrier_queues.schedulers import central
from barrier_queues.schedulers.central import simulate_reference
from barrier_queues.schedulers.sampling import simulate_sampling_reference
from barrier_queues.simulate import simulate, simulate_many, trace
from barrier_queues.statistics import t_interval

S = bq.BarrierSystem

CENTRAL = {
    "1-barrier": dict(servers=16, tasks=4, arrival_rate=2.8),
    "2-barrier": dict(servers=16, tasks=4, barriers=2, arrival_rate=1.5),
    "1-barrier skl": dict(servers=16, tasks=8, needed=6, arrival_rate=1.5),
    "2-barrier skl": dict(servers=16, tasks=8, needed=6, barriers=2, arrival_rate=1.2),
    "wide skl (k > 32: general sort)": dict(servers=48, tasks=40, needed=30, arrival_rate=0.3),
    "hybrid": dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.2),
    "hybrid 2-barrier": dict(servers=16, tasks=4, barriers=2, barrier_fraction=0.3, arrival_rate=1.5),
    "non-barrier": dict(servers=16, tasks=4, barrier_fraction=0.0, arrival_rate=3.0),
    "heterogeneous": dict(servers=16, tasks_pmf={4: 0.5, 12: 0.5}, arrival_rate=1.2),
    "bimodal tasks": dict(servers=10, tasks=10, needed=7, barriers=2, arrival_rate=0.05,
                          task_dist="bimodal:p=0.98,rate1=1,rate2=0.001"),
    "erlang deterministic arrivals": dict(servers=8, tasks=3, arrival_rate=1.5, arrival="deterministic",
                                          task_dist="erlang:shape=3,rate=3"),
    "deterministic tasks skl": dict(servers=8, tasks=4, needed=2, arrival_rate=0.5, task_dist="deterministic:value=1"),
    "empirical tasks": dict(servers=8, tasks=2, arrival_rate=1.0, task_dist=bq.Empirical([0.2, 0.5, 1.0, 3.0])),
    "paper overhead": dict(servers=16, tasks=4, arrival_rate=2.0, overhead="paper"),
    "event overhead": dict(servers=16, tasks=4, arrival_rate=2.0, overhead="event", revive_interval=0.5),
    "event overhead hybrid": dict(servers=8, tasks=4, arrival_rate=1.0, overhead="event", barrier_fraction=0.5),
    "knee 1-barrier bimodal": dict(servers=16, tasks=8, release="knee", arrival_rate=1.0,
                                   task_dist="bimodal:p=0.9,rate1=2,rate2=0.2"),
    "knee 2-barrier min wait": dict(servers=16, tasks=8, barriers=2, release="knee", min_fraction=0.25, min_wait=0.5,
                                    knee_gain=0.3, arrival_rate=0.6),
    "knee heterogeneous": dict(servers=16, tasks_pmf={2: 0.5, 10: 0.5}, release="knee", arrival_rate=1.0),
    "timeout 1-barrier": dict(servers=16, tasks=8, release="timeout", timeout=1.5, arrival_rate=1.2),
    "timeout 2-barrier erlang": dict(servers=16, tasks=8, barriers=2, release="timeout", timeout=1.0, arrival_rate=0.9,
                                     task_dist="erlang:shape=2,rate=2"),
    "phases ideal": dict(servers=16, tasks=4, phases=3, arrival_rate=0.5),
    "phases spark 2-barrier": dict(servers=16, tasks=4, phases=3, sync="spark", sync_poll=0.5, barriers=2,
                                   arrival_rate=0.4),
    "phases spark event overhead": dict(servers=8, tasks=4, phases=2, sync="spark", overhead="event",
                                        arrival_rate=0.3),
    "phases heterogeneous": dict(servers=8, tasks_pmf={1: 0.5, 4: 0.5}, phases=4, sync="spark", arrival_rate=0.4),
}
SAMPLED = {
    "barrier": dict(servers=16, tasks=4, placement="sample", arrival_rate=2.5),
    "non-barrier (Sparrow)": dict(servers=16, tasks=4, placement="sample", barrier_fraction=0.0, arrival_rate=3.0),
    "hybrid 2-barrier d=1.5": dict(servers=16, tasks=4, placement="sample", barrier_fraction=0.5, barriers=2,
                                   arrival_rate=1.5, probe_ratio=1.5),
    "heterogeneous": dict(servers=16, tasks_pmf={2: 0.5, 8: 0.5}, placement="sample", arrival_rate=1.0),
    "knee": dict(servers=16, tasks=8, placement="sample", release="knee", arrival_rate=1.0),
    "phases spark": dict(servers=12, tasks=3, placement="sample", phases=2, sync="spark", arrival_rate=0.8),
    "d = 1 deterministic arrivals": dict(servers=8, tasks=2, placement="sample", probe_ratio=1.0, arrival_rate=1.5,
                                         arrival="deterministic"),
}


def _chunked_inputs(cfg, jobs, rng, probe_rng=None):
    """The random inputs the simulator draws, chunk by chunk, joined (and the probes of batch sampling)."""
    probes = []
    inputs = {k: [] for k in ("arrival", "tasks", "barrier", "times")}
    done, start = 0, 0.0
    while done < jobs:
        n = min(chunk_jobs(cfg), jobs - done)
        chunk = draw_jobs(cfg, n, rng, start_time=start)
        if probe_rng is not None:
            p, o = draw_probes(cfg, chunk["tasks"], probe_rng)
            probes += [list(p[o[j]:o[j + 1]]) for j in range(n)]
        for k in inputs:
            inputs[k].append(chunk[k])
        start = chunk["arrival"][-1]
        done += n
    return {k: np.concatenate(v) for k, v in inputs.items()}, probes


def _reference_central(cfg, jobs, seed, trace_=False):
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, cfg.revive_interval) if cfg.overhead == "event" else 0.0
    inputs, _ = _chunked_inputs(cfg, jobs, rng)
    return simulate_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], cfg.servers,
                              cfg.barriers == 2, cfg.overhead == "event", cfg.revive_interval or 1.0, phase,
                              trace=trace_, **reference_rule(cfg))


def _reference_sampled(cfg, jobs, seed, trace_=False):
    rng = np.random.default_rng(seed)
    inputs, probes = _chunked_inputs(cfg, jobs, rng, rng.spawn(1)[0])
    return simulate_sampling_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], probes,
                                       cfg.servers, cfg.barriers == 2, trace=trace_, **reference_rule(cfg))


KEYS = ("start", "departure", "work", "useful", "completed")


@pytest.mark.parametrize("name", CENTRAL)
def test_central_kernel_equals_plain_python_reference_bit_for_bit(name):
    cfg = S(**CENTRAL[name])
    rep = run_replication(cfg, 3000, np.random.default_rng(99), trace=True, warmup=0)
    ref, tr = _reference_central(cfg, 3000, 99, trace_=True)
    for key in KEYS:
        np.testing.assert_array_equal(rep.jobs[key], np.asarray(ref[key]), err_msg=key)
    for key in ("start", "end"):           # one row per task, in job and task order (worker ids may differ)
        np.testing.assert_array_equal(rep.trace[key].to_numpy(), np.asarray(tr[key]), err_msg=key)


@pytest.mark.parametrize("name", CENTRAL)
def test_central_kernel_without_a_trace_equals_the_reference_bit_for_bit(name):
    """Without a trace the kernel keeps the free times in an ascending array (up to SORTED_FREE_MAX workers),
    with a trace (above) in a heap: both equal the reference."""
    cfg = S(**CENTRAL[name])
    assert cfg.servers <= central.SORTED_FREE_MAX
    rep = run_replication(cfg, 3000, np.random.default_rng(99), keep_jobs=True, warmup=0)
    ref = _reference_central(cfg, 3000, 99)
    for key in KEYS:
        np.testing.assert_array_equal(rep.jobs[key], np.asarray(ref[key]), err_msg=key)


@pytest.mark.parametrize("cfg", [S(central.SORTED_FREE_MAX + 1, 8, arrival_rate=6.0),
                                 S(80, 10, barriers=2, barrier_fraction=0.5, arrival_rate=5.0),
                                 S(96, 1, arrival_rate=80.0, overhead="event")],
                         ids=["1-barrier", "hybrid 2-barrier", "M/M/96 event overhead"])
def test_central_kernel_with_many_workers_equals_the_reference_bit_for_bit(cfg):
    """Above SORTED_FREE_MAX workers the kernel keeps its heap without a trace too."""
    rep = run_replication(cfg, 4000, np.random.default_rng(3), keep_jobs=True, warmup=0)
    ref = _reference_central(cfg, 4000, 3)
    for key in KEYS:
        np.testing.assert_array_equal(rep.jobs[key], np.asarray(ref[key]), err_msg=key)


@pytest.mark.parametrize("name", ["1-barrier", "2-barrier", "hybrid", "non-barrier", "heterogeneous",
                                  "event overhead hybrid", "knee heterogeneous", "phases spark 2-barrier"])
def test_the_sorted_free_times_equal_the_heap_chunk_after_chunk(name):
    """The kernel's two layouts of the free times, fed the same chunks with their state carried from chunk to
    chunk (a heap's state may enter the sorted layout): the same outputs, bit for bit."""
    from barrier_queues.kernels import kernels_module
    from barrier_queues.rules import kernel_params
    from barrier_queues.schedulers.base import job_outputs

    cfg = S(**CENTRAL[name])
    rng = np.random.default_rng(11)
    chunks, start = [], 0.0
    for _ in range(4):
        chunks.append(draw_jobs(cfg, 700, rng, start_time=start))
        start = chunks[-1]["arrival"][-1]
    code, stragglers, params = kernel_params(cfg)
    outs = {}
    for layouts in ((False,) * 4, (True,) * 4, (False, True, False, True)):
        key, ids, state, got = np.zeros(cfg.servers), np.arange(cfg.servers), np.zeros(1), []
        for i, (c, layout) in enumerate(zip(chunks, layouts, strict=True)):
            out = job_outputs(c["arrival"].size)
            following = chunks[i + 1]["arrival"] if i + 1 < len(chunks) else np.empty(0)
            kernels_module().run_chunk(
                c["arrival"], c["tasks"], c["barrier"], c["times"], c["offsets"], cfg.phases, code, stragglers,
                np.asarray(params), cfg.barriers == 2, cfg.overhead == "event", cfg.revive_interval or 1.0, 0.3,
                following, key, ids, state, out["start"], out["departure"], out["work"], out["useful"],
                out["completed"], np.empty(0, dtype=np.int64), np.empty(0), np.empty(0), layout)
            got.append(out)
        outs[layouts] = got
    heap = outs[(False,) * 4]
    for other in list(outs)[1:]:
        for a, b in zip(heap, outs[other], strict=True):
            for k in KEYS:
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"{k} {other}")


@pytest.mark.parametrize("name", SAMPLED)
def test_sampling_kernel_equals_plain_python_reference_bit_for_bit(name):
    cfg = S(**SAMPLED[name])
    rep = run_replication(cfg, 3000, np.random.default_rng(7), trace=True, warmup=0)
    ref, tr = _reference_sampled(cfg, 3000, 7, trace_=True)
    for key in (*KEYS, "held"):
        np.testing.assert_array_equal(rep.jobs[key], np.asarray(ref[key]), err_msg=key)
    assert rep.jobs["held"].sum() > 0 or cfg.barrier_fraction == 0


@pytest.mark.parametrize("cfg", [S(8, 4, arrival_rate=1.0, overhead="event"),
                                 S(8, 4, arrival_rate=1.0, placement="sample"),
                                 S(8, 2, arrival_rate=0.5, phases=2, sync="spark", placement="sample")],
                         ids=["central event overhead", "sampling", "sampling phases"])
def test_kernels_equal_the_references_across_chunk_boundaries(cfg):
    jobs = CHUNK + 777
    rep = run_replication(cfg, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    ref = (_reference_sampled if cfg.placement == "sample" else _reference_central)(cfg, jobs, 5)
    for key in ("start", "departure"):
        np.testing.assert_array_equal(rep.jobs[key], np.asarray(ref[key]), err_msg=key)


@pytest.mark.parametrize("cfg", [S(8, 4, arrival_rate=1.2), S(8, 3, barriers=2, arrival_rate=0.6),
                                 S(6, tasks_pmf={2: 0.5, 3: 0.5}, arrival_rate=1.0),
                                 S(8, 4, release="knee", arrival_rate=0.8), S(8, 2, phases=3, arrival_rate=0.6)],
                         ids=["1-barrier", "2-barrier", "heterogeneous", "knee", "phases"])
def test_sampling_every_worker_is_the_central_fifo_queue_bit_for_bit(cfg):
    """EXTENSIONS.md 2: with d k >= s every job probes every worker and barrier jobs behave as under FIFO."""
    central = run_replication(cfg, 20_000, np.random.default_rng(3), keep_jobs=True, warmup=0)
    sampled = run_replication(cfg.replace(placement="sample", probe_ratio=float(cfg.servers)), 20_000,
                              np.random.default_rng(3), keep_jobs=True, warmup=0)
    for key in KEYS:
        np.testing.assert_array_equal(central.jobs[key], sampled.jobs[key], err_msg=key)


def test_sampling_one_task_jobs_with_and_without_a_barrier_coincide():
    cfg = S(8, 1, placement="sample", arrival_rate=6.0)
    a = run_replication(cfg, 20_000, np.random.default_rng(4), keep_jobs=True, warmup=0)
    b = run_replication(cfg.replace(barrier_fraction=0.0), 20_000, np.random.default_rng(4), keep_jobs=True, warmup=0)
    for key in KEYS:
        np.testing.assert_array_equal(a.jobs[key], b.jobs[key], err_msg=key)


@pytest.mark.parametrize("servers, tasks, d, exact", [(32, 1, 1.0, 1.0), (64, 1, 3.0, 1.0), (16, 8, 2.0, None)])
def test_saturated_sampling_is_measured_while_every_worker_has_a_backlog(servers, tasks, d, exact):
    """k = 1 loses nothing (each worker is busy while it has reservations: the limit is 1); with d k >= s
    sampling is the central queue, whose limit is eq. 5. The drain at the end of an all-at-time-0 run (a
    worker whose queue ran empty idles) is not measured: before the window ended at min_w T_w it was, and
    k = 1 at s = 64, d = 1 came out at 0.95."""
    system = S(servers, tasks, placement="sample", probe_ratio=d)
    exact = exact if exact is not None else bq.stability_limit(servers, tasks).rho_max
    est = bq.saturated_throughput(system, jobs=5000, replications=10, seed=3)
    lo, hi = est["rho_max_ci"]
    assert lo <= exact <= hi and hi - lo < 0.01


def test_probes_are_distinct_sorted_and_as_many_as_the_rule_says():
    cfg = S(10, tasks_pmf={2: 0.3, 3: 0.3, 8: 0.4}, placement="sample", probe_ratio=1.5, arrival_rate=1.0)
    tasks = draw_jobs(cfg, 5000, np.random.default_rng(1))["tasks"]
    probes, offsets = draw_probes(cfg, tasks, np.random.default_rng(2))
    counts = np.diff(offsets)
    assert (counts == np.minimum(10, np.ceil(1.5 * tasks - 1e-9))).all()
    for j in range(tasks.size):
        p = probes[offsets[j]:offsets[j + 1]]
        assert (np.diff(p) > 0).all() and p.min() >= 0 and p.max() < 10
    # uniform: each worker is probed about equally often by 2-task jobs (3 of 10 workers)
    two = np.concatenate([probes[offsets[j]:offsets[j + 1]] for j in np.flatnonzero(tasks == 2)])
    counts = np.bincount(two, minlength=10)
    expected = two.size / 10
    assert ((counts - expected) ** 2 / expected).sum() < 30       # chi-square, 9 dof: p ~ 4e-4


def test_run_inputs_replays_given_inputs_on_the_same_kernel():
    cfg = S(8, 4, arrival_rate=1.0, overhead="event")
    rng = np.random.default_rng(11)
    phase = rng.uniform(0, 1)
    inputs = draw_jobs(cfg, 2000, rng)
    out = run_inputs(cfg, inputs, phase=phase)
    ref = _reference_central(cfg, 2000, 11)
    np.testing.assert_array_equal(out["start"], np.asarray(ref["start"]))
    with pytest.raises(bq.ParameterError, match="must be sorted"):
        run_inputs(cfg, {**inputs, "arrival": inputs["arrival"][::-1].copy()})


# --------------------------------------------------------------------------------------------------
# against queueing theory

def _erlang_c_wait(s, lam, mu):
    a = lam / mu
    rho = a / s
    top = a**s / math.factorial(s) / (1 - rho)
    c = top / (sum(a**n / math.factorial(n) for n in range(s)) + top)
    return c / (s * mu - lam)


@pytest.mark.slow
@pytest.mark.parametrize("s, lam", [(1, 0.6), (4, 3.0), (10, 8.5)])
def test_k1_is_an_mms_queue_erlang_c(s, lam):
    res = simulate(S(servers=s, tasks=1, arrival_rate=lam), jobs=200_000, replications=10, seed=1000 + s)
    lo, hi = res.summary(level=0.99)["ci"]["waiting"]
    exact = _erlang_c_wait(s, lam, 1.0)
    assert lo <= exact <= hi
    assert hi - lo < 0.2 * exact                 # the test has power
    assert bq.bounds.erlang_c(s, lam) == pytest.approx(exact * (s - lam), rel=1e-12)


def _pk_wait(lam, mean_s, var_s):
    rho = lam * mean_s
    return lam * (var_s + mean_s**2) / (2 * (1 - rho))


@pytest.mark.slow
@pytest.mark.parametrize("s, k, l_, barriers, rho", [(4, 4, 4, 1, 0.6), (6, 6, 6, 2, 0.5),
                                                     (8, 8, 6, 2, 0.6), (8, 5, 5, 2, 0.5)])
def test_split_merge_and_single_job_two_barrier_are_mg1_pollaczek_khinchine(s, k, l_, barriers, rho):
    mean_s, var_s = bq.exp_order_stat_mean(l_, k), bq.exp_order_stat_var(l_, k)
    lam = rho / mean_s
    res = simulate(S(servers=s, tasks=k, needed=l_, barriers=barriers, arrival_rate=lam), jobs=200_000,
                   replications=10, seed=2000 + s + k)
    lo, hi = res.summary(level=0.99)["ci"]["waiting"]
    assert lo <= _pk_wait(lam, mean_s, var_s) <= hi


@pytest.mark.slow
def test_phased_two_barrier_single_job_is_pollaczek_khinchine_with_the_sum_of_phase_maxima():
    # k = s with ideal barrier(): service = sum of m iid maxima of k Exp(1)
    k, m = 4, 3
    mean_max, var_max = bq.exp_order_stat_mean(k, k), bq.exp_order_stat_var(k, k)
    lam = 0.5 / (m * mean_max)
    res = simulate(S(servers=k, tasks=k, barriers=2, phases=m, arrival_rate=lam), jobs=200_000, replications=10,
                   seed=77)
    lo, hi = res.summary(level=0.99)["ci"]["waiting"]
    assert lo <= _pk_wait(lam, m * mean_max, m * var_max) <= hi


@pytest.mark.slow
@pytest.mark.parametrize("s, k, l_, barriers", [(16, 4, 4, 1), (12, 3, 2, 1), (16, 8, 6, 1),
                                                (10, 10, 8, 2), (10, 4, 4, 2)])
def test_saturated_runs_reproduce_closed_forms_and_ctmc(s, k, l_, barriers):
    est = saturated_throughput(S(servers=s, tasks=k, needed=l_, barriers=barriers), jobs=100_000, replications=10,
                               seed=3000 + s + k + l_, level=0.999)
    exact = bq.stability_limit(s, k, l_, barriers)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact.lambda_max <= hi
    assert hi - lo < 0.03 * exact.lambda_max
    lo, hi = est["rho_useful_ci"]
    assert lo <= exact.rho_useful <= hi


@pytest.mark.slow
def test_saturated_bimodal_two_barrier_matches_order_statistics():
    law = bq.HyperExponential.bimodal(0.98, 1.0, 0.001)
    est = saturated_throughput(S(servers=10, tasks=10, needed=7, barriers=2, task_dist=law), jobs=100_000,
                               replications=10, seed=4, level=0.99)
    exact = bq.stability_limit(10, 10, 7, 2, task_dist=law)
    assert est["lambda_max_ci"][0] <= exact.lambda_max <= est["lambda_max_ci"][1]
    assert est["rho_useful_ci"][0] <= exact.rho_useful <= est["rho_useful_ci"][1]


@pytest.mark.parametrize("name", ["1-barrier", "hybrid", "heterogeneous", "2-barrier skl", "timeout 1-barrier",
                                  "phases ideal"])
def test_measured_utilization_matches_offered(name):
    cfg = S(**CENTRAL[name])
    res = simulate(cfg, jobs=50_000, replications=10, seed=7)
    per_rep = [st.sums["work"] / (cfg.servers * st.busy_span) for st in res.stats]
    lo, hi = t_interval(per_rep, 0.99)
    assert lo <= bq.offered_utilization(cfg) <= hi
    assert res.summary()["utilization"] == pytest.approx(np.mean(per_rep), rel=1e-3)


@pytest.mark.slow                      # (about 28 s here: the full suite runs it)
def test_a_short_run_never_reports_an_impossible_utilization():
    """Measured utilization: the measured jobs' server time over s x (first arrival to last departure), at
    most 1 by construction; below 100 measured jobs none at all (NaN, its reason in the JSON). Before, the
    arrival span was the denominator: 2 jobs gave up to 267, 100 jobs 1.52. Intervals of times never go below
    0. 4 systems near their limit, 30 seeds, 2 to 300 jobs."""
    systems = [bq.at_utilization(S(**kw), 0.97) for kw in (dict(servers=4, tasks=4), dict(servers=4, tasks=1),
                                                           dict(servers=4, tasks=2, barriers=2),
                                                           dict(servers=8, tasks=3, needed=2))]
    for system in systems:
        for seed in range(30):
            for jobs in (2, 99, 100, 300):
                out = simulate(system, jobs=jobs, replications=2, seed=seed, allow_unstable=True).summary()
                measured = out["jobs"]
                if measured < 100:
                    assert math.isnan(out["utilization"]) and math.isnan(out["useful_utilization"])
                else:
                    assert 0 < out["useful_utilization"] <= out["utilization"] <= 1
                for metric in ("waiting", "sojourn", "execution"):
                    assert out["ci"][metric] is None if out["stable"] is False else not out["ci"][metric][0] < 0


# --------------------------------------------------------------------------------------------------
# statistics of the summary

@pytest.fixture(scope="module")
def mms_trials():
    """200 independent small runs of an M/M/4 queue at rho = 0.6 (10 replications x 6,000 jobs, fixed seed)."""
    s, lam = 4, 2.4
    results = simulate_many([S(servers=s, tasks=1, arrival_rate=lam)] * 200, jobs=6_000, replications=10, seed=12)
    return s, lam, results


@pytest.mark.slow                      # (its 200 runs take about 12 s: the full suite runs it)
def test_mean_interval_coverage_on_mms_erlang_c(mms_trials):
    """The 95 % interval method (MSER-5 warm-up, t over 10 replications) covers the exact Erlang-C mean
    waiting time in 95 % of many small independent runs, within a binomial tolerance (fixed seeds)."""
    from barrier_queues.statistics import binomial_tolerance

    s, lam, results = mms_trials
    exact = _erlang_c_wait(s, lam, 1.0)
    hits = sum(lo <= exact <= hi for lo, hi in (r.summary()["ci"]["waiting"] for r in results))
    low, high = binomial_tolerance(len(results), 0.95, 0.999)
    assert low <= hits <= high, f"{hits} of {len(results)} intervals cover the exact mean (tolerance {low}-{high})"


@pytest.mark.slow
@pytest.mark.parametrize("q", [0.9, 0.99])
def test_quantile_interval_coverage_on_mms_erlang_c(mms_trials, q):
    """The quantile's sectioning interval (pooled quantile +- t x spread of the replications' quantiles)
    covers the exact M/M/s waiting-time quantile, P(W > t) = C exp(-(s mu - lambda) t), at its level."""
    from barrier_queues.statistics import binomial_tolerance

    s, lam, results = mms_trials
    c = _erlang_c_wait(s, lam, 1.0) * (s - lam)            # Erlang C probability of waiting
    exact = math.log(c / (1 - float(q))) / (s - lam)
    hits = 0
    for r in results:
        summary = r.summary()
        lo, hi = summary["quantile_ci"]["waiting"][q]
        assert lo <= summary["quantiles"]["waiting"][q] <= hi       # the interval holds the reported quantile
        hits += lo <= exact <= hi
    low, high = binomial_tolerance(len(results), 0.95, 0.999)
    assert low <= hits <= high, f"{hits} of {len(results)} intervals cover the exact {q} quantile ({low}-{high})"


def test_quantile_interval_needs_jobs_beyond_the_quantile(mms_trials):
    # 6,000 jobs per replication leave about 6 beyond the 0.999 quantile: no interval (it would cover ~78 %)
    summary = mms_trials[2][0].summary()
    assert all(math.isnan(x) for x in summary["quantile_ci"]["waiting"][0.999])
    assert all(math.isfinite(x) for x in summary["quantile_ci"]["waiting"][0.99])


def test_batch_means_interval_coverage_on_mg1():
    """One long replication: 20 batch means, 95 % t interval; covers Pollaczek-Khinchine at the rate it claims."""
    from barrier_queues.statistics import binomial_tolerance

    k = 4
    mean_s, var_s = bq.exp_order_stat_mean(k, k), bq.exp_order_stat_var(k, k)
    lam = 0.4 / mean_s
    exact = _pk_wait(lam, mean_s, var_s)
    trials = 120
    results = simulate_many([S(servers=k, tasks=k, arrival_rate=lam)] * trials, jobs=40_000, replications=1, seed=13)
    hits = sum(lo <= exact <= hi for lo, hi in (r.summary()["ci"]["waiting"] for r in results))
    low, high = binomial_tolerance(trials, 0.95, 0.999)
    assert low <= hits <= high, f"{hits} of {trials} batch-means intervals cover (tolerance {low}-{high})"


def test_streaming_quantiles_and_means_equal_the_kept_jobs():
    cfg = S(**CENTRAL["1-barrier"])
    res = simulate(cfg, jobs=60_000, replications=2, seed=3, keep_jobs=True)
    summary = res.summary()
    for metric in ("waiting", "sojourn", "execution"):
        exact = res.metric(metric)
        assert summary[f"mean_{metric}"] == pytest.approx(exact.mean(), rel=1e-9)
        for q, v in summary["quantiles"][metric].items():
            lo, hi = np.quantile(exact, float(q), method="inverted_cdf"), np.quantile(exact, float(q), method="higher")
            assert lo * (1 - 0.0021) - 1e-6 <= v <= hi * (1 + 0.0021) + 1e-6, (metric, q)
    assert summary["jobs"] == res.metric("waiting").size


def test_mser_drops_the_initial_transient_of_a_loaded_queue():
    # starting empty, a heavily loaded queue's waiting times rise for a while: MSER-5 cuts that off
    cfg = S(16, 4, arrival_rate=3.4)                     # rho = 0.85 of lambda_max = 3.6
    res = simulate(cfg, jobs=100_000, replications=4, seed=5, keep_jobs=True)
    summary = res.summary()
    assert summary["warmup"]["rule"].startswith("MSER-5")
    assert all(w > 0 for w in summary["warmup"]["jobs"])
    assert not any(summary["warmup"]["at_limit"])
    fixed = simulate(cfg, jobs=100_000, replications=4, seed=5, warmup=1000).summary()
    assert fixed["warmup"] == {"rule": "fixed", "jobs": [1000] * 4, "at_limit": [False] * 4}


def test_same_seed_same_results_bit_for_bit_and_pool_equals_serial():
    cfg = S(**CENTRAL["hybrid"])
    a = simulate(cfg, jobs=5000, replications=3, seed=42, workers=1, keep_jobs=True)
    b = simulate(cfg, jobs=5000, replications=3, seed=42, workers=2, keep_jobs=True)
    c = simulate(cfg, jobs=5000, replications=3, seed=43, workers=1, keep_jobs=True)
    for ra, rb in zip(a.replications, b.replications, strict=True):
        np.testing.assert_array_equal(ra.departure, rb.departure)
    assert not np.array_equal(a.replications[0].departure, c.replications[0].departure)
    assert not np.array_equal(a.replications[0].departure, a.replications[1].departure)
    assert a.summary()["quantiles"] == b.summary()["quantiles"]


def test_simulate_many_streams_do_not_depend_on_the_sweep():
    one = S(servers=8, tasks=2, arrival_rate=2.0)
    two = S(servers=8, tasks=4, arrival_rate=1.0)
    alone = simulate_many([one], jobs=2000, seed=9, workers=1, keep_jobs=True)[0]
    both = simulate_many([one, two], jobs=2000, seed=9, workers=2, keep_jobs=True)
    np.testing.assert_array_equal(alone.replications[0].start, both[0].replications[0].start)


def test_jobs_are_not_kept_unless_asked():
    res = simulate(S(8, 2, arrival_rate=2.0), jobs=2000, seed=1)
    assert res.replications[0].jobs is None
    with pytest.raises(bq.ParameterError, match="keep_jobs must be True"):
        res.metric("waiting")


def test_jobs_csv_streams_every_replication(tmp_path):
    path = tmp_path / "jobs.csv"
    res = simulate(S(8, 2, arrival_rate=2.0), jobs=3000, replications=3, seed=1, jobs_csv=path, keep_jobs=True)
    import pandas as pd

    table = pd.read_csv(path)
    assert len(table) == 9000 and sorted(table.replication.unique()) == [0, 1, 2]
    first = table[table.replication == 1]
    np.testing.assert_array_equal(first.start.to_numpy(), res.replications[1].start)
    assert not list(tmp_path.glob(".jobs.csv.part*"))


@settings(max_examples=40, deadline=None)
@given(s=st.integers(1, 12), data=st.data())
def test_invariants_on_random_systems(s, data):
    k = data.draw(st.integers(1, s))
    use_pmf = data.draw(st.booleans()) and s >= 2
    barriers = data.draw(st.sampled_from([1, 2]))
    p = data.draw(st.sampled_from([1.0, 0.5, 0.0]))
    if p == 0:
        barriers = 1
    kwargs = dict(servers=s, barriers=barriers, barrier_fraction=p,
                  placement=data.draw(st.sampled_from(["central", "sample"])))
    if kwargs["placement"] == "central":
        kwargs["overhead"] = data.draw(st.sampled_from([None, "event", "paper"]))
    if use_pmf:
        kwargs["tasks_pmf"] = {1: 0.5, s: 0.5} if s > 1 else {1: 1.0}
    else:
        kwargs["tasks"] = k
        if p == 1:
            kwargs["needed"] = data.draw(st.integers(1, k))
    if p == 1 and data.draw(st.booleans()) and not (kwargs.get("needed", k) < k):
        kind = data.draw(st.sampled_from(["knee", "timeout", "phases"]))
        if kind == "phases" and kwargs.get("overhead") != "paper":
            kwargs.update(phases=data.draw(st.integers(2, 4)), sync=data.draw(st.sampled_from(["ideal", "spark"])))
        elif kind == "knee":
            kwargs.update(release="knee")
        elif kind == "timeout":
            kwargs.update(release="timeout", timeout=1.0)
    probe = S(arrival_rate=1.0, **kwargs)
    work = bq.mean_work(probe)
    lam = 0.5 * s / work[0] if work else 0.1
    cfg = S(arrival_rate=lam, **kwargs)
    tasks_, jobs_ = trace(cfg, jobs=300, seed=data.draw(st.integers(0, 2**32 - 1)))
    assert (jobs_.start >= jobs_.arrival).all()
    assert (jobs_.departure >= jobs_.start).all()
    if cfg.placement == "central":
        assert (np.diff(jobs_.start) >= 0).all()                  # FIFO: nobody overtakes
    assert tasks_.worker.between(0, s - 1).all()
    assert (jobs_.completed <= jobs_.tasks).all()
    # a worker serves one task at a time; with a departure barrier it is held until its job departs
    hold = tasks_.merge(jobs_[["job", "departure", "barrier"]], on="job")
    until = np.where((barriers == 2) & hold.barrier, hold.departure, hold.end)
    for _, g in hold.assign(until=until).sort_values(["worker", "start", "until"]).groupby("worker"):
        assert (g.start.to_numpy()[1:] >= g.until.to_numpy()[:-1] - 1e-12).all()


def test_unstable_load_is_refused_with_the_limit_and_allowed_on_request():
    cfg = S(servers=16, tasks=4, arrival_rate=4.0)
    with pytest.raises(bq.ParameterError, match=r"stability limit lambda_max = 3\.60337 \(closed-form\)"):
        simulate(cfg, jobs=1000)
    summary = simulate(cfg, jobs=100_000, seed=1, allow_unstable=True).summary()
    assert summary["stable"] is False and summary["stability"]["drifting"]


def test_unknown_limit_falls_back_to_the_ceiling_and_the_drift_test():
    """Under first-fit a hybrid system has neither a known limit nor FIFO's saturated estimate. A load beyond
    the work-conservation ceiling (offered load 1.25; first-fit lets the plain tasks through while the gangs
    starve, which the drift test of started jobs does not see) is refused; below it the drift test decides.
    Under FIFO the saturated estimate refuses the same load."""
    from barrier_queues.stability import estimated_limit

    cfg = S(servers=8, tasks=4, barrier_fraction=0.5, arrival_rate=2.5, scheduling="first-fit")
    assert bq.known_limit(cfg) is None and estimated_limit(cfg) is None
    with pytest.raises(bq.ParameterError, match=r"lambda_max = 2 \(holding ceiling"):
        simulate(cfg, jobs=50_000, seed=2)
    summary = simulate(cfg, jobs=50_000, seed=2, allow_unstable=True).summary()
    assert summary["stable"] is False and summary["stability"]["lambda_max"] == 2.0
    ok = simulate(cfg.replace(arrival_rate=1.0), jobs=50_000, seed=2).summary()
    assert ok["stable"] is True and ok["stability"]["lambda_max"] is None and not ok["stability"]["drifting"]
    with pytest.raises(bq.ParameterError, match="arrival_rate must be below the stability limit"):
        simulate(cfg.replace(scheduling="fcfs"), jobs=50_000, seed=2)


def test_paper_overhead_mean_formula_against_samples():
    lam, r = 0.8, 1.0
    rng = np.random.default_rng(3)
    o = np.minimum(rng.uniform(0, r, 400_000), rng.exponential(1 / lam, 400_000))
    half = 3.3 * o.std(ddof=1) / math.sqrt(o.size)
    assert abs(o.mean() - OverheadModel(r, lam).mean()) < half


def test_event_overhead_starts_blocked_jobs_at_ticks_or_arrivals():
    cfg = S(servers=4, tasks=2, arrival_rate=1.2, overhead="event", revive_interval=1.0)
    rng = np.random.default_rng(11)
    phase = rng.uniform(0, 1)
    rep = run_replication(cfg, 4000, np.random.default_rng(11), keep_jobs=True, warmup=0)
    plain = run_replication(S(servers=4, tasks=2, arrival_rate=1.2), 4000, np.random.default_rng(12),
                            keep_jobs=True, warmup=0)
    delayed = rep.start > np.maximum(rep.arrival, np.r_[0.0, rep.start[:-1]])
    frac = ((rep.start - phase) / 1.0) % 1.0
    on_tick = np.isclose(frac, 0.0, atol=1e-9) | np.isclose(frac, 1.0, atol=1e-9)
    on_arrival = np.isin(rep.start, rep.arrival)
    assert delayed.sum() > 100
    assert (on_tick | on_arrival)[delayed].all()
    assert np.mean(rep.start - rep.arrival) > np.mean(plain.start - plain.arrival)


def test_spark_sync_releases_at_poll_ticks_of_each_task():
    """EXTENSIONS.md 3 by hand: task i arriving at a_i resumes at a_i + P (floor((T - a_i)/P) + 1)."""
    from barrier_queues.reference import service

    d, done, useful, ends = service([0.2, 1.7, 0.5, 0.1, 0.1, 0.1], 3, phases=2, sync="spark", poll=1.0)
    # phase 1 ends 0.2, 1.7, 0.5; T = 1.7; resumes 0.2 + 2 = 2.2, 1.7 + 1 = 2.7, 0.5 + 2 = 2.5
    assert ends == pytest.approx([2.3, 2.8, 2.6]) and d == pytest.approx(2.8) and useful == pytest.approx(2.7)
    d, *_ = service([0.2, 1.7, 0.5, 0.1, 0.1, 0.1], 3, phases=2, sync="ideal")
    assert d == pytest.approx(1.8)


def test_knee_release_by_hand():
    from barrier_queues.reference import knee

    # gaps 1, 1, 1, then 10: arr = 1, dev shrinks: the fourth completion is late -> knee after 3
    t = [1.0, 2.0, 3.0, 13.0]
    d, done = knee(t, min_fraction=0.5, min_wait=0.0)
    assert done == 3
    # after completion 3: dev = 0.75 * (0.75 * 0.5) = 0.28125 (arr stays 1), tau = 1 + 4 dev = 2.125
    assert d == pytest.approx(3.0 + 2.125)
    assert knee(t, min_fraction=1.0, min_wait=0.0) == (13.0, 4)        # f = 1: no early release
    assert knee(t, min_fraction=0.5, min_wait=6.0) == (13.0, 4)        # the knee comes before w
    # f k = 0.3 * 10 = 3.0000000000000004 in floating point: ceil must still give 3
    assert math.ceil(0.3 * 10 - 1e-12) == 3


def test_summary_has_the_documented_fields():
    s = simulate(S(**CENTRAL["1-barrier"]), jobs=20_000, seed=1).summary()
    for key in ("jobs", "utilization", "useful_utilization", "mean_completed_tasks", "mean_waiting", "mean_sojourn",
                "mean_execution", "quantiles", "ci", "jobs_per_second", "stable", "warmup", "quantile_accuracy"):
        assert key in s
    assert set(s["quantiles"]["waiting"]) == {0.5, 0.9, 0.99, 0.999}
    assert s["ci"]["method"].startswith("t interval over 20 batch means")
    assert s["ci"]["waiting_batches"]["batches"] == 20
    q = s["quantiles"]["sojourn"]
    assert q[0.5] <= q[0.9] <= q[0.99] <= q[0.999]
    sampled = simulate(S(**SAMPLED["barrier"]), jobs=20_000, seed=1).summary()
    assert 0 < sampled["held_share"] < 1


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(servers=8), "give exactly one of tasks"),
    (dict(servers=8, tasks=4, tasks_pmf={4: 1.0}), "give exactly one of tasks"),
    (dict(servers=8, tasks_pmf={4: 0.5, 12: 0.5}), "tasks_pmf value k must be an integer with 1 <= "),
    (dict(servers=8, tasks_pmf={2: 0.5, 4: 0.6}), "tasks_pmf probabilities must sum to 1"),
    (dict(servers=8, tasks_pmf="2-0.5"), "tasks_pmf must look like '4:0.5,12:0.5'"),
    (dict(servers=8, tasks_pmf="2:0.5,2:0.5"), "tasks_pmf must name each k once"),
    (dict(servers=8, tasks_pmf={2: 0.5, 3: 0.5}, needed=1), "needed must be None with tasks_pmf"),
    (dict(servers=8, tasks=4, needed=2, barrier_fraction=0.5), "needed must equal tasks"),
    (dict(servers=8, tasks=4, barrier_fraction=1.5), "barrier_fraction must be a number with 0 <="),
    (dict(servers=8, tasks=4, barrier_fraction=0.0, barriers=2), "barriers must be 1 when barrier_fraction = 0"),
    (dict(servers=8, tasks=4, arrival="bursty"), "arrival must be one of"),
    (dict(servers=8, tasks=4, overhead="spark"), "overhead must be one of"),
    (dict(servers=8, tasks=4, overhead="event"), "arrival_rate must be given (> 0) with a Spark overhead"),
    (dict(servers=8, tasks=4, arrival_rate=0.0), "arrival_rate must be a finite number > 0"),
    (dict(servers=8, tasks=4, arrival_rate=1e300), "arrival_rate must lie within a factor 1e9"),
    (dict(servers=8, tasks=4, arrival_rate=1.0, overhead="event", revive_interval=0), "revive_interval must be"),
    (dict(servers=8, tasks=4, arrival_rate=1.0, revive_interval=0.5), "revive_interval must be None without"),
    (dict(servers=8, tasks=4, release="knee", needed=3), "needed must equal tasks with release = 'knee'"),
    (dict(servers=8, tasks=4, release="knee", min_fraction=0), "min_fraction must be a number with 0 <"),
    (dict(servers=8, tasks=4, release="knee", min_fraction=1.5), "min_fraction must be a number with 0 <"),
    (dict(servers=8, tasks=4, release="knee", min_wait=-1), "min_wait must be a finite number >= 0"),
    (dict(servers=8, tasks=4, min_fraction=0.5), "min_fraction must be None unless release = 'knee'"),
    (dict(servers=8, tasks=4, release="timeout"), "timeout must be given"),
    (dict(servers=8, tasks=4, release="timeout", timeout=0), "timeout must be a finite number > 0"),
    (dict(servers=8, tasks=4, timeout=2.0), "timeout must be None unless release = 'timeout'"),
    (dict(servers=8, tasks=4, release="knee", barrier_fraction=0.5), "barrier_fraction must be 1 with release"),
    (dict(servers=8, tasks=4, probe_ratio=2.0), "probe_ratio must be None with placement = 'central'"),
    (dict(servers=8, tasks=4, placement="sample", probe_ratio=0.5), "probe_ratio must be a number >= 1"),
    (dict(servers=8, tasks=4, placement="sample", overhead="event", arrival_rate=1.0), "overhead must be None with"),
    (dict(servers=8, tasks=4, placement="everywhere"), "placement must be one of"),
    (dict(servers=8, tasks=4, phases=0), "phases must be an integer >= 1"),
    (dict(servers=8, tasks=4, sync="spark"), "sync must be None with phases = 1"),
    (dict(servers=8, tasks=4, phases=2, sync="ideal", sync_poll=1.0), "sync_poll must be None unless sync = 'spark'"),
    (dict(servers=8, tasks=4, phases=2, needed=2), "needed must equal tasks with phases > 1"),
    (dict(servers=8, tasks=4, phases=2, release="knee"), "release must be 'fixed' with phases > 1"),
    (dict(servers=8, tasks=4, phases=2, overhead="paper", arrival_rate=1.0), "overhead must be None or 'event'"),
    (dict(servers=8, tasks=4, phases=10**6), "phases must be at most"),
    (dict(servers=8, tasks=4, task_rate=2.0, task_dist="erlang:shape=2,rate=2"), "give at most one of task_rate"),
    (dict(servers=10**7, tasks=4), "servers must be an integer with 1 <= servers <= 1,000,000"),
])
def test_bad_systems(kwargs, fragment):
    with pytest.raises(bq.ParameterError) as info:
        S(**kwargs)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_run_arguments():
    cfg = S(servers=8, tasks=4, arrival_rate=1.0)
    with pytest.raises(bq.ParameterError, match="jobs must be an integer with 2 <= jobs"):
        simulate(cfg, jobs=1)
    with pytest.raises(bq.ParameterError, match="warmup must be an integer with 0 <= warmup <= jobs - 2"):
        simulate(cfg, jobs=100, warmup=99)
    with pytest.raises(bq.ParameterError, match="replications must be an integer with 1 <= replications"):
        simulate(cfg, replications=0)
    with pytest.raises(bq.ParameterError, match="seed must be an integer with 0 <= seed"):
        simulate(cfg, jobs=100, seed=-3)
    with pytest.raises(bq.ParameterError, match="seed must be an integer"):
        simulate(cfg, jobs=100, seed=1.5)
    with pytest.raises(bq.ParameterError, match="arrival_rate must be given"):
        simulate(S(servers=8, tasks=4))
    with pytest.raises(bq.ParameterError, match="overhead must be None or 'event' for a saturated run"):
        saturated_throughput(S(servers=8, tasks=4, arrival_rate=1.0, overhead="paper"))


def test_compare_with_exact_counts_and_errors():
    out = bq.compare_with_exact([1.0, 2.1], [[0.9, 1.1], [2.05, 2.2]], [1.0, 2.0])
    assert out == {"inside": 1, "total": 2, "max_rel_error": pytest.approx(0.05)}
    with pytest.raises(bq.ParameterError, match="same length"):
        bq.compare_with_exact([1.0], [[0, 2], [0, 2]], [1.0])


def test_event_overhead_only_delays_jobs_of_more_than_one_task():
    """A 1-task barrier job is launched by the freed executor's own offer (SPARK.md); k > 1 waits for a global one."""
    rng = np.random.default_rng(5)
    n = 3000
    arrivals = np.cumsum(rng.exponential(0.5, n))
    for k, same in ((1, True), (2, False)):
        tasks = np.full(n, k)
        times = rng.exponential(4.0 / k * 0.5, n * k)
        plain = simulate_reference(arrivals, tasks, np.ones(n, bool), times, servers=4)
        event = simulate_reference(arrivals, tasks, np.ones(n, bool), times, servers=4, event_overhead=True,
                                   phase=0.3)
        assert (plain["start"] == event["start"]) is same
        assert all(e >= p for e, p in zip(event["start"], plain["start"], strict=True))


def test_a_missing_kernel_build_is_one_clear_error(monkeypatch):
    """A source tree whose compiled kernels were never built says how to build them (no bare ImportError)."""
    import sys

    import barrier_queues
    from barrier_queues import ParameterError
    from barrier_queues.kernels import kernels_module as _kernels_module

    # as if never built: no loaded module (an import of it raises ImportError) and no package attribute
    monkeypatch.setitem(sys.modules, "barrier_queues._kernels", None)
    monkeypatch.delattr(barrier_queues, "_kernels", raising=False)
    with pytest.raises(ParameterError, match="compiled simulation kernels are not built: install the package"):
        _kernels_module()


def test_a_monte_carlo_stability_limit_refuses_clear_overload_and_says_when_it_cannot_tell():
    """2-barrier knee release: the limit is a Monte Carlo estimate with a 95 % interval. Clearly above it a
    simulation is refused, within 2 half-widths of it the run is 'stable: None' with the reason, below it the
    drift test decides (it used to call a load 0.2 % above the estimate stable)."""
    from barrier_queues import ParameterError
    from barrier_queues.stability import MC_LIMIT_MARGIN, estimated_limit

    base = S(servers=16, tasks=8, barriers=2, release="knee", min_fraction=0.5, min_wait=0.0,
             task_dist="bimodal:p=0.9,rate1=2,rate2=0.2")
    value, method, (lo, hi) = estimated_limit(base)
    assert method == "monte-carlo" and lo < value < hi and (hi - lo) / value < 0.01
    assert estimated_limit(base.replace(arrival_rate=1.0)) == (value, method, (lo, hi))
    margin = MC_LIMIT_MARGIN * (hi - lo) / 2
    with pytest.raises(ParameterError, match=r"stability limit lambda_max = .* \(monte-carlo, 95 % interval"):
        simulate(base.replace(arrival_rate=value + 1.01 * margin), jobs=5000, seed=1)
    # seed 2: a run whose waiting times show no drift (with seed 1 the drift test flags this run: stable False)
    close = simulate(base.replace(arrival_rate=value + 0.5 * margin), jobs=5000, seed=2).summary()
    assert close["stable"] is None and "too close to the limit" in close["stability"]["undecided"]
    drifting = simulate(base.replace(arrival_rate=value + 0.5 * margin), jobs=5000, seed=1).summary()
    assert drifting["stable"] is False and drifting["stability"]["drifting"]
    assert close["stability"]["lambda_max_ci"] == [lo, hi]
    below = simulate(base.replace(arrival_rate=0.8 * value), jobs=5000, seed=1).summary()
    assert below["stable"] is True and "undecided" not in below["stability"]
    assert estimated_limit(base.replace(barriers=1)) is None       # no law without queueing: the drift test decides


def test_quantiles_at_any_level_the_user_asks_for_and_their_intervals():
    """SimulationResult.quantile takes any float level; it agrees with the exact quantile of the kept jobs
    within the histograms' 0.2 % (plus one job's spacing), and its interval says why when there is none."""
    res = simulate(S(servers=16, tasks=4, arrival_rate=2.8), jobs=20_000, replications=3, seed=4, keep_jobs=True)
    for q in (0.37, 0.95, 0.995):
        exact = np.quantile(res.metric("sojourn"), q)
        assert res.quantile("sojourn", q) == pytest.approx(exact, rel=0.004)
        lo, hi = res.quantile_interval("sojourn", q)["interval"]
        assert lo <= res.quantile("sojourn", q) <= hi
    assert res.quantile("waiting", 0.9) == res.summary()["quantiles"]["waiting"][0.9]
    one = simulate(S(servers=16, tasks=4, arrival_rate=2.8), jobs=2_000, seed=4)
    assert one.quantile_interval("waiting", 0.5) == {
        "interval": None, "reason": "one replication: a quantile interval needs 2 or more"}
    with pytest.raises(bq.ParameterError, match="q must be a number with 0 < q < 1"):
        res.quantile("sojourn", 1.0)


def test_an_unseeded_run_records_the_seed_it_drew_and_reproduces_from_it():
    system = S(servers=8, tasks=2, arrival_rate=2.0)
    first = simulate(system, jobs=5_000, replications=2)
    assert isinstance(first.seed, int) and first.provenance()["seed"] == str(first.seed)
    again = simulate(system, jobs=5_000, replications=2, seed=first.seed)
    assert again.summary()["mean_sojourn"] == first.summary()["mean_sojourn"]
    prov = first.provenance()
    assert prov["system"] == system.describe() and prov["replications"] == 2 and prov["jobs_per_replication"] == 5_000


def test_a_saturated_estimate_never_exceeds_the_work_conservation_ceiling():
    """Without barriers (k = 1) the limit is the ceiling itself, rho_max = 1; a 100-job run's start rate is
    above it about half the time. The loads' estimates and intervals are cut at 1, and the answer says so."""
    cut = 0
    for seed in range(20):
        est = saturated_throughput(S(servers=4, tasks=1), jobs=100, replications=2, seed=seed)
        assert 0 < est["rho_max"] <= 1 and 0 <= est["rho_max_ci"][0] <= est["rho_max_ci"][1] <= 1
        cut += "at_ceiling" in est
    assert 3 <= cut <= 17
    with pytest.raises(bq.ParameterError, match="jobs must be at least 100 per replication for a saturated run"):
        saturated_throughput(S(servers=4, tasks=1), jobs=99, replications=2, seed=1)


def test_quantiles_at_any_level_keyed_by_float_with_the_reason_for_a_missing_interval():
    res = simulate(bq.at_utilization(S(servers=8, tasks=2), 0.6), jobs=5_000, replications=3, seed=2)
    out = res.quantiles("sojourn", [0.25, 0.95, 0.9999])
    assert list(out) == [0.25, 0.95, 0.9999]
    assert out[0.95]["value"] == res.quantile("sojourn", 0.95) and out[0.95]["reason"] is None
    assert out[0.95]["interval"][0] <= out[0.95]["value"] <= out[0.95]["interval"][1]
    assert out[0.9999]["interval"] is None and "50 are needed" in out[0.9999]["reason"]
    assert out[0.25]["value"] < out[0.95]["value"] < out[0.9999]["value"]


@pytest.mark.parametrize("s, k", [(16, 4), (12, 3), (8, 8), (12, 6)])
def test_a_two_barrier_system_with_k_dividing_s_is_the_mgc_queue_job_by_job(s, k):
    """Section II-C: a conventional 2-barrier system with k | s is the FIFO M/G/c queue, c = s/k, whose service
    time is a job's largest task time: the kernel's starts and departures equal the plain M/G/c recursion's on the
    same draws, bit for bit."""
    from barrier_queues.inputs import draw_jobs
    from barrier_queues.reference import mgc_fifo_starts
    from barrier_queues.runs import run_inputs

    system = bq.at_utilization(S(servers=s, tasks=k, barriers=2), 0.6)
    inputs = draw_jobs(system, 20_000, np.random.default_rng(s * k))
    out = run_inputs(system, inputs)
    service = inputs["times"].reshape(-1, k).max(axis=1)
    starts = np.array(mgc_fifo_starts(inputs["arrival"], service, s // k))
    assert np.array_equal(out["start"], starts) and np.array_equal(out["departure"], starts + service)


def _plain_draws(cfg, n, rng, start_time):
    """The documented draw order with numpy's own calls: arrival gaps, k, barrier flags, task times, overheads."""
    arrival = start_time + np.cumsum(rng.exponential(1 / cfg.arrival_rate, n))
    tasks = (np.full(n, cfg.tasks) if cfg.tasks_pmf is None
             else cfg.ks[rng.choice(cfg.ks.size, size=n, p=cfg.pk)])
    barrier = (np.full(n, cfg.barrier_fraction == 1) if cfg.barrier_fraction in (0, 1)
               else rng.random(n) < cfg.barrier_fraction)
    total = int(tasks.sum())
    times = rng.exponential(cfg.mean_task, total)
    if cfg.overhead == "paper":
        times = times + np.minimum(rng.uniform(0, cfg.revive_interval, total),
                                   rng.exponential(1 / cfg.arrival_rate, total))
    return {"arrival": arrival, "tasks": tasks, "barrier": barrier, "times": times}


@pytest.mark.parametrize("cfg", [dict(servers=16, tasks=4, arrival_rate=2.0, overhead="paper"),
                                 dict(servers=32, tasks=1, arrival_rate=22.4),
                                 dict(servers=16, tasks_pmf={4: 0.5, 12: 0.5}, barrier_fraction=0.5,
                                      arrival_rate=1.3, overhead="paper", revive_interval=0.7)])
def test_the_chunks_inputs_are_numpys_draws_in_the_documented_order(cfg):
    """``draw_jobs`` (numpy's fill loops scaled in place, the overheads' buffers kept in ``scratch`` between
    chunks of unequal sizes) equals the same draws taken with numpy's ``exponential``, ``choice``, ``random`` and
    ``uniform``, chunk after chunk, and leaves the stream at the same place."""
    cfg = S(**cfg)
    ours, plain = np.random.default_rng(12), np.random.default_rng(12)
    scratch, start = {}, 3.5
    for n in (700, 1500, 300):
        got = draw_jobs(cfg, n, ours, start_time=start, scratch=scratch)
        want = _plain_draws(cfg, n, plain, start)
        for key, value in want.items():
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        start = got["arrival"][-1]
    assert ours.random() == plain.random()
    assert ("uniforms" in scratch) == (cfg.overhead == "paper")
