"""Network-calculus bounds: closed-form checks, stability edge, and bound >= simulation."""

import math

import numpy as np
import pytest
from test_simulate import _erlang_c_wait, _pk_wait

import barrier_queues as bq
from barrier_queues.bounds import BoundProblem, bound, spacing_model, two_barrier_mean_waiting
from barrier_queues.planning import plan


def cfg(**kw):
    return bq.BarrierSystem(**kw)


def test_mm1_decay_rate_is_mu_minus_lambda():
    # s = 1, k = 1: the bound's queue is the M/M/1 queue itself; m(theta) = 1 at mu - lambda
    for lam, mu in [(0.3, 1.0), (0.9, 2.0), (2.0, 5.0)]:
        p = BoundProblem(cfg(servers=1, tasks=1, arrival_rate=lam, task_rate=mu))
        assert p.theta_star == pytest.approx(mu - lam, rel=1e-12)
        # the exact M/M/1 tail rho e^{-(mu-lambda) x} lies below the GI|GI bound e^{-(mu-lambda) x}
        b = p.waiting(1e-3)
        assert b.quantile == pytest.approx(math.log(1e3) / (mu - lam), rel=1e-12)


def test_barrier_and_nonbarrier_spacings_agree_for_k1_and_telescoping_identity():
    a = spacing_model(cfg(servers=8, tasks=1, arrival_rate=1.0, barrier_fraction=1.0))
    b = spacing_model(cfg(servers=8, tasks=1, arrival_rate=1.0, barrier_fraction=0.0))
    thetas = np.linspace(0, 7.9, 17)
    np.testing.assert_allclose(a.mgf(thetas), b.mgf(thetas), rtol=1e-13)
    # M_B(mu) = prod_{i<k} (s-i)/(s-i-1) = s/(s-k): so theta* = lambda when lambda/(lambda+mu)... e.g. s=16,k=8
    m = spacing_model(cfg(servers=16, tasks=8, arrival_rate=1.0))
    assert float(m.mgf(1.0)) == pytest.approx(2.0, rel=1e-13)


@pytest.mark.parametrize("kwargs", [dict(servers=16, tasks=8), dict(servers=16, tasks=8, barrier_fraction=0.3),
                                    dict(servers=12, tasks_pmf={2: 0.25, 9: 0.75})])
def test_spacing_mean_is_the_mgf_derivative_at_zero(kwargs):
    m = spacing_model(cfg(arrival_rate=1.0, task_rate=1.3, **kwargs))
    h = 1e-6
    derivative = (float(m.mgf(h)) - float(m.mgf(-h))) / (2 * h)
    assert derivative == pytest.approx(m.mean(), rel=1e-8)
    assert np.isinf(m.log_mgf(m.theta_sup)) and np.isfinite(m.log_mgf(0.999 * m.theta_sup))


def test_hybrid_and_heterogeneous_mgfs_are_mixtures():
    s, mu, p = 10, 1.0, 0.4
    hybrid = spacing_model(cfg(servers=s, tasks=4, barrier_fraction=p, arrival_rate=1.0))
    theta = 2.5
    barrier = bq.exp_order_stat_mgf(theta, 4, s, mu)
    nonbarrier = (s * mu / (s * mu - theta)) ** 4
    assert float(hybrid.mgf(theta)) == pytest.approx(p * barrier + (1 - p) * nonbarrier, rel=1e-13)
    het = spacing_model(cfg(servers=s, tasks_pmf={2: 0.3, 6: 0.7}, arrival_rate=1.0))
    expected = 0.3 * bq.exp_order_stat_mgf(theta, 2, s) + 0.7 * bq.exp_order_stat_mgf(theta, 6, s)
    assert float(het.mgf(theta)) == pytest.approx(expected, rel=1e-13)
    assert het.theta_sup == s - 6 + 1


def test_theta_feasibility_exactly_at_the_stability_limit():
    spacing = spacing_model(cfg(servers=16, tasks=8, arrival_rate=1.0)).mean()
    with pytest.raises(bq.ParameterError, match="arrival_rate must be below 1 / E\\[spacing\\]"):
        bound(cfg(servers=16, tasks=8, arrival_rate=1 / spacing), 1e-3)
    near = BoundProblem(cfg(servers=16, tasks=8, arrival_rate=(1 - 1e-6) / spacing))
    assert 0 < near.theta_star < 1e-4
    assert abs(float(near.log_m(near.theta_star))) < 1e-12


def test_model_md_tightness_example():
    # Appendix A, section 5: s = 16, k = 8, rho = 0.5, eps = 1e-3: GI|GI bound about 6.91, simulation 5.97
    b = bound(cfg(servers=16, tasks=8, arrival_rate=1.0), 1e-3)
    assert b.waiting_quantile == pytest.approx(6.9078, abs=1e-3)
    assert b.theta == pytest.approx(1.0, rel=1e-12)


def test_gg_bound_is_never_tighter_than_its_own_optimum_and_forms_differ():
    c = cfg(servers=16, tasks=4, arrival_rate=3.0)
    gg, gigi = bound(c, 1e-2, "gg"), bound(c, 1e-2, "gigi")
    p = BoundProblem(c)
    for theta in np.linspace(0.05, 0.95, 10) * p.theta_star:
        lm = float(p.log_m(theta))
        x = (lm - math.log(-math.expm1(lm)) + math.log(100)) / theta
        assert gg.waiting_quantile <= x + 1e-9
    assert gg.waiting_quantile > gigi.waiting_quantile


def test_sojourn_and_service_quantiles():
    c = cfg(servers=16, tasks=8, arrival_rate=1.0)
    b = bound(c, 1e-2)
    # service: (1 - e^{-q})^8 = 0.99 exactly
    assert (1 - math.exp(-b.service_quantile)) ** 8 == pytest.approx(0.99, rel=1e-10)
    assert b.sojourn_quantile >= max(b.waiting_quantile, b.service_quantile)
    assert b.sojourn_quantile <= b.waiting_quantile + b.service_quantile + 1e-9
    # large k stays finite and ordered (no binomial cancellation)
    big = bound(cfg(servers=256, tasks=128, arrival_rate=0.05), 1e-3)
    assert np.isfinite([big.waiting_quantile, big.sojourn_quantile]).all()
    assert big.sojourn_quantile >= big.service_quantile


@pytest.mark.slow
def test_simulated_quantiles_never_exceed_the_bounds_at_fifty_random_points_up_to_095_of_the_limit():
    """50 random stable points (barrier, hybrid, heterogeneous k), loads up to 0.95 of the stability limit,
    eps = 1e-2 and 1e-3, both forms: no simulated quantile's 95 % interval lies above a bound (points whose
    interval is not below a bound are simulated again with 8x and 50x the jobs; a real violation persists).
    Where the interval still contains the bound ("tight"), the bound must be the GI|GI one within 3 % of the
    estimate: the G|G form is never that tight. The margins are reported by the bounds chapter."""
    from barrier_queues.planning import random_point_check

    table = random_point_check(50, seed=20251214, jobs=100_000, replications=10, max_load=0.95)
    assert len(table.point.unique()) == 50 and table.load.max() > 0.9
    assert set(table.verdict) <= {"below", "tight", "violation"}
    assert (table.verdict != "violation").all(), table[table.violation]
    below = table[table.verdict == "below"]
    assert (below.margin >= 1.0).all() and len(below) >= 0.95 * len(table)
    tight = table[table.verdict == "tight"]
    assert (tight.form == "gigi").all() and ((tight.margin - 1).abs() < 0.03).all(), tight
    assert table.refined.sum() <= 0.4 * len(table)    # most points are decided at the first sample size


def test_two_barrier_mean_waiting_exact_cases():
    # c = 1: Pollaczek-Khinchine with S = X_(l:k)
    out = two_barrier_mean_waiting(8, 8, 0.2, needed=6)
    mean_s, var_s = bq.exp_order_stat_mean(6, 8), bq.exp_order_stat_var(6, 8)
    assert out["mean_waiting"] == pytest.approx(_pk_wait(0.2, mean_s, var_s), rel=1e-12)
    assert out["method"].startswith("pollaczek")
    # l = 1: service X_(1:k) ~ Exp(k mu) and Allen-Cunneen is exact: M/M/c
    out = two_barrier_mean_waiting(12, 4, 6.0, needed=1)
    assert out["mean_waiting"] == pytest.approx(_erlang_c_wait(3, 6.0, 4.0), rel=1e-12)
    with pytest.raises(bq.ParameterError, match="arrival_rate must be below c / E\\[S\\]"):
        two_barrier_mean_waiting(16, 8, 0.8)


def test_planner_finds_the_u_shape_optimum():
    p = plan(16, 0.5, 1e-2)
    curve = p["curve"]
    best = p["recommended"]["tasks"]
    assert 1 < best < curve.tasks.max()       # interior optimum: the U-shape
    assert curve.sojourn_bound.iloc[0] > curve.sojourn_bound.min() < curve.sojourn_bound.iloc[-1]
    two = plan(16, 0.3, barriers=2)
    assert (two["curve"].needed == two["curve"].tasks).all()
    assert two["recommended"]["tasks"] in (1, 2, 4, 8, 16)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(servers=8, tasks=4, barriers=2, arrival_rate=0.5), "barriers must be 1 for the network-calculus"),
    (dict(servers=8, tasks=4, needed=3, arrival_rate=0.5), "needed must equal tasks for the bounds"),
    (dict(servers=8, tasks=4, arrival_rate=0.5, task_dist="erlang:shape=2,rate=2"), "task_dist must be exponential"),
    (dict(servers=8, tasks=4, arrival_rate=0.5, overhead="paper"), "overhead must be None for the bounds"),
    (dict(servers=8, tasks=4, arrival_rate=10.0), "arrival_rate must be below 1 / E[spacing]"),
])
def test_bounds_refuse_what_they_do_not_cover(kwargs, fragment):
    with pytest.raises(bq.ParameterError) as info:
        bound(cfg(**kwargs), 1e-2)
    assert fragment in str(info.value)


def test_bad_epsilon_and_form():
    c = cfg(servers=8, tasks=4, arrival_rate=1.0)
    for eps in (0, 1, -0.1, 1.5):
        with pytest.raises(bq.ParameterError, match="epsilon must be a number with 0 < epsilon < 1"):
            bound(c, eps)
    with pytest.raises(bq.ParameterError, match="form must be one of 'gigi', 'gg'"):
        bound(c, 0.01, "kingman")
    with pytest.raises(bq.ParameterError, match="utilization must be a number with 0 < utilization < 1"):
        plan(16, 1.2)


def test_bounds_versus_simulation_table_and_epsilon_check():
    from barrier_queues.planning import bounds_versus_simulation

    configs = [cfg(servers=8, tasks=4, arrival_rate=1.0, barrier_fraction=p) for p in (0.0, 1.0)]
    table = bounds_versus_simulation(configs, 0.01, jobs=20_000, replications=2, seed=1)
    assert list(table.service_bound) == [table.service_bound[0]] * 2
    assert (table.waiting_sim <= table.waiting_bound_gigi).all()
    assert (table.tightness >= 1).all()
    with pytest.raises(bq.ParameterError, match="epsilon must be one of 0.5, 0.1, 0.01, 0.001"):
        bounds_versus_simulation(configs, 0.02)


def test_general_renewal_arrivals_through_a_user_supplied_mgf():
    from barrier_queues.bounds import poisson_arrival_log_mgf

    c = cfg(servers=16, tasks=8, arrival_rate=1.0)
    builtin = bound(c, 1e-3)
    supplied = bound(c, 1e-3, arrival_log_mgf=poisson_arrival_log_mgf(1.0))
    assert supplied == builtin
    # Erlang-2 interarrivals with mean 1: E[e^{-theta A}] = (2 / (2 + theta))^2, less variable than
    # Poisson, so the decay rate is larger and the bound smaller; periodic arrivals are smaller still
    erlang = bound(c, 1e-3, arrival_log_mgf=lambda t: 2 * np.log(2 / (2 + np.asarray(t))))
    periodic = bound(cfg(servers=16, tasks=8, arrival_rate=1.0, arrival="deterministic"), 1e-3)
    assert periodic.waiting_quantile < erlang.waiting_quantile < builtin.waiting_quantile
    # and the bound holds for periodic arrivals in simulation
    res = bq.simulate(cfg(servers=16, tasks=8, arrival_rate=1.0, arrival="deterministic"), jobs=100_000,
                      replications=8, seed=5).summary()
    assert res["quantile_ci"]["waiting"][0.999][1] <= periodic.waiting_quantile


@pytest.mark.parametrize("servers, rho", [(1, 0.5), (1, 0.9), (1, 0.99), (1, 0.999), (4, 0.5), (4, 0.9),
                                          (4, 0.99), (4, 0.999)])
def test_bounds_lie_above_exact_m_m_c_quantiles_up_to_the_stability_edge(servers, rho):
    """k = 1 barrier jobs on s servers are the M/M/s queue: P[W > t] = C e^{-(s mu - lambda) t} (Erlang C) and
    T = W + S with S ~ Exp(1) independent. Each bound must lie above the exact quantile, and the sojourn bound
    above the waiting bound, up to rho = 0.999 (the sojourn integral once missed the mass there and fell
    below both)."""
    from scipy.integrate import quad
    from scipy.optimize import brentq

    from barrier_queues.bounds import erlang_c

    lam, eps = rho * servers, 0.01
    b = bound(cfg(servers=servers, tasks=1, arrival_rate=lam), eps)
    c, d = erlang_c(servers, lam), servers - lam
    wait_exact = max(math.log(c / eps) / d, 0.0)

    def sojourn_sf(x):
        tail = quad(lambda u: c * math.exp(-d * (x - u)) * math.exp(-u), 0.0, x, limit=200,
                    points=[min(x, 50.0)])[0]
        return math.exp(-x) + tail

    soj_exact = brentq(lambda x: sojourn_sf(x) - eps, 1e-9, 10 * (wait_exact + 10))
    assert b.waiting_quantile >= wait_exact * (1 - 1e-9)
    assert b.sojourn_quantile >= soj_exact * (1 - 1e-9)
    assert b.sojourn_quantile >= b.waiting_quantile


def test_a_subnormal_epsilon_gives_finite_quantiles():
    """1 / 1e-310 overflows to inf; the quantile is -log(eps) / theta: finite, and the waiting bound below the
    sojourn bound (it was inf above a finite sojourn bound)."""
    for form in ("gigi", "gg"):
        out = bound(bq.BarrierSystem(servers=16, tasks=8, arrival_rate=1.0), 1e-310, form=form)
        assert math.isfinite(out.waiting_quantile) and 0 < out.waiting_quantile <= out.sojourn_quantile < math.inf
