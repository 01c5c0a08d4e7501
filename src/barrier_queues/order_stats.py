"""Harmonic numbers and order statistics of task times.

Renyi's representation (paper eqs. 1, 4, 6): the j-th smallest of n iid
Exp(mu) variables is ``X_(j:n) = sum_{i=0}^{j-1} E_i / ((n - i) mu)`` with
independent standard exponentials ``E_i``. Hence

* ``E[X_(j:n)] = (H_n - H_{n-j}) / mu`` (eqs. 2, 5, 7),
* ``Var[X_(j:n)] = sum_{i=0}^{j-1} 1 / ((n - i) mu)^2``,
* ``M(theta) = prod_{i=0}^{j-1} (n - i) mu / ((n - i) mu - theta)`` for
  ``theta < (n - j + 1) mu`` (eq. 27).

For a general task law F (Appendix A, section 3),
``E[X_(j:n)] = integral_0^inf P[Bin(n, F(t)) < j] dt``.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ._validation import ParameterError, check_int, check_positive, check_probability


@functools.lru_cache(maxsize=8)
def _harmonic_table(n_max: int) -> np.ndarray:
    table = np.zeros(n_max + 1)
    table[1:] = np.cumsum(1.0 / np.arange(1, n_max + 1))
    return table


def harmonic(n):
    """Harmonic number ``H_n = 1 + 1/2 + ... + 1/n`` with ``H_0 = 0``.

    Accepts an integer or an integer array (values >= 0).
    """
    arr = np.asarray(n)
    if arr.ndim == 0:
        n_int = check_int("n", n, low=0)
        return float(_harmonic_table(max(n_int, 1))[n_int])
    if arr.size and (arr.min() < 0 or not np.all(np.equal(np.mod(arr, 1), 0))):
        check_int("n", arr[(arr < 0) | (np.mod(arr, 1) != 0)].flat[0], low=0)
    idx = arr.astype(np.int64)
    top = int(idx.max()) if idx.size else 1
    return _harmonic_table(max(top, 1))[idx]


def _check_jn(j, n):
    n = check_int("n", n, low=1)
    j = check_int("j", j, low=1, high=n, high_name=f"n = {n}")
    return j, n


def exp_order_stat_mean(j: int, n: int, rate: float = 1.0) -> float:
    """E[X_(j:n)] for n iid Exp(rate): ``(H_n - H_{n-j}) / rate`` (time units)."""
    j, n = _check_jn(j, n)
    rate = check_positive("rate", rate)
    # sum of 1/i for i in (n-j, n], summed from small to large terms for accuracy
    return float(np.sum(1.0 / np.arange(n, n - j, -1)) / rate)


#: largest n for which :func:`hyperexp2_order_stat_mean` runs its O(j n) recursion (beyond it: quadrature)
HYPEREXP_EXACT_MAX_N = 1024


def hyperexp2_order_stat_mean(j: int, n: int, p: float, rate1: float, rate2: float) -> float:
    """E[X_(j:n)] for n iid two-phase hyperexponential tasks: rate ``rate1`` with probability ``p``, else
    ``rate2`` (the paper's "bimodal exponential" law; time units).

    Exact, without integration: given the phases, n independent exponential tasks finish one at a time; with
    u tasks of rate 1 and v of rate 2 still running the next finish comes after Exp(u rate1 + v rate2) and
    is a rate-1 task with probability u rate1 / (u rate1 + v rate2). The number of rate-1 tasks is
    Binomial(n, p) at the start, and after i finishes the state is u alone (v = n - i - u), so
    ``E[X_(j:n)] = sum_{i<j} E[1 / (u_i rate1 + v_i rate2)]`` over a chain on u: O(j n) work, every term
    positive (no cancellation, unlike the inclusion-exclusion sum).
    """
    j, n = _check_jn(j, n)
    rate1, rate2 = check_positive("rate1", rate1), check_positive("rate2", rate2)
    p = check_probability("p", p)
    if p <= 0.0 or p >= 1.0 or rate1 == rate2:
        return exp_order_stat_mean(j, n, rate1 if p >= 1.0 else rate2)
    u = np.arange(n + 1, dtype=float)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in range(n + 1)])
    prob = np.exp(log_choose + u * math.log(p) + (n - u) * math.log1p(-p))     # P[u tasks of rate 1 at start]
    total = 0.0
    for i in range(j):
        v = n - i - u
        live = v >= 0                                    # states reachable after i finishes
        rate = np.where(live, u * rate1 + np.maximum(v, 0.0) * rate2, 1.0)
        held = np.where(live, prob / rate, 0.0)          # probability times the mean time to the next finish
        total += float(held.sum())
        first = held * u * rate1                         # the next finish is a rate-1 task: u -> u - 1
        prob = held * np.maximum(v, 0.0) * rate2         # a rate-2 task: u stays
        prob[:-1] += first[1:]
    return total


def exp_order_stat_var(j: int, n: int, rate: float = 1.0) -> float:
    """Var[X_(j:n)] for n iid Exp(rate) (time units squared)."""
    j, n = _check_jn(j, n)
    rate = check_positive("rate", rate)
    return float(np.sum(1.0 / (np.arange(n - j + 1, n + 1) * rate) ** 2))


def exp_order_stat_mgf(theta, j: int, n: int, rate: float = 1.0):
    """MGF ``E[exp(theta X_(j:n))]`` for n iid Exp(rate) (paper eq. 27).

    Finite for ``theta < (n - j + 1) rate``; returns ``inf`` elsewhere so that
    optimisers see the boundary. ``theta`` may be an array.
    """
    j, n = _check_jn(j, n)
    rate = check_positive("rate", rate)
    theta = np.asarray(theta, dtype=float)
    r = np.arange(n - j + 1, n + 1) * rate  # the j exponential rates
    feasible = theta < r[0]
    safe = np.where(feasible, theta, 0.0)
    log_m = -np.sum(np.log1p(-safe[..., None] / r), axis=-1)
    out = np.where(feasible, np.exp(log_m), np.inf)
    return float(out) if out.ndim == 0 else out


def order_stat_mean(dist, j: int, n: int, method: str = "auto") -> float:
    """E[X_(j:n)], the mean of the j-th smallest of n iid task times.

    Parameters
    ----------
    dist : TaskDistribution or frozen scipy.stats law
    j, n : int
        ``1 <= j <= n``.
    method : {"auto", "quad"}
        ``"auto"`` uses the law's closed form when it has one; ``"quad"``
        always integrates ``P[X_(j:n) > t] = P[Bin(n, F(t)) < j]`` numerically
        (adaptive quadrature between the law's breakpoints, then to infinity).
    """
    j, n = _check_jn(j, n)
    law = dist                    # duck-typed: cdf and mean (a TaskDistribution or a frozen scipy law)
    if method == "auto":
        closed = getattr(law, "order_stat_mean", None)
        exact = closed(j, n) if closed is not None else None
        if exact is not None:
            return float(exact)
    elif method != "quad":
        raise ParameterError(f"method must be 'auto' or 'quad' (got {method!r})")

    if getattr(law, "cacheable", False):       # TaskDistributions: hashable and immutable; asked again and again
        return _quad_order_stat_mean(law, j, n)
    return _quad_order_stat_mean.__wrapped__(law, j, n)


@functools.lru_cache(maxsize=4096)
def _quad_order_stat_mean(law, j: int, n: int) -> float:
    from scipy import integrate, special  # imported where used: closed forms need no scipy

    def tail(t):                          # P[Bin(n, F(t)) <= j - 1]; special.bdtr is a ufunc (~50x stats.binom)
        return float(special.bdtr(j - 1, n, float(law.cdf(t))))

    scale = max(float(law.mean()), 1e-300)
    opts = {"limit": 400, "epsabs": 1e-13 * scale, "epsrel": 1e-11}
    edges = [0.0, *sorted(b for b in getattr(law, "breakpoints", ()) if b > 0)]
    total = 0.0
    for a, b in itertools.pairwise(edges):
        total += integrate.quad(tail, a, b, **opts)[0]
    # Beyond the last breakpoint: split at a few multiples of the mean so that
    # quad sees where the mass is before the infinite range.
    start = edges[-1]
    for b in (start + scale, start + 10 * scale, start + 100 * scale):
        total += integrate.quad(tail, start, b, **opts)[0]
        start = b
    total += integrate.quad(tail, start, np.inf, **opts)[0]
    return total


def server_time_per_job(dist, tasks: int, needed: int) -> tuple[float, float]:
    """Expected total and useful server time of one (k, l) job (time units).

    A job runs ``k`` tasks and departs when ``l`` have finished; the other
    ``k - l`` are killed at that moment (Appendix A, section 3):

    * total  = ``sum_{j<l} E[X_(j:k)] + (k - l + 1) E[X_(l:k)]``
      (equals ``l / mu`` for Exp(mu) tasks, paper eq. 13),
    * useful = ``sum_{j<=l} E[X_(j:k)]`` (paper eq. 15).

    The same holds for 1- and 2-barrier systems: the barrier changes when a
    job starts, not how long its tasks run.
    """
    k = check_int("tasks", tasks, low=1)
    l_ = check_int("needed", needed, low=1, high=k, high_name=f"tasks = {k}")
    means = np.array([order_stat_mean(dist, j, k) for j in range(1, l_ + 1)])
    total = float(means[:-1].sum() + (k - l_ + 1) * means[-1])
    useful = float(means.sum())
    return total, useful


def exp_server_time_per_job(tasks: int, needed: int, task_rate: float = 1.0) -> tuple[float, float]:
    """Closed form of :func:`server_time_per_job` for Exp(mu) tasks (paper eqs. 13, 15).

    Returns ``(l / mu, (l - (k - l)(H_k - H_{k-l})) / mu)``: expected total and
    useful server time of one (k, l) job, in time units.
    """
    k = check_int("tasks", tasks, low=1)
    l_ = check_int("needed", needed, low=1, high=k, high_name=f"tasks = {k}")
    mu = check_positive("task_rate", task_rate)
    discarded = (k - l_) * exp_order_stat_mean(l_, k, mu)
    return l_ / mu, l_ / mu - discarded
