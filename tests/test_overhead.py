"""The blocking-overhead model min(U(0,R), Exp(lambda)): formulas, KS test, fit."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from barrier_queues import ParameterError
from barrier_queues.overhead import OverheadModel, fit_overhead, ks_test


@pytest.mark.parametrize("revive, rate", [(1.0, 0.5), (1.0, 2.0), (0.25, 1.15)])
def test_pdf_cdf_mean_are_consistent(revive, rate):
    m = OverheadModel(revive, rate)
    assert integrate.quad(m.pdf, 0, revive)[0] == pytest.approx(1.0, rel=1e-10)
    assert integrate.quad(lambda t: t * m.pdf(t), 0, revive)[0] == pytest.approx(m.mean(), rel=1e-10)
    for t in (0.1 * revive, 0.5 * revive, 0.9 * revive):
        assert integrate.quad(m.pdf, 0, t)[0] == pytest.approx(float(m.cdf(t)), rel=1e-10)
    assert float(m.sf(revive)) == 0.0 and float(m.sf(0)) == 1.0


def test_samples_follow_the_model_and_plain_uniform_is_rejected():
    m = OverheadModel(1.0, 0.9)
    x = m.rvs(5000, random_state=3)
    assert ks_test(x, m)["ks_pvalue"] > 0.01
    assert stats.kstest(x, stats.uniform(0, 1).cdf).pvalue < 1e-6
    half = 3.3 * x.std(ddof=1) / math.sqrt(x.size)
    assert abs(x.mean() - m.mean()) < half


def test_maximum_likelihood_recovers_the_parameters():
    true = OverheadModel(1.0, 1.2)
    x = true.rvs(20_000, random_state=11)
    fit = fit_overhead(x)
    # R's MLE sits at the sample maximum, within about R / n of the truth
    assert x.max() <= fit.revive < x.max() + 0.01
    # lambda: within 4 standard errors from the observed information
    h = 1e-4
    def nll(lam):
        return -np.sum(np.log(OverheadModel(fit.revive, lam).pdf(x)))
    info = (nll(fit.rate + h) - 2 * nll(fit.rate) + nll(fit.rate - h)) / h**2
    assert abs(fit.rate - true.rate) < 4 / math.sqrt(info)


def test_bad_inputs():
    with pytest.raises(ParameterError, match="revive must be a finite number > 0"):
        OverheadModel(0, 1)
    with pytest.raises(ParameterError, match="rate must be a finite number > 0"):
        OverheadModel(1, -1)
    with pytest.raises(ParameterError, match="at least 2 overhead measurements"):
        fit_overhead([0.3])
    with pytest.raises(ParameterError, match="finite overheads >= 0"):
        ks_test([0.1, -0.2], OverheadModel(1, 1))


@pytest.mark.parametrize("x", [1e-300, 1e-12, 1e-6, 1e-3, 0.00999, 0.01, 0.5, 5.0, 700.0])
def test_mean_is_accurate_for_every_product_of_rate_and_revive(x):
    """The mean ``R g(lambda R)`` against direct integration of ``P[O > t]`` (relative 1e-12)."""
    m = OverheadModel(1.0, x)
    exact = integrate.quad(lambda t: (1 - t) * math.exp(-x * t), 0, 1, epsabs=0, epsrel=1e-13)[0]
    assert math.isfinite(m.mean()) and m.mean() == pytest.approx(exact, rel=1e-12)


def test_the_overhead_draws_are_min_of_a_uniform_and_an_exponential_bit_for_bit():
    """The paper's overhead min(U(0, R), Exp(lambda)): n uniforms, then n exponentials, from one stream."""
    model = OverheadModel(0.7, 2.5)
    rng = np.random.default_rng(6)
    want = np.minimum(rng.uniform(0.0, 0.7, 5000), rng.exponential(1 / 2.5, 5000))
    np.testing.assert_array_equal(model.rvs(5000, np.random.default_rng(6)), want)
    rng = np.random.default_rng(6)
    assert model.rvs(None, np.random.default_rng(6)) == min(rng.uniform(0.0, 0.7), rng.exponential(1 / 2.5))
    # into the caller's buffers (kept between chunks): the same numbers, the stream left at the same place
    ours, numpys = np.random.default_rng(7), np.random.default_rng(7)
    out, spare = np.full(5000, np.nan), np.full(5000, np.nan)
    for _ in range(3):
        want = np.minimum(numpys.uniform(0.0, 0.7, 5000), numpys.exponential(1 / 2.5, 5000))
        got = model.rvs(5000, ours, out=out, spare=spare)
        assert got is out
        np.testing.assert_array_equal(got, want)
    assert ours.random() == numpys.random()
