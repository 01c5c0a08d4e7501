"""Order statistics: Renyi closed forms against independent numerical integration."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import barrier_queues as bq


def _density_integral(g, j, n, rate, theta=0.0):
    """E[g(X) exp(theta X)] for X = X_(j:n), from the order-statistic density.

    Independent of Renyi: density n!/((j-1)!(n-j)!) F^(j-1) (1-F)^(n-j) f, with
    (1-F)^(n-j) f e^(theta t) = rate e^(-((n-j+1) rate - theta) t) kept in one
    exponent so that large t does not overflow.
    """
    c = math.factorial(n) / (math.factorial(j - 1) * math.factorial(n - j))

    def f(t):
        F = -math.expm1(-rate * t)
        return g(t) * c * F ** (j - 1) * rate * math.exp(-((n - j + 1) * rate - theta) * t)

    return integrate.quad(f, 0, np.inf, epsabs=1e-14, epsrel=1e-12, limit=400)[0]


def test_harmonic_numbers():
    assert bq.harmonic(0) == 0.0
    assert bq.harmonic(1) == 1.0
    assert math.isclose(bq.harmonic(10), 7381 / 2520, rel_tol=1e-15)
    n = np.arange(0, 200)
    np.testing.assert_allclose(bq.harmonic(n)[1:], special.digamma(n[1:] + 1) + np.euler_gamma,
                               rtol=1e-14)
    assert bq.harmonic(np.array([], dtype=int)).size == 0


@pytest.mark.parametrize("j, n, rate", [(1, 1, 1.0), (3, 5, 2.0), (5, 5, 0.5), (8, 16, 1.0),
                                        (16, 16, 3.0), (1, 30, 1.0)])
def test_exponential_order_statistic_moments_and_mgf(j, n, rate):
    mean = _density_integral(lambda t: t, j, n, rate)
    second = _density_integral(lambda t: t * t, j, n, rate)
    assert bq.exp_order_stat_mean(j, n, rate) == pytest.approx(mean, rel=1e-10)
    assert bq.exp_order_stat_var(j, n, rate) == pytest.approx(second - mean**2, rel=1e-8)
    theta = 0.7 * (n - j + 1) * rate
    mgf = _density_integral(lambda t: 1.0, j, n, rate, theta)
    assert bq.exp_order_stat_mgf(theta, j, n, rate) == pytest.approx(mgf, rel=1e-9)


def test_mgf_domain_boundary_is_infinite_and_vectorised():
    thetas = np.array([-1.0, 0.0, 2.9, 3.0, 5.0])
    m = bq.exp_order_stat_mgf(thetas, 2, 4, 1.0)  # theta < (4 - 2 + 1) = 3
    assert m[1] == 1.0
    assert np.isfinite(m[:3]).all() and np.isinf(m[3:]).all()


@pytest.mark.parametrize("j, n", [(1, 1), (1, 10), (7, 10), (10, 10), (12, 20)])
def test_quadrature_matches_exponential_closed_form(j, n):
    law = bq.Exponential(1.7)
    assert bq.order_stat_mean(law, j, n, method="quad") == pytest.approx(
        bq.exp_order_stat_mean(j, n, 1.7), rel=1e-9)


def test_quadrature_matches_scipy_frozen_law_and_hyperexponential_mixture():
    # an exponential given as a scipy law goes through the adapter and quadrature
    assert bq.order_stat_mean(stats.expon(scale=0.5), 3, 6) == pytest.approx(
        bq.exp_order_stat_mean(3, 6, 2.0), rel=1e-9)
    # max of two iid hyperexponentials: E = E[X] * 2 - E[min]; min has sf sf(t)^2
    law = bq.HyperExponential.bimodal(0.3, 4.0, 0.5)
    e_min = integrate.quad(lambda t: float(law.sf(t)) ** 2, 0, np.inf)[0]
    assert bq.order_stat_mean(law, 2, 2) == pytest.approx(2 * law.mean() - e_min, rel=1e-9)
    assert bq.order_stat_mean(law, 1, 2) == pytest.approx(e_min, rel=1e-9)


@pytest.mark.parametrize("p,rate1,rate2", [(0.9, 2.0, 0.2), (0.5, 1.0, 0.2), (0.99, 1.0, 0.001), (0.3, 2.0, 5.0)])
@pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
def test_two_phase_hyperexponential_order_statistics_are_exact(p, rate1, rate2, n):
    """The recursion over finishes (no integral) against quadrature of P[Bin(n, F(t)) < j], an independent
    computation, and the identity sum_j E[X_(j:n)] = n E[X]."""
    from barrier_queues.order_stats import hyperexp2_order_stat_mean

    law = bq.HyperExponential.bimodal(p, rate1, rate2)
    exact = [hyperexp2_order_stat_mean(j, n, p, rate1, rate2) for j in range(1, n + 1)]
    for j in sorted({1, max(1, n // 2), n}):
        assert exact[j - 1] == pytest.approx(bq.order_stat_mean(law, j, n, method="quad"), rel=1e-9)
        assert bq.order_stat_mean(law, j, n) == exact[j - 1]          # the law's closed form is used
    assert sum(exact) == pytest.approx(n * law.mean(), rel=1e-12)
    assert all(a < b for a, b in itertools.pairwise(exact))


def test_two_phase_hyperexponential_degenerate_and_large_cases():
    from barrier_queues.order_stats import HYPEREXP_EXACT_MAX_N, hyperexp2_order_stat_mean

    assert hyperexp2_order_stat_mean(3, 7, 1.0, 2.0, 9.0) == bq.exp_order_stat_mean(3, 7, 2.0)
    assert hyperexp2_order_stat_mean(3, 7, 0.0, 2.0, 9.0) == bq.exp_order_stat_mean(3, 7, 9.0)
    assert hyperexp2_order_stat_mean(3, 7, 0.4, 2.0, 2.0) == bq.exp_order_stat_mean(3, 7, 2.0)
    law = bq.HyperExponential.bimodal(0.95, 1.0, 0.01)
    assert law.order_stat_mean(200, 200) == pytest.approx(bq.order_stat_mean(law, 200, 200, method="quad"),
                                                          rel=1e-10)
    assert law.order_stat_mean(2, HYPEREXP_EXACT_MAX_N + 1) is None       # beyond: quadrature
    assert bq.HyperExponential([0.2, 0.3, 0.5], [1.0, 2.0, 3.0]).order_stat_mean(2, 4) is None
    with pytest.raises(bq.ParameterError, match="p"):
        hyperexp2_order_stat_mean(1, 2, 1.5, 1.0, 2.0)


def test_deterministic_and_empirical_order_statistics():
    assert bq.order_stat_mean(bq.Deterministic(2.5), 3, 7) == 2.5
    assert bq.order_stat_mean(bq.Deterministic(2.5), 3, 7, method="quad") == pytest.approx(2.5, rel=1e-9)
    # empirical law on {1, 3}: max of two draws is 3 unless both are 1 (prob 1/4)
    law = bq.Empirical([1.0, 3.0])
    assert bq.order_stat_mean(law, 2, 2) == pytest.approx(0.25 * 1 + 0.75 * 3)
    assert bq.order_stat_mean(law, 1, 2) == pytest.approx(0.75 * 1 + 0.25 * 3)
    assert bq.order_stat_mean(law, 2, 2, method="quad") == pytest.approx(2.5, rel=1e-8)


@pytest.mark.parametrize("k, l_", [(1, 1), (5, 5), (10, 8), (10, 3), (16, 1)])
def test_server_time_per_job_exponential(k, l_):
    # paper eq. 13: E[total] = l / mu, for any k, from the general formula by quadrature
    law = bq.Exponential(2.0)
    total, useful = bq.server_time_per_job(law, k, l_)
    assert total == pytest.approx(l_ / 2.0, rel=1e-12)
    total_cf, useful_cf = bq.exp_server_time_per_job(k, l_, 2.0)
    assert total_cf == pytest.approx(total, rel=1e-12)
    assert useful_cf == pytest.approx(useful, rel=1e-12)
    # useful = total minus the (k - l) killed tasks' time X_(l:k)
    assert useful == pytest.approx(total - (k - l_) * bq.exp_order_stat_mean(l_, k, 2.0), rel=1e-12)


def test_server_time_per_job_by_monte_carlo_for_erlang_tasks():
    law = bq.Erlang(3, 3.0)
    k, l_ = 6, 4
    total, useful = bq.server_time_per_job(law, k, l_)
    x = np.sort(law.rvs((200_000, k), random_state=12345), axis=1)
    sample_total = x[:, :l_].sum(axis=1) + (k - l_) * x[:, l_ - 1]
    sample_useful = x[:, :l_].sum(axis=1)
    for est, exact in ((sample_total, total), (sample_useful, useful)):
        half = stats.norm.ppf(0.9995) * est.std(ddof=1) / math.sqrt(est.size)
        assert abs(est.mean() - exact) < half
