"""Spark's blocking-overhead model (paper section IV, eqs. 40-42; Appendix A, section 7).

A barrier job blocked for executors starts only at a *global* resource offer:
the next revive-timer tick (period R, phase independent of task ends) or the
next job submission (Poisson, rate lambda). The overhead is
``O = min(U, E)`` with ``U ~ Uniform(0, R)`` and ``E ~ Exp(lambda)``:

* CCDF ``P[O > t] = (1 - t/R) e^{-lambda t}`` on ``[0, R]`` (eq. 41),
* PDF ``f(t) = e^{-lambda t} (1/R + lambda (1 - t/R))`` (eq. 42),
* mean ``1/lambda - (1 - e^{-lambda R}) / (lambda^2 R)``.

:func:`ks_test` compares measured samples with the model;
:func:`fit_overhead` finds the maximum-likelihood ``R`` and ``lambda``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ._validation import ParameterError, check_positive


@dataclass(frozen=True)
class OverheadModel:
    """``min(Uniform(0, revive), Exp(rate))``; times in seconds (or any one unit)."""

    revive: float
    rate: float

    def __post_init__(self):
        check_positive("revive", self.revive, "(revive interval R)")
        check_positive("rate", self.rate, "(job arrival rate lambda)")

    def sf(self, t):
        """``P[O > t]`` (eq. 41)."""
        t = np.asarray(t, dtype=float)
        inside = np.clip(1 - t / self.revive, 0.0, 1.0) * np.exp(-self.rate * np.maximum(t, 0.0))
        return np.where(t < 0, 1.0, inside)

    def cdf(self, t):
        return 1.0 - self.sf(t)

    def pdf(self, t):
        """``e^{-lambda t} (1/R + lambda (1 - t/R))`` on ``[0, R]`` (eq. 42)."""
        t = np.asarray(t, dtype=float)
        inside = (t >= 0) & (t <= self.revive)
        tt = np.clip(t, 0.0, self.revive)
        return np.where(inside, np.exp(-self.rate * tt) * (1 / self.revive + self.rate * (1 - tt / self.revive)),
                        0.0)

    def mean(self) -> float:
        """``R g(lambda R)`` with ``g(x) = (x - 1 + e^{-x}) / x^2``, the mean above.

        For ``x < 0.01`` the closed form cancels catastrophically, so ``g`` is
        summed as its series ``sum_n (-x)^n / (n + 2)!`` (six terms: error
        below ``x^6 / 8! < 1e-16``).
        """
        x = self.rate * self.revive
        if x < 0.01:
            g = sum((-x) ** n / math.factorial(n + 2) for n in range(6))
        else:
            g = (x + math.expm1(-x)) / (x * x)
        return self.revive * g

    def rvs(self, size=None, random_state=None, out=None, spare=None):
        """``size`` overheads: ``size`` uniforms on ``[0, R)``, then ``size`` exponentials, their minima.

        The draws are numpy's ``uniform(0, R)`` and ``exponential(1/lambda)``
        bit for bit (tested), taken by its fill loops and scaled after:
        ``uniform(0, R)`` is ``0 + R u`` and ``exponential(b)`` is ``b e``,
        the same products. ``out`` and ``spare`` (float64 arrays of ``size``,
        e.g. kept by the caller from one chunk to the next) receive the
        uniforms and the exponentials instead of new arrays; the result is
        ``out`` (reused buffers: fewer allocations; timings in the CHANGELOG).
        """
        rng = np.random.default_rng(random_state)
        if size is None:
            return min(rng.random() * self.revive, rng.standard_exponential() * (1.0 / self.rate))
        u = rng.random(size, out=out)
        u *= self.revive
        e = rng.standard_exponential(size, out=spare)
        e *= 1.0 / self.rate
        return np.minimum(u, e, out=u)

    def to_dict(self) -> dict:
        return asdict(self)


def _samples(samples) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if x.size < 2:
        raise ParameterError(f"samples must hold at least 2 overhead measurements (got {x.size})")
    if not np.all(np.isfinite(x)) or x.min() < 0:
        raise ParameterError("samples must be finite overheads >= 0 (got min "
                             f"{np.nanmin(x)!r})")
    return x


def ks_test(samples, model: OverheadModel) -> dict:
    """Kolmogorov-Smirnov test of the samples against the model: statistic and p-value."""
    # scipy here, not at the top: simulations draw overheads without importing it
    from scipy import stats

    x = _samples(samples)
    res = stats.kstest(x, model.cdf)
    return {"ks_statistic": float(res.statistic), "ks_pvalue": float(res.pvalue), "n": int(x.size),
            **{f"model_{k}": v for k, v in model.to_dict().items()}}


def fit_overhead(samples, start: OverheadModel | None = None) -> OverheadModel:
    """Maximum-likelihood ``R`` and ``lambda`` of ``min(U(0, R), Exp(lambda))``.

    The likelihood is zero for ``R`` below the largest sample, so ``R`` is
    parametrised as ``max(samples) (1 + e^a)`` (always above it) and searched
    jointly with ``log lambda`` by Nelder-Mead from nine starts (lambda of
    0.1, 1 and 10 per ``max(samples)``; ``R`` at 1.002x, 1.14x and 2x
    ``max(samples)``), keeping the best; with ``start`` (e.g. the model
    the samples were drawn from, in a bootstrap) one search from there.
    """
    from scipy import optimize

    x = _samples(samples)
    top = float(x.max())
    if top <= 0:
        raise ParameterError("samples must include a positive overhead (got all zeros)")

    def nll(params):
        r = top * (1 + math.exp(params[0]))       # R > max(samples)
        lam = math.exp(params[1])
        dens = np.exp(-lam * x) * (1 / r + lam * (1 - x / r))
        return -float(np.sum(np.log(np.maximum(dens, 1e-300))))

    if start is not None:
        starts = [[math.log(max(start.revive / top - 1, 1e-6)), math.log(start.rate)]]
    else:
        starts = [[gap, math.log(lam0 / top)] for lam0 in (0.1, 1.0, 10.0) for gap in (-6.0, -2.0, 0.0)]
    best = None
    for x0 in starts:
        res = optimize.minimize(nll, x0, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 4000})
        if best is None or res.fun < best.fun:
            best = res
    return OverheadModel(top * (1 + math.exp(best.x[0])), math.exp(best.x[1]))


def ks_test_fitted(samples, bootstrap: int = 200, seed=0) -> dict:
    """KS test of the samples against the model at their own maximum-likelihood parameters.

    With parameters fitted on the same samples the plain KS p-value is too
    large (the fit pulls the model towards the data), so the p-value comes
    from a parametric bootstrap (Stute, Gonzalez Manteiga & Presedo Quindimil
    1993): ``bootstrap`` samples of the same size are drawn from the fitted
    model, refitted and tested, and ``p = (1 + #{D_b >= D}) / (bootstrap + 1)``.
    ``bootstrap = 0`` returns the plain p-value and says so.
    """
    from scipy import stats

    x = _samples(samples)
    fit = fit_overhead(x)
    res = stats.kstest(x, fit.cdf)
    out = {"revive": fit.revive, "rate": fit.rate, "ks_statistic": float(res.statistic), "n": int(x.size)}
    if bootstrap <= 0:
        return {**out, "ks_pvalue": float(res.pvalue),
                "pvalue_method": "plain KS (too large: parameters fitted on these samples)"}
    rng = np.random.default_rng(seed)
    exceed = 0
    for _ in range(int(bootstrap)):
        y = fit.rvs(x.size, rng)
        if y.max() <= 0:
            continue
        d = stats.kstest(y, fit_overhead(y, start=fit).cdf).statistic
        exceed += d >= res.statistic
    return {**out, "ks_pvalue": (1 + exceed) / (bootstrap + 1),
            "pvalue_method": f"parametric bootstrap ({bootstrap} refits)", "bootstrap": int(bootstrap)}
