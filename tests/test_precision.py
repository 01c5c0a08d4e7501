"""Runs to a stated precision: the target met or said not to be, a hard job budget, streams shared with fixed runs,
and intervals that still cover at their level after the sequential stopping rule."""

import json
import math
import subprocess
import sys

import pytest

import barrier_queues as bq
from barrier_queues.simulate import simulate_to_precision
from barrier_queues.statistics import binomial_tolerance

S = bq.BarrierSystem


def _erlang_c_wait(s, lam, mu=1.0):
    a = lam / mu
    top = a**s / math.factorial(s) / (1 - a / s)
    return top / (sum(a**n / math.factorial(n) for n in range(s)) + top) / (s * mu - lam)


def test_the_target_is_met_and_every_mean_is_within_it():
    res = bq.simulate(bq.at_utilization(S(servers=8, tasks=2), 0.5), jobs=20_000, precision=0.02, seed=1)
    out = res.summary()
    pr = out["precision"]
    assert pr["met"] and pr["rounds"] >= 2 and pr["replications"] == len(res.replications) >= 10
    assert pr["jobs_used"] == pr["replications"] * 20_000 <= pr["budget"]
    for m in ("waiting", "sojourn", "execution"):
        lo, hi = out["ci"][m]
        assert (hi - lo) / 2 <= 0.02 / 1.02 * out[f"mean_{m}"] * (1 + 1e-9)          # Law's gamma / (1 + gamma)
        assert pr["reached"][m] == pytest.approx((hi - lo) / 2 / out[f"mean_{m}"], rel=1e-9)


def test_the_first_round_is_the_fixed_run_with_the_same_seed_and_later_rounds_continue_its_streams():
    system = bq.at_utilization(S(servers=8, tasks=4), 0.5)
    seq = simulate_to_precision(system, 0.04, jobs=5_000, seed=3, workers=1)
    fixed = bq.simulate(system, jobs=5_000, replications=len(seq.replications), seed=3, workers=1,
                        warmup=seq.precision["warmup_jobs"])
    assert seq.precision["rounds"] >= 2
    assert [s.sums for s in seq.stats] == [s.sums for s in fixed.stats]
    again = simulate_to_precision(system, 0.04, jobs=5_000, seed=3, workers=2)
    assert again.summary()["mean_sojourn"] == seq.summary()["mean_sojourn"]             # any number of workers


def test_an_absolute_target_counts_too():
    res = bq.simulate(bq.at_utilization(S(servers=4, tasks=1), 0.3), jobs=5_000, absolute_precision=0.01, seed=2)
    pr = res.summary()["precision"]
    assert pr["met"] and pr["target"] is None and all(h <= 0.01 for h in pr["half_width"].values())


def test_near_the_limit_the_budget_stops_the_run_and_says_so():
    system = bq.at_utilization(S(servers=8, tasks=4), 0.99 * bq.stability_limit(8, 4).rho_max)
    res = bq.simulate(system, jobs=10_000, precision=0.02, budget=300_000, seed=1)
    pr = res.summary()["precision"]
    assert not pr["met"] and pr["jobs_used"] <= 300_000 and pr["replications"] == 30
    assert "not met within the budget of 300,000 jobs" in pr["reason"] and "stability limit" in pr["reason"]
    assert max(pr["reached"].values()) > 0.02


def test_a_hopeless_target_stops_after_the_first_round_and_says_why():
    """A target whose projected need passes 100 times the budget (1e-300 once raised OverflowError; a tight
    relative target near the stability limit ran to the budget in silence) stops after round 1, not met, with
    the projection in the reason; the same through the command line (exit 0, strict JSON)."""
    system = bq.at_utilization(S(servers=8, tasks=2), 0.5)
    for target, budget in ((1e-300, None), (0.001, 300_000)):
        near = system if target < 1e-100 else bq.at_utilization(S(servers=8, tasks=4),
                                                                0.99 * bq.stability_limit(8, 4).rho_max)
        pr = bq.simulate(near, jobs=10_000, precision=target, budget=budget, seed=1).summary()["precision"]
        assert not pr["met"] and pr["rounds"] == 1 and pr["replications"] == 10
        assert "stopped after round 1" in pr["reason"] and "more than 100 times the budget" in pr["reason"]
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "8", "-k", "2",
                          "--utilization", "0.5", "--jobs", "5000", "--precision", "1e-300", "--seed", "1", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert json.loads(out.stdout)["precision"]["met"] is False


@pytest.mark.parametrize("kwargs, fragment", [
    ({"budget": 10**6}, "budget must come with a precision target"),
    ({"precision": 0.0}, "precision must be"),
    ({"precision": 1.5}, "precision must be"),
    ({"absolute_precision": -1.0}, "absolute_precision must be a finite number > 0"),
    ({"precision": 0.01, "replications": 5}, r"replications must be at least 10 with a precision target \(got 5\)"),
    ({"precision": 0.01, "budget": 10_000}, "budget must be at least replications x jobs = 50,000"),
    ({"precision": 0.01, "keep_jobs": True}, "keep_jobs and jobs_csv must not be given with a precision target"),
])
def test_bad_targets_are_refused_before_any_work(kwargs, fragment):
    with pytest.raises(bq.ParameterError, match=fragment):
        bq.simulate(bq.at_utilization(S(servers=4, tasks=2), 0.5), jobs=5_000, **kwargs)


def test_the_command_line_reports_the_precision_and_a_sweep_runs_every_point_to_it(tmp_path):
    cli = [sys.executable, "-m", "barrier_queues.cli"]
    out = subprocess.run(cli + ["simulate", "-s", "8", "-k", "2", "--utilization", "0.5", "--precision", "0.05",
                                "--jobs", "20000", "--seed", "1", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    pr = json.loads(out.stdout)["precision"]
    assert pr["met"] and pr["jobs_used"] <= pr["budget"] == 100_000_000
    table = bq.sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.5}, tmp_path / "sw", jobs=20_000, seed=1,
                     precision=0.05)
    assert table.precision_met.all() and (table.precision_reached <= 0.05 / 1.05).all()
    assert (table.jobs_used >= 200_000).all() and (table.replications >= 10).all()
    with pytest.raises(bq.ParameterError, match="holds a different sweep \\(its precision differ\\)"):
        bq.sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.5}, tmp_path / "sw", jobs=20_000, seed=1,
                 precision=0.02)


def _coverage(system, exact, trials, seed, jobs=5_000, precision=0.05):
    hits = 0
    for i in range(trials):
        out = bq.simulate(system, jobs=jobs, precision=precision, seed=seed + i, workers=1).summary()
        lo, hi = out["ci"]["waiting"]
        hits += lo <= exact <= hi
    return hits


@pytest.mark.slow
def test_sequential_intervals_cover_the_exact_mean_on_an_mms_queue():
    """M/M/4 at rho 0.6, each trial run to 5 % precision (10 replications of 5,000 jobs first): the final 95 %
    interval of the mean waiting time covers Erlang C's exact value at its level, within a binomial tolerance:
    the stopping rule does not bias the intervals."""
    s, lam = 4, 2.4
    hits = _coverage(S(servers=s, tasks=1, arrival_rate=lam), _erlang_c_wait(s, lam), 200, 7000)
    low, high = binomial_tolerance(200, 0.95, 0.999)
    assert low <= hits <= high, f"{hits} of 200 (tolerance {low}-{high})"


@pytest.mark.slow
def test_sequential_intervals_cover_the_exact_mean_on_a_split_merge_queue():
    """Split-merge (s = k = 4, 2 barriers) is M/G/1 with service max of 4 exponentials: Pollaczek-Khinchine."""
    k, rho = 4, 0.6
    mean_s, var_s = bq.exp_order_stat_mean(k, k), bq.exp_order_stat_var(k, k)
    lam = rho / mean_s
    exact = lam * (var_s + mean_s**2) / (2 * (1 - rho))
    hits = _coverage(S(servers=k, tasks=k, barriers=2, arrival_rate=lam), exact, 200, 9000)
    low, high = binomial_tolerance(200, 0.95, 0.999)
    assert low <= hits <= high, f"{hits} of 200 (tolerance {low}-{high})"
