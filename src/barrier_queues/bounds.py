"""Performance bounds for 1-barrier systems (paper section III; Appendix A, section 5).

With exponential tasks the start of job n's last task satisfies
``t_n <= max(a_n, t_{n-1} + Delta_n)`` with iid spacings ``Delta_n``
(Lemma 1, Corollary 1), so the waiting time is bounded by that of a
single-server queue with service ``Delta`` and interarrival ``A``. With
``m(theta) = M_Delta(theta) M_A(-theta)`` (eq. 33):

* G|G (union bound):  ``P[W >= x] <= e^{-theta x} m / (1 - m)`` for ``m(theta) < 1``;
* GI|GI (martingale): ``P[W >= x] <= e^{-theta x}`` for ``m(theta) <= 1``
  (Theorem 1, eq. 34); the best ``theta`` is the positive root of ``m = 1``.

Spacing MGFs (eqs. 27-32): a barrier job with k tasks waits for ``X_(k:s)``
of s Exp(mu) workers, ``M_B = prod_{i<k} (s-i) mu / ((s-i) mu - theta)``
for ``theta < (s-k+1) mu``; a non-barrier job for k ends of a fully busy
system, ``M_N = (s mu / (s mu - theta))^k`` for ``theta < s mu``; a hybrid
mixes them with probability p, a pmf of k mixes ``M_B`` over k.

Sojourn time ``T <= W + Q`` with ``Q`` the largest of the job's k task times,
independent of ``W`` (eqs. 36-39): ``P[T > x] <= P[Q > x] + int_0^x
min(1, bound(x - q)) f_Q(q) dq``, evaluated by Gauss-Legendre quadrature with
``f_Q`` in log space (no alternating binomial sums, stable for large k).

2-barrier systems are M/G/c queues with ``c = floor(s/k)`` and service
``X_(l:k)``: :func:`two_barrier_mean_waiting` is exact (Pollaczek-Khinchine)
for ``c = 1`` and the Allen-Cunneen approximation for ``c > 1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ._solvers import brent_minimize, brent_root
from ._validation import ParameterError, check_choice, check_int, check_positive, check_probability
from .order_stats import exp_order_stat_mean, exp_order_stat_var
from .system import BarrierSystem, as_system, exponential_rate, require

FORMS = ("gigi", "gg")
_GL_X, _GL_W = np.polynomial.legendre.leggauss(96)


@dataclass(frozen=True)
class SpacingModel:
    """The job-spacing law of a 1-barrier system with exponential tasks.

    ``ks``/``pk``: pmf of k; ``p``: probability of a barrier job; ``mu``:
    task rate; ``servers``: s. Built by :func:`spacing_model`.
    """

    servers: int
    ks: tuple
    pk: tuple
    p: float
    mu: float

    @property
    def theta_sup(self) -> float:
        """Supremum of the MGF's domain: ``(s - k_max + 1) mu`` (``s mu`` without barrier jobs)."""
        if self.p > 0:
            return (self.servers - max(self.ks) + 1) * self.mu
        return self.servers * self.mu

    def log_mgf(self, theta):
        """``log M_Delta(theta)`` (eqs. 27-32); ``inf`` outside the domain.

        Each k's MGF mixes barrier and non-barrier jobs with weights p, 1 - p;
        a pmf of k mixes those with weights p_k; both mixtures are taken in
        log space (``logsumexp``), so nothing overflows near the domain's edge.
        """
        theta = np.asarray(theta, dtype=float)
        s, mu = self.servers, self.mu
        ok = theta < self.theta_sup
        th = np.where(ok, theta, 0.0)
        per_k = []
        for k in self.ks:
            terms, weights = [], []
            if self.p > 0:
                rates = (s - np.arange(k)) * mu
                terms.append(-np.sum(np.log1p(-th[..., None] / rates), axis=-1))
                weights.append(self.p)
            if self.p < 1:
                terms.append(-k * np.log1p(-th / (s * mu)))
                weights.append(1 - self.p)
            per_k.append(_logsumexp(np.stack(terms), np.reshape(weights, (-1,) + (1,) * th.ndim)))
        total = _logsumexp(np.stack(per_k), np.reshape(self.pk, (-1,) + (1,) * th.ndim))
        return np.where(ok, total, np.inf)

    def mgf(self, theta):
        """``M_Delta(theta)``."""
        return np.exp(self.log_mgf(theta))

    def mean(self) -> float:
        """``E[Delta]``: ``(H_s - H_{s-k}) / mu`` for barrier jobs, ``k / (s mu)`` otherwise."""
        total = 0.0
        for k, pk in zip(self.ks, self.pk, strict=True):
            barrier = exp_order_stat_mean(k, self.servers, self.mu)
            total += pk * (self.p * barrier + (1 - self.p) * k / (self.servers * self.mu))
        return total


def _logsumexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(sum_i b_i exp(a_i))`` over the first axis, without overflow (b > 0)."""
    top = np.max(a, axis=0)
    top = np.where(np.isfinite(top), top, 0.0)
    return top + np.log(np.sum(b * np.exp(a - top), axis=0))


def spacing_model(system: BarrierSystem) -> SpacingModel:
    """The spacing law of ``system``; raises if the bounds do not apply to it.

    The bounds cover 1-barrier systems with exponential tasks, conventional
    jobs (l = k) in one phase, any mix of barrier and non-barrier jobs and
    any pmf of k, under the central queue without an overhead model.
    """
    system = as_system(system)
    if system.workload is not None:
        raise ParameterError("workload must be None for the network-calculus bounds (got job classes): the bounds "
                             "take one task law, with tasks_pmf and barrier_fraction")
    if system.scheduling != "fcfs":
        raise ParameterError(f"scheduling must be 'fcfs' for the network-calculus bounds (got "
                             f"{system.scheduling!r}): they assume that no job starts before an earlier one")
    if system.barriers != 1:
        raise ParameterError("barriers must be 1 for the network-calculus bounds (got 2); "
                             "2-barrier systems are M/G/c queues: see two_barrier_mean_waiting")
    rate = exponential_rate(system, "the bounds (Corollary 1 needs memoryless tasks)")
    if system.stragglers:
        raise ParameterError(f"needed must equal tasks for the bounds (got needed = {system.needed}, "
                             f"tasks = {system.tasks})")
    require(system, "the bounds", overhead=None, release="fixed", phases=1, placement="central")
    return SpacingModel(system.servers, tuple(int(k) for k in system.ks), tuple(float(p) for p in system.pk),
                        system.barrier_fraction, rate)


def poisson_arrival_log_mgf(rate: float) -> Callable:
    """``theta -> log M_A(-theta) = log(lambda / (lambda + theta))`` for Poisson arrivals."""
    lam = check_positive("arrival_rate", rate)
    return lambda theta: -np.log1p(np.asarray(theta, dtype=float) / lam)


def deterministic_arrival_log_mgf(rate: float) -> Callable:
    """``theta -> -theta / lambda`` for periodic arrivals."""
    lam = check_positive("arrival_rate", rate)
    return lambda theta: -np.asarray(theta, dtype=float) / lam


@dataclass(frozen=True)
class WaitingBound:
    """A waiting-time bound ``P[W >= x] <= min(1, prefactor e^{-theta x})``.

    ``theta_star`` is the positive root of ``m(theta) = 1`` (the GI|GI decay
    rate); ``prefactor`` is 1 (GI|GI) or ``m / (1 - m)`` (G|G).
    """

    form: str
    theta: float
    prefactor: float
    theta_star: float
    epsilon: float
    quantile: float

    def tail(self, x):
        """The bound on ``P[W >= x]``, capped at 1."""
        return np.minimum(1.0, self.prefactor * np.exp(-self.theta * np.asarray(x, dtype=float)))

    def to_dict(self) -> dict:
        return asdict(self)


class BoundProblem:
    """Bounds of one system: spacing law, arrival law and the function ``log m``."""

    def __init__(self, system: BarrierSystem, arrival_log_mgf: Callable | None = None):
        config = self.config = self.system = as_system(system)
        self.spacing = spacing_model(config)
        if config.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (> 0) for a bound (got None)")
        if arrival_log_mgf is None:
            arrival_log_mgf = (poisson_arrival_log_mgf(config.arrival_rate) if config.arrival == "poisson"
                               else deterministic_arrival_log_mgf(config.arrival_rate))
        self.arrival_log_mgf = arrival_log_mgf
        self._service_quantiles: dict[float, float] = {}
        self._parts = list(zip(self.spacing.ks, self.spacing.pk, strict=True))
        load = self.spacing.mean() * config.arrival_rate
        if load >= 1:
            raise ParameterError(
                f"arrival_rate must be below 1 / E[spacing] = {1 / self.spacing.mean():.6g} for the bound "
                f"(got {config.arrival_rate:.6g}; E[spacing] x arrival_rate = {load:.6g} >= 1): no "
                "theta > 0 has m(theta) < 1, the dominating queue is unstable")
        self.theta_star = self._theta_star()

    def log_m(self, theta):
        """``log m(theta) = log M_Delta(theta) + log M_A(-theta)``."""
        return self.spacing.log_mgf(theta) + self.arrival_log_mgf(theta)

    def _theta_star(self) -> float:
        sup = self.spacing.theta_sup
        hi = sup * (1 - 1e-12)
        # log m is convex with log m(0) = 0 and slope E[Delta] - E[A] < 0 at 0; it
        # tends to +inf at the domain's edge, so it has exactly one positive root.
        lo = sup * 1e-9
        while self.log_m(lo) >= 0:       # a root closer to 0 than lo: shrink
            lo /= 1e3
            if lo < 1e-300:
                raise ParameterError("arrival_rate is too close to the stability limit for the "
                                     "bound (theta* underflows)")
        if self.log_m(hi) <= 0:          # the MGF stays finite up to the edge
            return float(hi)
        return brent_root(lambda t: float(self.log_m(t)), lo, hi, xtol=1e-14 * sup, rtol=1e-14, maxiter=500)

    def waiting(self, epsilon: float, form: str = "gigi") -> WaitingBound:
        """The ``1 - epsilon`` quantile bound of the waiting time (eq. 35), optimised over theta."""
        eps = check_probability("epsilon", epsilon, open_low=True, open_high=True)
        check_choice("form", form, FORMS)
        if form == "gigi":
            t = self.theta_star
            return WaitingBound(form, t, 1.0, t, eps, -math.log(eps) / t)         # (-log: 1/eps overflows below 1e-308)

        def quantile(theta):
            lm = float(self.log_m(theta))
            return (lm - math.log(-math.expm1(lm)) - math.log(eps)) / theta

        t = _minimize_on_interval(quantile, 0.0, self.theta_star)
        lm = float(self.log_m(t))
        return WaitingBound(form, t, math.exp(lm) / -math.expm1(lm), self.theta_star, eps,
                            max(quantile(t), 0.0))

    # -- service and sojourn time -------------------------------------------
    def service_sf(self, q):
        """``P[Q > q]`` with ``Q`` the largest of a job's k Exp(mu) task times (pmf of k).

        ``P[Q > q] = 1 - (1 - e^{-mu q})^k``, evaluated as ``-expm1(k log1p(-e^{-mu q}))``
        (accurate in both tails, any k).
        """
        mu = self.spacing.mu
        if np.ndim(q) == 0:                  # scalar fast path (inner loops)
            if q <= 0:
                return 1.0
            inner = math.log1p(-math.exp(-mu * q))
            return sum(p * -math.expm1(k * inner) for k, p in self._parts)
        q = np.maximum(np.asarray(q, dtype=float), 0.0)
        with np.errstate(divide="ignore"):   # q = 0: log(0) = -inf gives P[Q > 0] = 1
            return sum(p * -np.expm1(k * np.log1p(-np.exp(-mu * q))) for k, p in self._parts)

    def service_quantile(self, epsilon: float) -> float:
        """``1 - epsilon`` quantile of ``Q``, the execution time of a barrier job."""
        eps = check_probability("epsilon", epsilon, open_low=True, open_high=True)
        if eps not in self._service_quantiles:
            self._service_quantiles[eps] = _solve_decreasing(lambda q: self.service_sf(q) - eps,
                                                             1.0 / self.spacing.mu)
        return self._service_quantiles[eps]

    def _log_fq(self, q, k):
        mu = self.spacing.mu
        return math.log(k * mu) - mu * q + (k - 1) * np.log1p(-np.exp(-mu * q))

    def sojourn_sf(self, x: float, bound: WaitingBound) -> float:
        """Bound on ``P[T > x]``: ``P[Q > x] + int_0^x min(1, bound(x - q)) f_Q(q) dq``."""
        x = float(x)
        if x <= 0:
            return 1.0
        w0 = max(math.log(bound.prefactor) / bound.theta, 0.0)  # bound(w) >= 1 for w < w0
        split = x - w0                                           # q < split: bound < 1
        if split <= 0:
            return 1.0                                           # min(1, .) = 1 for every q
        # P[Q > x] plus q in (split, x], where min(1, .) = 1: together P[Q > split]
        total = self.service_sf(split)
        # q in [0, split]: prefactor e^{-theta (x - q)} f_Q(q), Gauss-Legendre in log space on panels that
        # double from the median of Q: the mass sits at small q (where f_Q does) however far out x is (near
        # the stability edge x is thousands of task times; one rule over [0, x] would miss it)
        edges = [0.0]
        width = max(self.service_quantile(0.5), 1e-12)
        while edges[-1] < split:
            edges.append(min(split, edges[-1] + width))
            width *= 2.0
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            nodes = a + 0.5 * (b - a) * (_GL_X + 1.0)
            for k, p in self._parts:
                log_terms = (math.log(bound.prefactor) - bound.theta * (x - nodes) + self._log_fq(nodes, k))
                total += p * 0.5 * (b - a) * float(np.sum(_GL_W * np.exp(log_terms)))
        return min(total, 1.0)

    def sojourn(self, epsilon: float, form: str = "gigi") -> tuple[float, float]:
        """``(1 - epsilon)`` quantile bound of the sojourn time and its theta.

        GI|GI: the decay rate theta* is best (the bound decreases in theta
        pointwise). G|G: theta is optimised for the sojourn quantile itself.
        """
        eps = check_probability("epsilon", epsilon, open_low=True, open_high=True)
        check_choice("form", form, FORMS)

        def quantile_for(bound: WaitingBound) -> float:
            start = bound.quantile + self.service_quantile(eps)
            return _solve_decreasing(lambda x: self.sojourn_sf(x, bound) - eps, start)

        if form == "gigi":
            wb = self.waiting(eps, "gigi")
            return quantile_for(wb), wb.theta

        def objective(theta):
            lm = float(self.log_m(theta))
            return quantile_for(WaitingBound("gg", theta, math.exp(lm) / -math.expm1(lm),
                                             self.theta_star, eps, 0.0))

        t = _minimize_on_interval(objective, 0.0, self.theta_star)
        return objective(t), t


def _minimize_on_interval(f: Callable, lo: float, hi: float) -> float:
    """Minimise ``f`` on the open interval ``(lo, hi)`` where it blows up at both ends.

    A scan of 12 points, dense near both ends (where the optimum sits when the
    load is low or high), locates the basin, then bounded Brent refines between
    the bracketing neighbours to a relative 1e-7 in theta; the quantile is flat
    to second order at the optimum, so this fixes it to about 1e-13 relative.
    """
    u = np.concatenate([np.geomspace(1e-6, 0.5, 6), 1 - np.geomspace(0.4, 1e-7, 6)])
    grid = lo + (hi - lo) * u
    values = np.array([f(t) for t in grid])
    i = int(np.nanargmin(values))
    a = grid[i - 1] if i > 0 else lo + (hi - lo) * 1e-9
    b = grid[i + 1] if i + 1 < grid.size else hi
    x, fx = brent_minimize(f, a, b, xatol=1e-7 * (hi - lo))
    return float(x) if fx <= values[i] else float(grid[i])


def _solve_decreasing(g: Callable, start: float) -> float:
    """Root of a decreasing function ``g`` on (0, inf), bracketed by doubling from ``start``."""
    lo, hi = 0.0, max(start, 1e-12)
    while g(hi) > 0:
        lo, hi = hi, 2 * hi
        if hi > 1e12:
            raise ParameterError("the quantile bound does not exist (the tail bound stays above epsilon)")
    return brent_root(g, lo, hi, xtol=1e-12, rtol=1e-12)


@dataclass(frozen=True)
class Bound:
    """Waiting, sojourn and service quantile bounds of one system (time units)."""

    form: str
    epsilon: float
    waiting_quantile: float
    sojourn_quantile: float
    service_quantile: float
    theta: float
    sojourn_theta: float
    theta_star: float
    mean_spacing: float

    def to_dict(self) -> dict:
        return asdict(self)


def bound(config: BarrierSystem, epsilon: float, form: str = "gigi",
          arrival_log_mgf: Callable | None = None) -> Bound:
    """Quantile bounds for a 1-barrier system (paper Theorem 1, eqs. 35-39).

    Parameters
    ----------
    config : BarrierSystem
        1-barrier, exponential tasks, l = k; ``barrier_fraction`` and
        ``tasks_pmf`` give hybrid and heterogeneous systems.
    epsilon : float
        Violation probability, ``0 < epsilon < 1``.
    form : {"gigi", "gg"}
        Martingale (GI|GI) or union (G|G) bound.
    arrival_log_mgf : callable, optional
        ``theta -> log E[exp(-theta A)]`` of a general renewal arrival process
        with rate ``config.arrival_rate``; default Poisson (or periodic for
        ``arrival="deterministic"``).

    Examples
    --------
    >>> cfg = BarrierSystem(servers=16, tasks=8, arrival_rate=1.0)   # rho = 0.5
    >>> round(bound(cfg, 1e-3).waiting_quantile, 2)
    6.91
    """
    return problem_bound(BoundProblem(config, arrival_log_mgf), epsilon, form)


def problem_bound(problem: BoundProblem, epsilon: float, form: str) -> Bound:
    wb = problem.waiting(epsilon, form)
    sojourn, sojourn_theta = problem.sojourn(epsilon, form)
    # W <= S = W + service on every path, so a bound on S's quantile bounds W's too: the waiting bound is the
    # lesser of the two (the two optimisations over theta are separate; at epsilon near the smallest double
    # the waiting one can come out above the sojourn one)
    return Bound(form, wb.epsilon, min(wb.quantile, sojourn), sojourn, problem.service_quantile(epsilon), wb.theta,
                 sojourn_theta, problem.theta_star, problem.spacing.mean())


def erlang_c(servers: int, offered: float) -> float:
    """Erlang's C formula: the probability that an arrival to an M/M/c queue waits.

    ``C(c, a) = (a^c / c!) / (1 - rho) / (sum_{n<c} a^n / n! + (a^c / c!) / (1 - rho))``
    with ``rho = a / c < 1``, evaluated in log space (no overflow for large c).
    """
    c = check_int("servers", servers, low=1)
    a = check_positive("offered", offered)
    rho = a / c
    if rho >= 1:
        raise ParameterError(f"offered must be below servers = {c} for Erlang C (got {a!r})")
    n = np.arange(c)
    log_terms = n * math.log(a) - np.array([math.lgamma(i + 1) for i in n]) if c <= 4096 else \
        n * math.log(a) - _lgamma_range(c)
    log_top = c * math.log(a) - math.lgamma(c + 1) - math.log1p(-rho)
    top = max(float(log_terms.max()), log_top)
    denominator = float(np.sum(np.exp(log_terms - top))) + math.exp(log_top - top)
    return math.exp(log_top - top) / denominator


def _lgamma_range(c: int) -> np.ndarray:
    """``lgamma(n + 1)`` for n = 0..c-1 (cumulative sums of logs)."""
    out = np.zeros(c)
    out[1:] = np.cumsum(np.log(np.arange(1, c)))
    return out


def two_barrier_mean_waiting(servers: int, tasks: int, arrival_rate: float, needed: int | None = None,
                             task_rate: float = 1.0) -> dict:
    """Mean waiting and sojourn time of a 2-barrier (s,k,l) system, an M/G/c queue.

    ``c = floor(s/k)`` servers, service ``S = X_(l:k)`` of Exp(mu) tasks.
    For ``c = 1`` the Pollaczek-Khinchine formula
    ``E[W] = lambda E[S^2] / (2 (1 - rho))`` is exact; for ``c > 1`` this uses
    the Allen-Cunneen approximation ``E[W] ~ C(c, a) / (c/E[S] - lambda)
    (1 + c_S^2) / 2`` (:func:`erlang_c` times the squared-coefficient-of-variation
    correction), which is exact for exponential service and for c = 1.
    """
    system = BarrierSystem(servers=servers, tasks=tasks, needed=needed, barriers=2, arrival_rate=arrival_rate,
                           task_rate=task_rate)
    c = system.parallel_jobs
    mean_s = exp_order_stat_mean(system.needed, system.tasks, system.task_rate)
    cs2 = exp_order_stat_var(system.needed, system.tasks, system.task_rate) / mean_s**2
    a = system.arrival_rate * mean_s
    rho = a / c
    if rho >= 1:
        raise ParameterError(f"arrival_rate must be below c / E[S] = {c / mean_s:.6g} for this "
                             f"2-barrier system (got {system.arrival_rate:.6g})")
    wait = erlang_c(c, a) / (c / mean_s - system.arrival_rate) * (1 + cs2) / 2
    return {"mean_waiting": wait, "mean_sojourn": wait + mean_s, "servers_c": c, "rho": rho,
            "method": "pollaczek-khinchine (exact)" if c == 1 else "allen-cunneen (approximation)"}


def form_ratio_grid(servers: int, utilizations, epsilon: float = 1e-3):
    """The G|G bound against the GI|GI bound over k/s and load (paper section III-C).

    Pure barrier jobs with the Spark scaling (task mean s/k, rho = lambda), every stable k: one row per
    (utilization, k) with both forms' waiting and sojourn quantile bounds and their ratios ``gg / gigi``.
    """
    import pandas as pd

    rows = []
    for u in utilizations:
        for k in range(1, int(servers) + 1):
            system = BarrierSystem(servers=servers, tasks=k, arrival_rate=u, task_rate=k / servers)
            try:
                problem = BoundProblem(system)
            except ParameterError:
                continue                         # beyond the stability limit
            gigi, gg = problem_bound(problem, epsilon, "gigi"), problem_bound(problem, epsilon, "gg")
            rows.append({"utilization": u, "tasks": k, "k/s": k / servers,
                         "waiting_gigi": gigi.waiting_quantile, "waiting_gg": gg.waiting_quantile,
                         "sojourn_gigi": gigi.sojourn_quantile, "sojourn_gg": gg.sojourn_quantile,
                         "waiting_ratio": gg.waiting_quantile / gigi.waiting_quantile,
                         "sojourn_ratio": gg.sojourn_quantile / gigi.sojourn_quantile})
    return pd.DataFrame(rows)
