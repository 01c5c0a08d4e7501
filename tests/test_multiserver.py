"""The FIFO one-or-all multiserver-job queue: exact limit and CTMC against closed forms and the simulators."""

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues.inputs import draw_jobs
from barrier_queues.multiserver import one_or_all_fifo, one_or_all_limit
from barrier_queues.order_stats import harmonic
from barrier_queues.schedulers import waitlist
from barrier_queues.statistics import batch_means_interval
from barrier_queues.workload import read_workload
from tests.test_workload import MJQM


@pytest.mark.parametrize("lam", [0.3, 0.7, 0.95])
def test_one_worker_is_the_m_m_1_queue(lam):
    """s = 1: both kinds need the one worker, so the chain is M/M/1: W = lambda / (mu (mu - lambda))."""
    r = one_or_all_fifo(1, 0.3, lam, mu=1.0)
    assert r.mean_waiting == pytest.approx(lam / (1.0 - lam), rel=1e-8)
    assert r.mean_waiting_small == pytest.approx(r.mean_waiting_big, rel=1e-8)
    assert one_or_all_limit(1, 0.3) == pytest.approx(1.0, rel=1e-12)


def test_limits_the_published_value_and_the_independent_task_form():
    assert one_or_all_limit(32, 0.1) == pytest.approx(3.0261, abs=5e-5)         # Olliaro et al. 2023
    s, beta = 8, 0.25
    assert one_or_all_limit(s, beta, shared=False) == pytest.approx(s / (1 - beta + beta * s * harmonic(s)))
    assert one_or_all_limit(32, 0.1, mu=2.0) == pytest.approx(2 * one_or_all_limit(32, 0.1))


def test_utilization_is_offered_work_and_waiting_grows_towards_the_limit():
    s, beta = 8, 0.2
    limit = one_or_all_limit(s, beta)
    rates = [0.3 * limit, 0.6 * limit, 0.9 * limit]
    results = [one_or_all_fifo(s, beta, lam) for lam in rates]
    for lam, r in zip(rates, results, strict=True):
        assert r.utilization == pytest.approx(lam * (1 - beta + beta * s) / s, rel=1e-9)
        assert r.truncated_mass < 1e-10
    assert results[0].mean_waiting < results[1].mean_waiting < results[2].mean_waiting


def test_refusals_at_the_limit_and_beyond_the_state_guard():
    with pytest.raises(bq.ParameterError, match="arrival_rate must be below the FIFO stability limit 3.02609"):
        one_or_all_fifo(32, 0.1, 3.1)
    with pytest.raises(bq.ParameterError, match="max_queue must keep the chain within"):
        one_or_all_fifo(32, 0.1, 2.4, max_queue=100_000)
    with pytest.raises(bq.ParameterError, match="beta must be a share with 0 < beta < 1"):
        one_or_all_fifo(32, 1.0, 2.4)


@pytest.mark.parametrize("scheduler", ["central", "waitlist"])
def test_the_chain_against_the_simulators_on_mjqms_one_or_all_input(scheduler):
    """MJQM's oneOrAll input at 2.4 jobs/s: the exact mean waiting lies in the simulation's 95 % interval, for
    all jobs and per kind, with the paper's FIFO kernel and with the waiting list's fcfs."""
    exact = one_or_all_fifo(32, 0.1, 2.4)
    assert exact.mean_waiting == pytest.approx(4.3301, abs=1e-4)
    system = bq.BarrierSystem(servers=32, workload=read_workload(MJQM)["classes"], arrival_rate=2.4)
    if scheduler == "waitlist":           # the waiting list's fcfs: one long run, batch means
        inputs = draw_jobs(system, 400_000, np.random.default_rng(11))
        out = waitlist.run_inputs(system, inputs, discipline="fcfs")
        ci = batch_means_interval((out["start"] - inputs["arrival"])[20_000:], batches=20)
        assert ci["interval"][0] <= exact.mean_waiting <= ci["interval"][1], ci
        return
    summary = bq.simulate(system, jobs=200_000, replications=8, seed=6).summary()
    lo, hi = summary["ci"]["waiting"]
    assert lo <= exact.mean_waiting <= hi, (lo, exact.mean_waiting, hi)
    for c in summary["classes"]:
        value = exact.mean_waiting_small if c["tasks"] == 1 else exact.mean_waiting_big
        lo, hi = c["ci"]["waiting"]
        assert lo <= value <= hi, (c["tasks"], lo, value, hi)
