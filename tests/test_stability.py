"""Table I: closed forms against the CTMC, order statistics and the paper's claims."""

import math

import numpy as np
import pytest

import barrier_queues as bq


def test_one_barrier_closed_form_against_ctmc_for_many_systems():
    for s in (4, 9, 16, 25):
        for k in range(1, s + 1):
            cf = bq.stability_limit(s, k, barriers=1)
            ctmc = bq.stability_limit(s, k, barriers=1, method="ctmc")
            assert cf.method == "closed-form" and ctmc.method == "ctmc"
            assert abs(cf.lambda_max - ctmc.lambda_max) < 1e-10 * cf.lambda_max


@pytest.mark.parametrize("s, k, l_", [(10, 10, 8), (12, 4, 2), (10, 4, 3), (20, 7, 7), (16, 16, 1)])
def test_two_barrier_closed_form_against_order_statistic_quadrature(s, k, l_):
    cf = bq.stability_limit(s, k, l_, barriers=2)
    quad_law = bq.as_task_distribution("erlang:shape=1,rate=1")  # Exp(1) without the closed form
    os_ = bq.stability_limit(s, k, l_, barriers=2, task_dist=quad_law)
    assert os_.method == "order-statistics"
    for field in ("lambda_max", "rho_max", "rho_useful", "task_throughput"):
        assert getattr(os_, field) == pytest.approx(getattr(cf, field), rel=1e-9)


def test_two_barrier_conventional_is_one_over_harmonic_when_k_divides_s():
    for k in (1, 2, 4, 8, 16):
        for s in (16, 32, 64):
            assert bq.stability_limit(s, k, barriers=2).rho_max == pytest.approx(1 / bq.harmonic(k))


def test_two_barrier_when_k_does_not_divide_s():
    # s = 10, k = 4: two jobs at a time, two workers always idle
    lim = bq.stability_limit(10, 4, barriers=2)
    assert lim.lambda_max == pytest.approx(2 / bq.harmonic(4))
    assert lim.rho_max == pytest.approx(2 * 4 / (10 * bq.harmonic(4)))


def test_two_barrier_skl_table_one_entries_when_k_divides_s():
    for k in (4, 10, 16):
        hk = bq.harmonic(k)
        for l_ in range(1, k + 1):
            d = hk - bq.harmonic(k - l_)
            lim = bq.stability_limit(2 * k, k, l_, barriers=2)
            assert lim.rho_max == pytest.approx(l_ / (k * d), rel=1e-13)
            assert lim.rho_useful == pytest.approx(l_ / (k * d) - (k - l_) / k, rel=1e-12, abs=1e-14)
            assert lim.task_throughput == pytest.approx(lim.rho_max, rel=1e-13)
    # task throughput reaches 1 at l = 1 (section II-E)
    assert bq.stability_limit(16, 8, 1, barriers=2).task_throughput == pytest.approx(1.0)


def test_claim_useful_utilization_beats_conventional_only_for_l_slightly_below_k():
    # MODEL.md section 3: k = 10, useful higher than conventional for l = 8, 9, lower from 7 down
    conventional = bq.stability_limit(10, 10, barriers=2).rho_max
    useful = {l_: bq.stability_limit(10, 10, l_, barriers=2).rho_useful for l_ in range(1, 10)}
    assert useful[9] > conventional and useful[8] > conventional
    assert all(useful[l_] < conventional for l_ in range(1, 8))


def test_one_barrier_limits():
    # equal to split-merge (1 / H_k) at k = s, tends to 1 when s >> k
    for k in (2, 5, 12):
        assert bq.stability_limit(k, k).rho_max == pytest.approx(1 / bq.harmonic(k))
    assert bq.stability_limit(100_000, 4).rho_max > 0.9999
    # 1-barrier is never worse than 2-barrier
    for s, k in [(16, 4), (16, 5), (32, 16), (20, 20)]:
        assert bq.stability_limit(s, k).rho_max >= bq.stability_limit(s, k, barriers=2).rho_max - 1e-15


def test_one_barrier_skl_utilizations_follow_from_throughput():
    lim = bq.stability_limit(16, 8, 6)
    assert lim.method == "ctmc" and lim.states == 37
    total, useful = bq.exp_server_time_per_job(8, 6)
    assert lim.rho_max == pytest.approx(lim.lambda_max * total / 16)
    assert lim.rho_useful == pytest.approx(lim.lambda_max * useful / 16)


def test_bimodal_tasks_with_redundancy_support_much_more_useful_load():
    # Fig. 3 right: with a bimodal law, a well-chosen l multiplies the useful load
    # (the paper reports about 3x; these are the book's default parameters)
    law = bq.HyperExponential.bimodal(0.98, 1.0, 0.001)
    conventional = bq.stability_limit(10, 10, barriers=2, task_dist=law).rho_useful
    best = max(bq.stability_limit(10, 10, l_, barriers=2, task_dist=law).rho_useful
               for l_ in range(1, 11))
    assert 2.8 * conventional < best < 3.3 * conventional


def test_deterministic_tasks_have_no_straggler_gain():
    law = bq.Deterministic(1.0)
    for l_ in (1, 5, 10):
        lim = bq.stability_limit(10, 10, l_, barriers=2, task_dist=law)
        assert lim.lambda_max == pytest.approx(1.0)
        assert lim.rho_max == pytest.approx(1.0)
        assert lim.rho_useful == pytest.approx(l_ / 10)


def test_table_one_has_all_four_systems():
    table = bq.table_one(16, 8, 6)
    assert list(table["system"]) == ["1-barrier", "1-barrier", "2-barrier", "2-barrier"]
    assert list(table["method"]) == ["closed-form", "ctmc", "closed-form", "closed-form"]
    assert table["rho_max"].between(0, 1).all()
    assert table.loc[1, "states"] == 37
    assert all(f.startswith("$") for f in table["rho_max formula"])


def test_stability_curve_skips_impossible_combinations():
    curve = bq.stability_curve([4, 8], [1, 4, 8], barriers=[1, 2])
    assert len(curve) == 2 * (2 + 3)
    assert math.isclose(curve.query("servers == 8 and tasks == 8 and barriers == 1")["rho_max"].item(),
                        1 / bq.harmonic(8))
    assert np.isfinite(curve["lambda_max"]).all()


def test_mixed_fifo_workloads_get_a_saturated_limit_that_guards_and_reports():
    """Several k (or barrier and plain jobs, or job classes) under FIFO: no closed form, so a short saturated
    run estimates the limit; a clearly stable load is reported stable beside it, a load beyond it refused,
    and a saturated run of one replication of such a workload prints no warning."""
    import json
    import warnings
    from pathlib import Path

    from barrier_queues.stability import estimated_limit

    het = bq.BarrierSystem(servers=16, tasks_pmf={2: 0.8, 16: 0.2})
    value, method, (lo, hi) = estimated_limit(het)
    assert lo < value < hi and "saturated" in method
    fifo = bq.saturated_throughput(het, jobs=100_000, replications=8, seed=3)
    assert lo - (hi - lo) <= fifo["lambda_max"] <= hi + (hi - lo)      # a longer run agrees
    s = bq.simulate(het.replace(arrival_rate=0.5 * value), jobs=20_000, replications=2, seed=1).summary()
    assert s["stable"] is True and s["stability"]["lambda_max"] == value
    with pytest.raises(bq.ParameterError, match="arrival_rate must be below the stability limit"):
        bq.simulate(het.replace(arrival_rate=1.3 * hi), jobs=2_000)
    assert estimated_limit(het.replace(scheduling="first-fit")) is None       # FIFO's limit is not first-fit's
    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "workloads" / "borg-a.json").read_text())
    borg = bq.BarrierSystem(servers=doc["servers"], barriers=2, workload=doc["classes"])
    from barrier_queues.load import mean_work

    ceiling = doc["servers"] / mean_work(borg)[0]                 # no estimate passes work conservation
    value, method, (lo, hi) = estimated_limit(borg)
    assert value <= ceiling and hi <= ceiling
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = bq.saturated_throughput(borg, jobs=20_000, replications=1, seed=1)
    assert est["lambda_max"] > 0
    with pytest.raises(bq.ParameterError, match="jobs must be larger for a saturated run of this system"):
        bq.saturated_throughput(borg, jobs=2_000, replications=1, seed=1)       # all start at the first instant
