"""The simulator: kernel = reference, queueing theory, CTMC, invariants, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import barrier_queues as bq
from barrier_queues.overhead import OverheadModel
from barrier_queues.reference import simulate_reference
from barrier_queues.simulate import (
    CHUNK,
    SimulationConfig,
    SimulationResult,
    _t_interval,
    draw_jobs,
    run_replication,
    saturated_throughput,
    simulate,
    simulate_many,
    trace,
)

SYSTEMS = {
    "1-barrier": dict(servers=16, tasks=4, arrival_rate=2.8),
    "2-barrier": dict(servers=16, tasks=4, barriers=2, arrival_rate=1.5),
    "1-barrier skl": dict(servers=16, tasks=8, needed=6, arrival_rate=1.5),
    "2-barrier skl": dict(servers=16, tasks=8, needed=6, barriers=2, arrival_rate=1.2),
    "hybrid": dict(servers=16, tasks=8, barrier_fraction=0.5, arrival_rate=1.2),
    "hybrid 2-barrier": dict(servers=16, tasks=4, barriers=2, barrier_fraction=0.3, arrival_rate=1.5),
    "heterogeneous": dict(servers=16, tasks_pmf={4: 0.5, 12: 0.5}, arrival_rate=1.2),
    "bimodal tasks": dict(servers=10, tasks=10, needed=7, barriers=2, arrival_rate=0.05,
                          task_dist="bimodal:p=0.98,rate1=1,rate2=0.001"),
    "erlang deterministic arrivals": dict(servers=8, tasks=3, arrival_rate=1.5, arrival="deterministic",
                                          task_dist="erlang:shape=3,rate=3"),
    "deterministic tasks skl": dict(servers=8, tasks=4, needed=2, arrival_rate=0.5,
                                    task_dist="deterministic:value=1"),
    "empirical tasks": dict(servers=8, tasks=2, arrival_rate=1.0,
                            task_dist=bq.Empirical([0.2, 0.5, 1.0, 3.0])),
    "paper overhead": dict(servers=16, tasks=4, arrival_rate=2.0, overhead="paper"),
    "event overhead": dict(servers=16, tasks=4, arrival_rate=2.0, overhead="event", revive_interval=0.5),
    "event overhead hybrid": dict(servers=8, tasks=4, arrival_rate=1.0, overhead="event",
                                  barrier_fraction=0.5),
}


def _reference_for(cfg, jobs, seed, trace_=False):
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, cfg.revive_interval) if cfg.overhead == "event" else 0.0
    inputs = draw_jobs(cfg, jobs, rng)
    return simulate_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                              cfg.servers, cfg.stragglers, cfg.barriers == 2, cfg.overhead == "event",
                              cfg.revive_interval, phase, trace=trace_)


@pytest.mark.parametrize("name", SYSTEMS)
def test_kernel_equals_plain_python_reference_bit_for_bit(name):
    cfg = SimulationConfig(**SYSTEMS[name])
    jobs = 3000
    rep = run_replication(cfg, jobs, np.random.default_rng(99), trace=True)
    ref, tr = _reference_for(cfg, jobs, 99, trace_=True)
    for key in ("start", "departure", "work", "useful"):
        np.testing.assert_array_equal(getattr(rep, key), np.asarray(ref[key]), err_msg=key)
    np.testing.assert_array_equal(rep.trace["start"].to_numpy(), np.asarray(tr["start"]))
    np.testing.assert_array_equal(rep.trace["end"].to_numpy(), np.asarray(tr["end"]))


def test_kernel_equals_reference_across_chunk_boundaries():
    cfg = SimulationConfig(servers=8, tasks=4, arrival_rate=1.0, overhead="event")
    jobs = CHUNK + 777
    rep = run_replication(cfg, jobs, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    phase = rng.uniform(0.0, 1.0)
    first = draw_jobs(cfg, CHUNK, rng)
    second = draw_jobs(cfg, 777, rng, start_time=first["arrival"][-1])
    joined = {k: np.concatenate([first[k], second[k]]) for k in first}
    ref = simulate_reference(joined["arrival"], joined["tasks"], joined["barrier"], joined["times"], 8,
                             event_overhead=True, phase=phase)
    np.testing.assert_array_equal(rep.start, np.asarray(ref["start"]))
    np.testing.assert_array_equal(rep.arrival, joined["arrival"])


def _erlang_c_wait(s, lam, mu):
    a = lam / mu
    rho = a / s
    top = a**s / math.factorial(s) / (1 - rho)
    c = top / (sum(a**n / math.factorial(n) for n in range(s)) + top)
    return c / (s * mu - lam)


@pytest.mark.slow
@pytest.mark.parametrize("s, lam", [(1, 0.6), (4, 3.0), (10, 8.5)])
def test_k1_is_an_mms_queue_erlang_c(s, lam):
    res = simulate(SimulationConfig(servers=s, tasks=1, arrival_rate=lam), jobs=200_000,
                   replications=8, seed=1000 + s)
    summary = res.summary(level=0.99)
    lo, hi = summary["ci"]["waiting"]
    assert lo <= _erlang_c_wait(s, lam, 1.0) <= hi
    assert hi - lo < 0.2 * _erlang_c_wait(s, lam, 1.0)  # the test has power


def _pk_wait(lam, mean_s, var_s):
    rho = lam * mean_s
    return lam * (var_s + mean_s**2) / (2 * (1 - rho))


@pytest.mark.slow
@pytest.mark.parametrize("s, k, l_, barriers, rho", [(4, 4, 4, 1, 0.6), (6, 6, 6, 2, 0.5),
                                                     (8, 8, 6, 2, 0.6), (8, 5, 5, 2, 0.5)])
def test_split_merge_and_single_job_two_barrier_are_mg1_pollaczek_khinchine(s, k, l_, barriers, rho):
    # one job at a time (k = s, or 2 barriers with floor(s/k) = 1): service X_(l:k)
    mean_s = bq.exp_order_stat_mean(l_, k)
    var_s = bq.exp_order_stat_var(l_, k)
    lam = rho / mean_s
    res = simulate(SimulationConfig(servers=s, tasks=k, needed=l_, barriers=barriers, arrival_rate=lam),
                   jobs=200_000, replications=8, seed=2000 + s + k)
    lo, hi = res.summary(level=0.99)["ci"]["waiting"]
    assert lo <= _pk_wait(lam, mean_s, var_s) <= hi


@pytest.mark.slow
@pytest.mark.parametrize("s, k, l_, barriers", [(16, 4, 4, 1), (12, 3, 2, 1), (16, 8, 6, 1),
                                                (10, 10, 8, 2), (10, 4, 4, 2)])
def test_saturated_runs_reproduce_closed_forms_and_ctmc(s, k, l_, barriers):
    # 10 interval checks in this family: 99.9 % each keeps the family-wise error near 1 %
    est = saturated_throughput(SimulationConfig(servers=s, tasks=k, needed=l_, barriers=barriers),
                               jobs=100_000, replications=8, seed=3000 + s + k + l_, level=0.999)
    exact = bq.stability_limit(s, k, l_, barriers)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact.lambda_max <= hi
    assert hi - lo < 0.03 * exact.lambda_max  # ... and the test has power
    lo, hi = est["rho_useful_ci"]
    assert lo <= exact.rho_useful <= hi


@pytest.mark.slow
def test_saturated_bimodal_two_barrier_matches_order_statistics():
    law = bq.HyperExponential.bimodal(0.98, 1.0, 0.001)
    est = saturated_throughput(SimulationConfig(servers=10, tasks=10, needed=7, barriers=2, task_dist=law),
                               jobs=100_000, replications=8, seed=4, level=0.99)
    exact = bq.stability_limit(10, 10, 7, 2, task_dist=law)
    assert est["lambda_max_ci"][0] <= exact.lambda_max <= est["lambda_max_ci"][1]
    assert est["rho_useful_ci"][0] <= exact.rho_useful <= est["rho_useful_ci"][1]


@pytest.mark.parametrize("name", ["1-barrier", "hybrid", "heterogeneous", "2-barrier skl"])
def test_measured_utilization_matches_offered(name):
    res = simulate(SimulationConfig(**SYSTEMS[name]), jobs=50_000, replications=8, seed=7)
    per_rep = [SimulationResult(res.config, [r], res.warmup, 0).utilization()
               for r in res.replications]
    lo, hi = _t_interval(per_rep, 0.99)
    assert lo <= res.config.offered_utilization() <= hi


def test_same_seed_same_results_bit_for_bit_and_pool_equals_serial():
    cfg = SimulationConfig(**SYSTEMS["hybrid"])
    a = simulate(cfg, jobs=5000, replications=3, seed=42, workers=1)
    b = simulate(cfg, jobs=5000, replications=3, seed=42, workers=2)
    c = simulate(cfg, jobs=5000, replications=3, seed=43, workers=1)
    for ra, rb in zip(a.replications, b.replications, strict=True):
        np.testing.assert_array_equal(ra.departure, rb.departure)
    assert not np.array_equal(a.replications[0].departure, c.replications[0].departure)
    assert not np.array_equal(a.replications[0].departure, a.replications[1].departure)
    assert a.summary()["quantiles"] == b.summary()["quantiles"]


def test_simulate_many_streams_do_not_depend_on_the_sweep():
    one = SimulationConfig(servers=8, tasks=2, arrival_rate=2.0)
    two = SimulationConfig(servers=8, tasks=4, arrival_rate=1.0)
    alone = simulate_many([one], jobs=2000, seed=9, workers=1)[0]
    both = simulate_many([one, two], jobs=2000, seed=9, workers=2)
    np.testing.assert_array_equal(alone.replications[0].start, both[0].replications[0].start)


@settings(max_examples=40, deadline=None)
@given(s=st.integers(1, 12), data=st.data())
def test_invariants_on_random_systems(s, data):
    k = data.draw(st.integers(1, s))
    use_pmf = data.draw(st.booleans()) and s >= 2
    barriers = data.draw(st.sampled_from([1, 2]))
    p = data.draw(st.sampled_from([1.0, 0.5, 0.0]))
    needed = None if (use_pmf or p < 1) else data.draw(st.integers(1, k))
    kwargs = dict(servers=s, barriers=barriers, barrier_fraction=p, needed=needed,
                  overhead=data.draw(st.sampled_from([None, "event", "paper"])))
    if use_pmf:
        kwargs["tasks_pmf"] = {1: 0.5, s: 0.5} if s > 1 else {1: 1.0}
    else:
        kwargs["tasks"] = k
    probe = SimulationConfig(arrival_rate=1.0, **kwargs)
    lam = 0.5 * probe.servers / probe.mean_work() if probe.mean_work() else 0.1
    cfg = SimulationConfig(arrival_rate=lam, **kwargs)
    tasks_, jobs_ = trace(cfg, jobs=300, seed=data.draw(st.integers(0, 2**32 - 1)))
    assert (jobs_.start >= jobs_.arrival).all()
    assert (jobs_.departure >= jobs_.start).all()
    assert (np.diff(jobs_.start) >= 0).all()                      # FIFO: nobody overtakes
    assert tasks_.worker.between(0, s - 1).all()
    # a worker serves one task at a time (so never more than s are busy); with a
    # departure barrier it is held until its job departs
    hold = tasks_.merge(jobs_[["job", "departure", "barrier"]], on="job")
    until = np.where((barriers == 2) & hold.barrier, hold.departure, hold.end)
    for _, g in hold.assign(until=until).sort_values(["worker", "start", "until"]).groupby("worker"):
        assert (g.start.to_numpy()[1:] >= g.until.to_numpy()[:-1] - 1e-12).all()


def test_unstable_load_is_refused_with_the_limit_and_allowed_on_request():
    cfg = SimulationConfig(servers=16, tasks=4, arrival_rate=4.0)
    with pytest.raises(bq.ParameterError, match=r"stability limit lambda_max = 3\.60337 \(closed-form\)"):
        simulate(cfg, jobs=1000)
    res = simulate(cfg, jobs=100_000, seed=1, allow_unstable=True)
    summary = res.summary()
    assert summary["stable"] is False and summary["stability"]["drifting"]
    assert res.seconds < 30


def test_unknown_limit_falls_back_to_drift_detection():
    # hybrid system beyond saturation: no analytic limit, the drift test flags it
    cfg = SimulationConfig(servers=8, tasks=4, barrier_fraction=0.5, arrival_rate=2.5)
    assert cfg.analytic_limit() is None
    summary = simulate(cfg, jobs=50_000, seed=2).summary()
    assert summary["stable"] is False and summary["stability"]["kendall_tau"] > 0.9
    ok = simulate(SimulationConfig(servers=8, tasks=4, barrier_fraction=0.5, arrival_rate=1.0),
                  jobs=50_000, seed=2).summary()
    assert ok["stable"] is True


def test_paper_overhead_mean_formula_against_samples():
    lam, r = 0.8, 1.0
    rng = np.random.default_rng(3)
    o = np.minimum(rng.uniform(0, r, 400_000), rng.exponential(1 / lam, 400_000))
    half = 3.3 * o.std(ddof=1) / math.sqrt(o.size)
    assert abs(o.mean() - OverheadModel(r, lam).mean()) < half


def test_event_overhead_starts_blocked_jobs_at_ticks_or_arrivals():
    cfg = SimulationConfig(servers=4, tasks=2, arrival_rate=1.2, overhead="event", revive_interval=1.0)
    rng = np.random.default_rng(11)
    phase = rng.uniform(0, 1)
    rep = run_replication(cfg, 4000, np.random.default_rng(11))
    plain = run_replication(SimulationConfig(servers=4, tasks=2, arrival_rate=1.2), 4000,
                            np.random.default_rng(12))
    delayed = rep.start > np.maximum(rep.arrival, np.r_[0.0, rep.start[:-1]])
    on_tick = np.isclose(((rep.start - phase) / 1.0) % 1.0, 0.0, atol=1e-9) | \
        np.isclose(((rep.start - phase) / 1.0) % 1.0, 1.0, atol=1e-9)
    on_arrival = np.isin(rep.start, rep.arrival)
    assert delayed.sum() > 100
    assert (on_tick | on_arrival)[delayed].all()
    assert np.mean(rep.start - rep.arrival) > np.mean(plain.start - plain.arrival)


def test_summary_has_the_documented_fields():
    s = simulate(SimulationConfig(**SYSTEMS["1-barrier"]), jobs=20_000, seed=1).summary()
    for key in ("jobs", "utilization", "mean_waiting", "mean_sojourn", "mean_execution", "quantiles",
                "ci", "jobs_per_second", "stable"):
        assert key in s
    assert set(s["quantiles"]["waiting"]) == {"0.5", "0.9", "0.99", "0.999"}
    assert s["ci"]["method"].startswith("batch-means")
    q = s["quantiles"]["sojourn"]
    assert q["0.5"] <= q["0.9"] <= q["0.99"] <= q["0.999"]


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(servers=8), "give exactly one of tasks"),
    (dict(servers=8, tasks=4, tasks_pmf={4: 1.0}), "give exactly one of tasks"),
    (dict(servers=8, tasks_pmf={4: 0.5, 12: 0.5}), "tasks_pmf value k must be an integer with 1 <= "),
    (dict(servers=8, tasks_pmf={2: 0.5, 4: 0.6}), "tasks_pmf probabilities must sum to 1"),
    (dict(servers=8, tasks_pmf="2-0.5"), "tasks_pmf must look like '4:0.5,12:0.5'"),
    (dict(servers=8, tasks_pmf={2: 1.0}, needed=1), "needed must be None with tasks_pmf"),
    (dict(servers=8, tasks=4, needed=2, barrier_fraction=0.5), "needed must equal tasks"),
    (dict(servers=8, tasks=4, barrier_fraction=1.5), "barrier_fraction must be a number with 0 <="),
    (dict(servers=8, tasks=4, arrival="bursty"), "arrival must be one of"),
    (dict(servers=8, tasks=4, overhead="spark"), "overhead must be one of"),
    (dict(servers=8, tasks=4, overhead="event"), "arrival_rate must be given (> 0) with a Spark overhead"),
    (dict(servers=8, tasks=4, arrival_rate=0.0), "arrival_rate must be a finite number > 0"),
    (dict(servers=8, tasks=4, arrival_rate=1.0, revive_interval=0), "revive_interval must be a finite"),
])
def test_bad_configurations(kwargs, fragment):
    with pytest.raises(bq.ParameterError) as info:
        SimulationConfig(**kwargs)
    assert fragment in str(info.value)


def test_bad_run_arguments():
    cfg = SimulationConfig(servers=8, tasks=4, arrival_rate=1.0)
    with pytest.raises(bq.ParameterError, match="jobs must be an integer >= 2"):
        simulate(cfg, jobs=1)
    with pytest.raises(bq.ParameterError, match="warmup must be an integer with 0 <= warmup <= jobs - 1"):
        simulate(cfg, jobs=100, warmup=100)
    with pytest.raises(bq.ParameterError, match="replications must be an integer >= 1"):
        simulate(cfg, replications=0)
    with pytest.raises(bq.ParameterError, match="arrival_rate must be given"):
        simulate(SimulationConfig(servers=8, tasks=4))
    with pytest.raises(bq.ParameterError, match="overhead must be None for a saturated run"):
        saturated_throughput(SimulationConfig(servers=8, tasks=4, arrival_rate=1.0, overhead="paper"))


def test_compare_with_exact_counts_and_errors():
    out = bq.compare_with_exact([1.0, 2.1], [[0.9, 1.1], [2.05, 2.2]], [1.0, 2.0])
    assert out == {"inside": 1, "total": 2, "max_rel_error": pytest.approx(0.05)}
    with pytest.raises(bq.ParameterError, match="same length"):
        bq.compare_with_exact([1.0], [[0, 2], [0, 2]], [1.0])


def test_event_overhead_only_delays_jobs_of_more_than_one_task():
    """A 1-task barrier job is launched by the freed executor's own offer (SPARK.md); k > 1 waits for a global one."""
    from barrier_queues.reference import simulate_reference

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
