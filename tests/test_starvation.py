"""Honest stability: a class that starves makes the system unstable, under every discipline and workload.

The pooled drift test of the started jobs' waiting times does not see a minority class that starves (large
gangs under first-fit): its jobs start only once the arrivals end. These tests check the per-class verdict of
:func:`barrier_queues.statistics.run_stability` on systems that starve and on systems that do not, the queue
counts behind it against a plain count over kept jobs, the holding ceiling against an independent Monte Carlo
calculation, and that no mean or precision is reported for an unstable system.
"""

import math

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues import BarrierSystem as S
from barrier_queues.simulate import simulate
from barrier_queues.stability import holding_ceiling

#: the scheduling chapter's heterogeneous workload: k = 2 or 8 equally likely on 8 workers, 2 barriers
HET = S(servers=8, tasks_pmf={2: 0.5, 8: 0.5}, barriers=2)


def starving(discipline: str, small_load: float = 0.5) -> S:
    """One-or-all: 1-task jobs at ``small_load`` and gangs of k = s = 16 at 0.01 per unit time."""
    small = small_load * 16
    rate = small + 0.01
    return S(servers=16, tasks_pmf={1: small / rate, 16: 0.01 / rate}, arrival_rate=rate, scheduling=discipline)


def test_holding_ceiling_against_an_independent_monte_carlo():
    """With 2 barriers a job holds its k workers until its slowest task ends, under any rule: the ceiling is
    s / E[k max of k task times]. 10^6 sampled jobs of the chapter's workload give E[held] within 4 standard
    errors; in units of offered load (task work, 5 per job) it is 0.404, the audit's number."""
    rng = np.random.default_rng(7)
    n = 1_000_000
    k = np.where(rng.random(n) < 0.5, 2, 8)
    held = np.where(k == 2, 2 * rng.exponential(size=(n, 2)).max(axis=1), 8 * rng.exponential(size=(n, 8)).max(axis=1))
    lam = holding_ceiling(HET)
    assert abs(8 / lam - held.mean()) < 4 * held.std() / math.sqrt(n)
    assert 8 / lam == pytest.approx(0.5 * 2 * 1.5 + 0.5 * 8 * sum(1 / i for i in range(1, 9)), rel=1e-12)
    assert lam * 5 / 8 == pytest.approx(0.404, abs=5e-4)
    # with 1 barrier a worker is given back when its task ends: the ceiling is the offered load 1
    assert holding_ceiling(HET.replace(barriers=1)) == pytest.approx(8 / 5, rel=1e-12)


def test_first_fit_beyond_the_ceiling_is_unstable_and_reports_no_means():
    """s = 8, k in {2, 8}, 2 barriers at load 0.45 (the audit's first-fit case, marked stable before): refused
    without allow_unstable; with it, unstable, the k = 8 class flagged, no mean reported as a number."""
    system = bq.at_utilization(HET.replace(scheduling="first-fit"), 0.45)
    with pytest.raises(bq.ParameterError, match="holding ceiling"):
        simulate(system, jobs=20_000, seed=1)
    out = simulate(system, jobs=20_000, replications=4, seed=1, allow_unstable=True).summary()
    assert out["stable"] is False
    big = next(c for c in out["stability"]["classes"] if c["tasks"] == 8)
    assert not big["stable"] and big["queue_grows"] and big["queue_growth"] > 0
    assert out["mean_waiting"] is None and out["ci"]["waiting"] is None and out["run_means"]["waiting"] > 0
    assert all(c["mean_waiting"] is None and c["run_means"]["waiting"] > 0 for c in out["classes"])
    assert "grow with run length" in out["run_means_note"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_starving_gangs_under_first_fit_are_flagged_while_fcfs_and_backfill_are_stable(seed):
    """Under first-fit the gangs that need every worker wait for a moment when all 16 are free, which at a
    small-job load of 0.5 hardly comes: their queue grows and most start only once the arrivals end. FIFO and
    backfill's reservation start them: stable."""
    out = {d: simulate(starving(d), jobs=20_000, replications=2, seed=seed, allow_unstable=True).summary()
           for d in ("fcfs", "first-fit", "backfill")}
    assert out["fcfs"]["stable"] is True and out["backfill"]["stable"] is True
    ff = out["first-fit"]
    assert ff["stable"] is False
    gang = next(c for c in ff["stability"]["classes"] if c["tasks"] == 16)
    small = next(c for c in ff["stability"]["classes"] if c["tasks"] == 1)
    assert not gang["stable"] and gang["queue_grows"] and gang["starts_late"] and gang["late_share"] > 0.5
    assert small["stable"]                                      # the small jobs flow: only the gangs starve
    assert ff["stability"]["unstarted"] >= gang["unstarted"] > 0
    assert next(c for c in ff["classes"] if c["tasks"] == 16)["stable"] is False


@pytest.mark.parametrize("name", ["het first-fit 0.3", "het backfill 0.3", "het server-filling 0.3",
                                  "hybrid first-fit", "one-or-all fcfs", "M/M/4 0.9"])
def test_stable_mixed_workloads_raise_no_false_alarm(name):
    """Stable systems over 20 seeds each: no class flagged (a false alarm rate of a few in a thousand would
    show here about once in ten runs of the suite)."""
    system = {
        "het first-fit 0.3": bq.at_utilization(HET.replace(scheduling="first-fit"), 0.3),
        "het backfill 0.3": bq.at_utilization(HET.replace(scheduling="backfill"), 0.3),
        "het server-filling 0.3": bq.at_utilization(HET.replace(scheduling="server-filling"), 0.3),
        "hybrid first-fit": bq.at_utilization(S(servers=16, tasks=8, barrier_fraction=0.4, scheduling="first-fit"),
                                              0.5),
        "one-or-all fcfs": S(servers=32, workload="tests/data/workloads/one-or-all-mjqm.toml", arrival_rate=2.4),
        "M/M/4 0.9": bq.at_utilization(S(servers=4, tasks=1), 0.9),
    }[name]
    flagged = []
    for seed in range(20):
        out = simulate(system, jobs=20_000, replications=2, seed=seed, allow_unstable=True).summary()
        if out["stable"] is not True:
            flagged.append((seed, out["stability"]["reasons"]))
    assert not flagged


@pytest.mark.parametrize("discipline", ["fcfs", "first-fit"])
def test_queue_counts_equal_a_plain_count_over_kept_jobs(discipline):
    """The queue at each segment's first arrival (jobs that arrived before it and start after it, per class)
    and the jobs still waiting at the last arrival, counted by the streaming statistics, equal a plain count
    over the kept per-job records (fixed warm-up 0, so every segment is measured)."""
    system = starving(discipline, 0.4)
    res = simulate(system, jobs=30_000, replications=2, seed=5, warmup=0, keep_jobs=True, allow_unstable=True)
    for rep in res.replications:
        q = rep.stats.extra["queue"]
        a, st, k = rep.jobs["arrival"], rep.jobs["start"], rep.jobs["tasks"]
        cls = np.searchsorted(system.ks, k)                  # barrier jobs: the class index is the position of k
        groups = q["at"].shape[0]                            # (k, barrier) for both k, then the plain ones
        assert groups == 4 and len(q["times"]) == 100
        for j, t in enumerate(q["times"]):
            first = int(np.searchsorted(a, t))
            waiting = st[:first] > t
            assert q["at"][:, j].tolist() == np.bincount(cls[:first][waiting], minlength=groups).tolist()
        assert q["unstarted"].tolist() == np.bincount(cls[st > a[-1]], minlength=groups).tolist()
        assert q["arrived"].tolist() == np.bincount(cls, minlength=groups).tolist()
        assert q["at"].sum() > 0


def test_precision_is_never_met_for_an_unstable_system():
    """A precision target on an unstable system: the intervals of a mean that grows are no precision."""
    system = bq.at_utilization(HET.replace(scheduling="first-fit"), 0.45)
    out = simulate(system, jobs=5_000, replications=10, seed=3, precision=0.5, allow_unstable=True).summary()
    assert out["stable"] is False
    assert out["precision"]["met"] is False and "steady state" in out["precision"]["reason"]


def test_a_run_shorter_than_its_slowest_class_is_warned_about():
    """A class of 32-worker jobs of mean time 400 among 1-worker jobs of mean 1: 5,000 jobs at 40 per unit time
    last about 125 time units, a third of one such job; the summary says the run is too short."""
    classes = [{"share": 0.995, "tasks": 1, "task_dist": "exponential:rate=1"},
               {"share": 0.005, "tasks": 32, "shared": True, "task_dist": "exponential:rate=0.0025"}]
    system = S(servers=256, workload=classes, arrival_rate=40)
    out = simulate(system, jobs=5_000, replications=2, seed=1, allow_unstable=True).summary()
    if out["stable"] is not False:
        assert any("longest mean execution time" in w for w in out["warnings"])
    long = simulate(system.replace(workload=[{**classes[0]}, {**classes[1], "task_dist": "exponential:rate=1"}]),
                    jobs=20_000, replications=2, seed=1).summary()
    assert not any("longest mean execution time" in w for w in long["warnings"])
