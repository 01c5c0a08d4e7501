"""Phased barrier jobs with barrier() (Appendix B, section 3): the service law and the planner."""

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues.phases import phase_ends, phase_law, plan_phases, system_phase_law
from barrier_queues.reference import service
from barrier_queues.saturated import saturated_throughput

S = bq.BarrierSystem


def test_vectorised_phase_ends_equal_the_reference_service_rule():
    rng = np.random.default_rng(4)
    for sync in ("ideal", "spark"):
        x = rng.exponential(0.7, size=(500, 3, 4))          # (jobs, phases, tasks)
        ends = phase_ends(x, sync, poll=0.5)
        for j in range(500):
            _, _, _, ref = service(list(x[j].ravel()), 4, phases=3, sync=sync, poll=0.5)
            np.testing.assert_allclose(ends[j], ref, rtol=1e-12)


def test_ideal_law_is_exact_order_statistics():
    law = phase_law(bq.Exponential(2.0), 5, 4, "ideal")
    top = bq.exp_order_stat_mean(5, 5, 2.0)
    assert law.mean_departure == pytest.approx(4 * top)
    assert law.mean_work == pytest.approx(5 * 3 * top + 5 * 0.5)
    assert law.mean_useful == pytest.approx(5 * 4 * 0.5)


def test_spark_barrier_adds_less_than_a_poll_per_barrier():
    """Only the last task to arrive waits a full poll; the others resume at their next poll after it, so the
    next phase's last end moves by less than a poll (about 0.7 s for Exp(1) phases, k = 4)."""
    ideal = phase_law(bq.Exponential(1.0), 4, 5, "ideal")
    spark = phase_law(bq.Exponential(1.0), 4, 5, "spark", poll=1.0, samples=50_000)
    extra = (spark.mean_departure - ideal.mean_departure) / 4
    assert 0.5 < extra < 1.0
    assert spark.departure_se < 0.02


@pytest.mark.slow
@pytest.mark.parametrize("sync", ["ideal", "spark"])
def test_two_barrier_phased_limit_matches_saturated_simulation(sync):
    system = S(servers=12, tasks=4, barriers=2, phases=3, sync=sync)
    lim = bq.stability_limit(system)
    est = saturated_throughput(system, jobs=60_000, replications=10, seed=5, level=0.999)
    lo, hi = est["lambda_max_ci"]
    if lim.lambda_max_ci is None:
        assert lo <= lim.lambda_max <= hi
    else:
        assert lim.lambda_max_ci[0] <= hi and lo <= lim.lambda_max_ci[1]
    law = system_phase_law(system)
    assert est["rho_useful"] == pytest.approx(lim.lambda_max * law.mean_useful / 12, rel=0.02)


def test_planner_finds_where_the_sync_cost_dominates_for_exponential_tasks():
    # a task's work Exp(1) split into m phases: the ideal job time stays H_k; Spark adds about one poll per
    # barrier, so the sync share reaches one half near m - 1 = H_k / P
    plan = plan_phases(4, None, sync_poll=1.0, max_share=0.5, max_phases=8, samples=20_000)
    curve = plan["curve"]
    np.testing.assert_allclose(curve.mean_job_ideal, bq.harmonic(4), rtol=1e-9)
    assert (np.diff(curve.sync_share) > 0).all()
    assert 1 <= plan["recommended"]["phases"] <= 4
    assert curve.loc[curve.phases == plan["recommended"]["phases"], "sync_share"].item() <= 0.5
    nxt = curve[curve.phases == plan["recommended"]["phases"] + 1]
    assert nxt.empty or nxt.sync_share.item() > 0.5


def test_planner_bad_input():
    with pytest.raises(bq.ParameterError, match="max_share must be a number with 0 < max_share < 1"):
        plan_phases(4, max_share=1.5)
    with pytest.raises(bq.ParameterError, match="tasks x max_phases x samples must be at most"):
        plan_phases(10_000, max_phases=1000, samples=10**6)
