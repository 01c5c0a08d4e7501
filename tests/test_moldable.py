"""Moldable barrier jobs (Appendix B, section 7): the oracles of the model, and the command line."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import barrier_queues as bq
from barrier_queues.moldable import moldable_compiled, moldable_run, simulate_moldable

SIM = {"jobs": 20_000, "replications": 8, "seed": 1}


def _inside(r, exact, key="waiting"):
    lo, hi = r["ci"][key]
    assert lo <= exact <= hi, (r[f"mean_{key}"], [lo, hi], exact)


@pytest.mark.parametrize("policy, extra", [("take-fraction", {"take_fraction": 0.5}), ("take-random", {}),
                                           ("take-random-all", {}), ("patience", {})])
@pytest.mark.parametrize("barriers", [1, 2])
def test_one_worker_is_mg1_with_erlang_service(policy, extra, barriers):
    """s = 1: every policy, 1 or 2 barriers, is M/G/1 with Erlang(k, mu) service:
    W = lambda k (k+1) / (2 mu^2 (1 - lambda k / mu))."""
    lam, k = 0.3, 2
    r = simulate_moldable(1, k, lam, policy, barriers=barriers, **extra, **SIM)
    _inside(r, lam * k * (k + 1) / (2 * (1 - lam * k)))
    assert r["mean_workers"] == 1.0


@pytest.mark.parametrize("policy, extra", [("take-fraction", {"take_fraction": 0.3}), ("patience", {}),
                                           ("take-random", {})])
def test_one_task_per_job_is_erlang_c(policy, extra):
    """k = 1: FIFO M/M/s (Erlang C); patience never defers (S <= 1/2 < 1 <= E)."""
    s, lam = 4, 2.4
    a = lam
    top = a**s / math.factorial(s) / (1 - a / s)
    exact = top / (sum(a**n / math.factorial(n) for n in range(s)) + top) / (s - lam)
    _inside(simulate_moldable(s, 1, lam, policy, **extra, **SIM), exact)


def test_a_fraction_at_most_one_over_s_is_m_ek_s():
    """take-fraction f <= 1/s: n = 1 always: FIFO M/E_k/s, the same with 1 and 2 barriers, mean execution k/mu
    and one worker per job; the simulator's M/G/s queue with Erlang(k) service (independent code) agrees."""
    s, k, lam = 4, 3, 1.0
    one = simulate_moldable(s, k, lam, "take-fraction", take_fraction=0.25, **SIM)
    two = simulate_moldable(s, k, lam, "take-fraction", take_fraction=0.25, barriers=2, **SIM)
    assert one["mean_waiting"] == two["mean_waiting"] and one["mean_workers"] == 1.0
    _inside(one, float(k), "execution")
    mgs = bq.simulate(bq.BarrierSystem(servers=s, tasks=1, task_dist=f"erlang:shape={k},rate=1", arrival_rate=lam),
                      jobs=100_000, replications=8, seed=2).summary()
    lo, hi = one["ci"]["waiting"]
    mlo, mhi = mgs["ci"]["waiting"]
    assert lo <= mhi and mlo <= hi


def test_take_everything_with_two_barriers_and_s_equal_k_is_split_merge():
    """take-fraction 1, 2 barriers, s = k: one job at a time on all k workers: M/G/1 with G = max of k Exp(1):
    E[G] = H_k, E[G^2] = sum 1/i^2 + H_k^2 (Pollaczek-Khinchine)."""
    k, lam = 4, 0.3
    h = sum(1 / i for i in range(1, k + 1))
    g2 = sum(1 / i**2 for i in range(1, k + 1)) + h * h
    r = simulate_moldable(k, k, lam, "take-fraction", take_fraction=1.0, barriers=2, **SIM)
    _inside(r, lam * g2 / (2 * (1 - lam * h)))
    assert r["mean_workers"] == k


def test_patience_with_two_tasks_never_defers_and_equals_taking_everything_job_by_job():
    """Patience defers only if k > l (l + 1): with k <= 2 never, so it is take-fraction 1, job by job."""
    rng = np.random.default_rng(3)
    arrivals = np.cumsum(rng.exponential(0.5, 3000))
    times = rng.exponential(1.0, 3000 * 2)
    for wait in ("min", "mean", "height"):
        a = moldable_run(arrivals, 2, times, 5, "patience", patience_wait=wait)
        b = moldable_run(arrivals, 2, times, 5, "take-fraction", take_fraction=1.0)
        assert a == b


def test_patience_defers_when_one_more_worker_is_worth_the_wait():
    """k = 8 on 2 workers, one busy with a single short task left: with l = 1 free, S = 8/1 - 8/2 = 4 exceeds
    E = 1 (min), so the head waits for the second worker and starts on both."""
    out = moldable_run([0.0, 0.1], 8, [0.5] + [1.0] * 7 + [1.0] * 8, 2, "patience")
    assert out["workers"] == [2, 2] and out["start"][1] == out["departure"][0]


def test_light_traffic_limits():
    """An empty system: take-fraction 0.5 on s = 16, k = 8 takes 8 workers, one task each: mean execution
    H_8 = 2.7179; take-random takes E[min(k, U{1..16})] = 6.25 workers on average."""
    r = simulate_moldable(16, 8, 0.002, "take-fraction", take_fraction=0.5, jobs=4000, replications=5, seed=4)
    assert r["mean_workers"] == pytest.approx(8.0, abs=0.02)    # (a job rarely arrives while another runs)
    _inside(r, sum(1 / i for i in range(1, 9)), "execution")
    rr = simulate_moldable(16, 8, 0.002, "take-random", jobs=4000, replications=5, seed=5)
    _inside(rr, 6.25, "workers")


def test_the_forkulator_product_and_the_refusals():
    """ceil(25 x 0.28) = 8 in double precision (7.000000000000001), as forkulator computes it."""
    out = moldable_run([0.0], 30, [1.0] * 30, 25, "take-fraction", take_fraction=0.28)
    assert out["workers"] == [8]
    for kwargs, message in (({"policy": "take-fraction"}, "take_fraction must be given"),
                            ({"policy": "patience", "take_fraction": 0.5}, "only with moldable 'take-fraction'"),
                            ({"policy": "take-random", "patience_wait": "mean"}, "only with moldable 'patience'"),
                            ({"policy": "bogus"}, "moldable must be one of")):
        with pytest.raises(bq.ParameterError, match=message):
            simulate_moldable(4, 2, 0.5, jobs=100, **kwargs)


def test_the_command_line():
    cmd = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "8", "-k", "4", "--arrival-rate", "0.8",
           "--moldable", "take-fraction", "--take-fraction", "0.5", "--jobs", "5000", "--replications", "4",
           "--seed", "1", "--json"]
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert doc["stable"] and 1 <= doc["mean_workers"] <= 4 and doc["mean_sojourn"] > doc["mean_waiting"]
    for extra, message in ((["--scheduling", "first-fit"], "scheduling must be 'fcfs'"),
                           (["--patience-wait", "mean"], "only with moldable 'patience'")):
        out = subprocess.run(cmd[:-1] + extra, capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------------
# the compiled kernel against the plain reference, and the paper's system as a degenerate case

POLICY_CASES = [("take-fraction", 0.5, "min"), ("take-fraction", 1.0, "min"), ("take-fraction", 0.3, "min"),
                ("take-random", None, "min"), ("take-random-all", None, "min"), ("patience", None, "min"),
                ("patience", None, "mean"), ("patience", None, "height"), ("fixed", None, "min")]


def _path(seed, s, k, n, load=0.7, law="exponential"):
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / (load * s / k), n))
    times = rng.exponential(1.0, n * k) if law == "exponential" else rng.lognormal(-0.5, 1.0, n * k)
    return arrivals, times, rng.random(n)


def _same(a, b):
    for key in ("start", "departure", "workers"):
        assert np.array_equal(np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float), equal_nan=True), key


@pytest.mark.parametrize("policy, f, wait", POLICY_CASES)
@pytest.mark.parametrize("two_barrier", [False, True])
def test_the_kernel_equals_the_plain_reference_bit_for_bit(policy, f, wait, two_barrier):
    """Every policy and estimate, 1 and 2 barriers, k below, at and above s, s = 1, a heavy-tailed law: each
    job's start, departure and workers equal to the reference's."""
    for seed, (s, k), law in ((0, (4, 4), "exponential"), (1, (8, 3), "exponential"), (2, (6, 12), "lognormal"),
                              (3, (1, 5), "exponential"), (4, (16, 16), "lognormal")):
        arrivals, times, u = _path(seed, s, k, 800, law=law)
        args = (arrivals, k, times, s, policy, f, u, wait, two_barrier, 1.0, max(1, s // 2))
        _same(moldable_compiled(*args), moldable_run(*args))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=st.sampled_from(POLICY_CASES), s=st.integers(1, 12), k=st.integers(1, 20), two=st.booleans(),
       law=st.sampled_from(["exponential", "lognormal"]), load=st.floats(0.05, 1.4), seed=st.integers(0, 2**16),
       need=st.integers(1, 12), mu=st.sampled_from([0.25, 1.0, 3.0]))
def test_the_kernel_equals_the_plain_reference_on_drawn_configurations(case, s, k, two, law, load, seed, need, mu):
    """Configurations no one chose: any policy and estimate, s and k from 1 (k above s too), 1 or 2 barriers,
    loads up to 1.4 (beyond some policies' limits), a heavy-tailed law, any requirement, the rate the patience
    estimates use: every job's start, departure and workers equal to the plain reference's."""
    policy, f, wait = case
    arrivals, times, u = _path(seed, s, k, 300, load=load, law=law)
    args = (arrivals, k, times, s, policy, f, u, wait, two, mu, min(need, s))
    _same(moldable_compiled(*args), moldable_run(*args))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_the_kernel_equals_the_plain_reference_on_long_paths(seed):
    rng = np.random.default_rng(100 + seed)
    s = int(rng.integers(1, 17))
    k = int(rng.integers(1, 2 * s + 1))
    policy, f, wait = POLICY_CASES[seed % len(POLICY_CASES)]
    arrivals, times, u = _path(seed, s, k, 20_000, load=float(rng.uniform(0.3, 0.9)))
    for two in (False, True):
        args = (arrivals, k, times, s, policy, f, u, wait, two, 1.0, int(rng.integers(1, s + 1)))
        _same(moldable_compiled(*args), moldable_run(*args))


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("barriers", [1, 2])
def test_a_fixed_requirement_of_k_is_the_papers_system_job_by_job(k, barriers):
    """take-random-all with every requirement n = ceil(s U) = k (U = k / s, exact here): the head waits for k
    free workers and runs one task on each, the paper's (s, k, k) FIFO system: the central queue's kernel on
    the same jobs gives the same starts and departures."""
    from barrier_queues.runs import run_inputs

    s, n = 8, 3000
    arrivals, times, _ = _path(7, s, k, n)
    u = np.full(n, k / s)
    assert math.ceil(s * (k / s)) == k
    out = moldable_compiled(arrivals, k, times, s, "take-random-all", None, u, "min", barriers == 2, 1.0)
    system = bq.BarrierSystem(servers=s, tasks=k, barriers=barriers, arrival_rate=0.7 * s / k)
    paper = run_inputs(system, {"arrival": arrivals, "tasks": np.full(n, k, dtype=np.int64),
                                "barrier": np.ones(n, dtype=bool), "times": times,
                                "offsets": np.arange(n, dtype=np.int64) * k})
    assert np.array_equal(out["start"], np.asarray(paper["start"]))
    assert np.array_equal(out["departure"], np.asarray(paper["departure"]))
    assert (out["workers"] == k).all()
    fixed = moldable_compiled(arrivals, k, times, s, "fixed", None, None, "min", barriers == 2, 1.0, k)
    for key in ("start", "departure", "workers"):
        assert np.array_equal(fixed[key], out[key])


def test_a_fixed_requirement_on_the_command_line_and_its_refusals():
    cmd = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "8", "-k", "8", "--arrival-rate", "0.3",
           "--jobs", "2000", "--replications", "2"]
    doc = json.loads(subprocess.run(cmd + ["--moldable", "fixed", "--requirement", "4", "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    assert doc["config"]["requirement"] == 4 and doc["mean_workers"] == 4.0
    for extra, message in ((["--moldable", "fixed"], "requirement must be"),
                           (["--moldable", "patience", "--requirement", "2"], "only with moldable 'fixed'"),
                           (["--requirement", "2"], "requirement must be None without moldable jobs")):
        out = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    with pytest.raises(bq.ParameterError, match="at most servers = 8"):
        simulate_moldable(8, 16, 0.1, "fixed", requirement=9)


def _room_inputs(system, jobs: int, seed: int) -> dict:
    """A replication's inputs drawn as the moldable room draws them (gaps, task times, one uniform per job)."""
    from barrier_queues.inputs import draw_jobs

    rng = np.random.default_rng(seed)
    inputs = draw_jobs(system, jobs, rng)
    inputs["uniforms"] = rng.random(jobs)
    return inputs


def test_the_room_runs_the_kernel_and_equals_its_reference():
    """The moldable room's compiled path and its plain reference give every per-job array bit for bit on the
    inputs a replication draws; a replication too large to draw at once is refused before any work."""
    from barrier_queues.schedulers import of

    system = bq.BarrierSystem(servers=6, tasks=4, arrival_rate=0.9, moldable="patience", patience_wait="height")
    room = of(system)
    assert room.name == "moldable"
    inputs = _room_inputs(system, 2000, 5)
    fast, plain = room.run_inputs(system, inputs), room.reference(system, inputs)
    for key in ("start", "departure", "work", "useful", "completed", "workers"):
        assert np.array_equal(fast[key], plain[key]), key
    with pytest.raises(bq.ParameterError, match="jobs x tasks must be at most"):
        simulate_moldable(servers=4, tasks=10_000, arrival_rate=1e-5, policy="take-random", jobs=30_000,
                          replications=1)


def test_the_load_as_a_utilization_and_one_replication_on_the_command_line():
    """simulate --moldable takes --utilization (rho = lambda k E[X] / s: here lambda = 0.3 x 4 / (6 x 2) = 0.1)
    as it takes --arrival-rate, the same numbers; one replication says it has no interval (no 'nan')."""
    cli = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "4", "-k", "6", "--moldable",
           "take-random", "--task-dist", "exponential:rate=0.5", "--jobs", "2000", "--seed", "3"]
    by_rho = subprocess.run(cli + ["--utilization", "0.3", "--json"], capture_output=True, text=True, check=True)
    by_rate = subprocess.run(cli + ["--arrival-rate", "0.1", "--json"], capture_output=True, text=True, check=True)
    a, b = json.loads(by_rho.stdout), json.loads(by_rate.stdout)
    assert a["config"]["arrival_rate"] == pytest.approx(0.1, rel=1e-15) and a["mean_sojourn"] == pytest.approx(
        b["mean_sojourn"], rel=1e-12)
    text = subprocess.run(cli + ["--utilization", "0.3"], capture_output=True, text=True, check=True).stdout
    assert "nan" not in text and "CI t interval over 20 batch means of one replication" in text
    assert "workers" in text and "taken per job" in text
    both = subprocess.run(cli + ["--utilization", "0.3", "--arrival-rate", "0.1"], capture_output=True, text=True)
    assert both.returncode == 2 and "one of --arrival-rate and --utilization" in both.stderr


def test_the_policies_are_one_registry_that_the_kernel_and_the_chain_name_exactly():
    from barrier_queues import moldable_ctmc, moldable_policies
    from barrier_queues.kernels import kernels_module

    assert set(kernels_module().MOLDABLE_POLICIES) == set(moldable_policies.names())
    assert set(moldable_ctmc.CTMC_POLICIES) == set(moldable_policies.names())


def test_a_policy_added_to_the_registry_runs_as_its_plain_rule_and_is_refused_where_it_has_no_code():
    """The extension path: a policy registered with its plain rule alone runs in the room's reference (here
    'half', take-fraction's rule at f = 1/2 written again, so the compiled take-fraction at 0.5 is its oracle,
    job by job); the compiled kernel and the exact chain, which have no code for it, refuse it by name."""
    import math

    from barrier_queues import moldable_ctmc, moldable_policies

    moldable_policies.register(moldable_policies.MoldablePolicy(
        "half", "half of the free workers", None,
        lambda free, servers, k, value, u, wait: 1 if free == 1 else max(1, math.ceil(free * 0.5))))
    try:
        from barrier_queues.schedulers import of

        mine = bq.BarrierSystem(servers=8, tasks=4, arrival_rate=0.8, moldable="half")
        oracle = bq.BarrierSystem(servers=8, tasks=4, arrival_rate=0.8, moldable="take-fraction", take_fraction=0.5)
        inputs = _room_inputs(mine, 3000, 4)
        plain, compiled = of(mine).reference(mine, inputs), of(oracle).run_inputs(oracle, inputs)
        for key in ("start", "departure", "workers"):
            assert np.array_equal(plain[key], compiled[key]), key
        with pytest.raises(bq.ParameterError, match="no compiled code"):
            bq.simulate(mine, jobs=3000, replications=2, seed=4, progress=False)
        with pytest.raises(bq.ParameterError, match="exact chain"):
            moldable_ctmc.moldable_ctmc(4, 2, 0.5, "half")
    finally:
        del moldable_policies.POLICIES["half"]


def test_fixed_n_equal_to_k_is_the_papers_system_through_the_same_statistics():
    """``fixed`` with n = k is the paper's system job by job, and the moldable front draws the same inputs and
    chooses its warm-up by the same rule as :func:`barrier_queues.simulate` (MSER-5 on the replications'
    averaged waiting, rounded to 1/100 of the run): the means and intervals are equal up to the order of
    summation (1e-12). (Per replication MSER, the former rule, came out 3.8 % low at load 0.9 of s = 8, k = 4
    over 40 seeds, z = -7.)"""
    import barrier_queues as bq

    lam = 0.9 * bq.stability_limit(8, 4).lambda_max
    for seed in (1, 2):
        mold = simulate_moldable(8, 4, lam, "fixed", requirement=4, jobs=20_000, replications=4, seed=seed)
        gen = bq.simulate(bq.BarrierSystem(servers=8, tasks=4, arrival_rate=lam), jobs=20_000, replications=4,
                          seed=seed, progress=False).summary()
        assert mold["mean_waiting"] == pytest.approx(gen["mean_waiting"], rel=1e-12)
        assert mold["mean_sojourn"] == pytest.approx(gen["mean_sojourn"], rel=1e-12)
        assert list(mold["ci"]["waiting"]) == pytest.approx(list(gen["ci"]["waiting"]), rel=1e-12)


def test_the_workers_each_job_took_reach_the_summary_the_kept_jobs_and_the_csv(tmp_path):
    """Moldable jobs through the one engine: the summary's mean workers is the mean of the kept jobs' workers
    after the warm-up, and --jobs-csv writes the same column."""
    import pandas as pd

    system = bq.BarrierSystem(servers=8, tasks=12, arrival_rate=0.3, moldable="take-random")
    result = bq.simulate(system, jobs=3000, replications=2, seed=1, keep_jobs=True, progress=False)
    frame = result.to_frame()
    assert frame.workers.between(1, 8).all()
    assert frame[~frame.warmup].workers.mean() == pytest.approx(result.summary()["mean_workers"], rel=1e-12)
    csv = tmp_path / "jobs.csv"
    subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "8", "-k", "12", "--moldable",
                    "take-random", "--arrival-rate", "0.3", "--jobs", "3000", "--replications", "2", "--seed", "1",
                    "--jobs-csv", str(csv)], capture_output=True, check=True)
    assert pd.read_csv(csv).workers.tolist() == frame.workers.tolist()


def test_the_stability_verdict_of_moldable_jobs():
    """Work conservation for take-fraction with 1 barrier (s / (k E[X])); the paper's limit for fixed n >= k;
    no limit claimed for patience (the bound s / (k E[X]) refuses only a load at or above it)."""
    from barrier_queues.stability import stability_verdict

    def verdict(**kw):
        return stability_verdict(bq.BarrierSystem(servers=8, tasks=4, **kw))

    assert verdict(arrival_rate=1.9, moldable="take-fraction", take_fraction=0.5)["lambda_max"] == 2.0
    paper = bq.stability_limit(8, 4).lambda_max
    assert verdict(arrival_rate=1.0, moldable="fixed", requirement=6)["lambda_max"] == pytest.approx(paper, rel=1e-15)
    assert verdict(arrival_rate=1.9, moldable="patience")["verdict"] is None
    assert verdict(arrival_rate=2.0, moldable="patience")["verdict"] == "above"
    assert verdict(arrival_rate=1.0, moldable="take-fraction", take_fraction=0.5, barriers=2)["verdict"] is None


def test_stability_limit_of_a_moldable_system_is_its_own_or_refused():
    """stability_limit of a moldable system once answered the rigid paper's limit (take-fraction at s = 8, k = 4:
    1.576 for a policy whose limit is 2) or failed on k > s with an unrelated message; now the limit is the
    moldable one where it is known exactly, and a clear refusal naming the saturated run otherwise."""
    from barrier_queues.stability import known_limit

    greedy = bq.BarrierSystem(servers=8, tasks=4, moldable="take-fraction", take_fraction=0.5)
    lim = bq.stability_limit(greedy)
    assert lim.lambda_max == 2.0 and lim.rho_max == pytest.approx(1.0, rel=1e-15)
    assert known_limit(greedy)[0] == 2.0
    fixed = bq.BarrierSystem(servers=8, tasks=4, moldable="fixed", requirement=5)
    assert bq.stability_limit(fixed).lambda_max == bq.stability_limit(8, 4).lambda_max
    wide = bq.BarrierSystem(servers=8, tasks=12, moldable="patience")
    assert known_limit(wide) is None
    with pytest.raises(bq.ParameterError, match="estimate it with saturated_moldable"):
        bq.stability_limit(wide)
