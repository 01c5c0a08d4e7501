"""The law of a barrier job's release, without queueing (Appendix B, section 1; seed 002).

A job's ``k`` tasks start together; its release (departure) ``D`` and the
number of tasks completed ``L`` depend only on its own task times, so their
law needs no queueing model:

* **fixed** ``l``: ``D = X_(l:k)``, ``L = l``; means exact by order statistics
  (closed forms for exponential tasks, quadrature otherwise; paper eqs. 7, 13, 15);
* **timeout** ``T``: ``D = min(X_(k:k), T)``, ``L = #{x_i <= T}``; exact by
  quadrature: ``E[D] = int_0^T (1 - F(t)^k) dt``, ``E[work] = k int_0^T (1 - F)``,
  ``E[useful] = k E[X; X <= T]``, ``E[L] = k F(T)``;
* **knee** (minimum fraction ``f``, minimum wait ``w``, gain ``a``): the
  detector of Appendix B, section 1 applied to ``k`` sorted task times;
  Monte Carlo over ``samples`` jobs (vectorised numpy, independent of the
  simulation kernels), with standard errors.

From these, a 2-barrier system's stability limit is ``floor(s/k) / E[D]``
(each group of k workers serves one job at a time for ``D``), its maximum
total and useful utilization ``lambda_max E[work] / s`` and
``lambda_max E[useful] / s``, and the discarded work ``E[work] - E[useful]``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from ._validation import ParameterError, check_int
from .order_stats import order_stat_mean, server_time_per_job
from .reference import KNEE_GAIN

#: Monte Carlo jobs for the knee law (standard errors are reported)
KNEE_SAMPLES = 400_000
KNEE_SEED = 20061231
#: Monte Carlo laws draw at most about this many task times
MC_DRAWS = 40_000_000
MAX_MC_TASKS = 10_000


@dataclass(frozen=True)
class ReleaseLaw:
    """Means of one job's release: ``mean_departure`` E[D] (start to departure), ``mean_work``
    (server time its tasks used), ``mean_useful`` (of completed tasks), ``mean_completed`` E[L],
    ``completed_pmf`` P[L = i] for i = 1..k (None where not computed), ``method`` and the Monte Carlo
    standard errors (None when exact)."""

    tasks: int
    mean_departure: float
    mean_work: float
    mean_useful: float
    mean_completed: float
    method: str
    completed_pmf: tuple | None = None
    departure_se: float | None = None
    work_se: float | None = None
    useful_se: float | None = None
    samples: int | None = None

    @property
    def mean_discarded(self) -> float:
        """E[work of killed tasks] = E[work] - E[useful]."""
        return self.mean_work - self.mean_useful

    def to_dict(self) -> dict:
        d = asdict(self)
        d["mean_discarded"] = self.mean_discarded
        return d


def knee_release_sorted(t: np.ndarray, min_fraction: float, min_wait: float, gain: float = KNEE_GAIN):
    """The knee detector on rows of sorted completion times ``t`` (n x k): arrays (D, L).

    Vectorised over jobs (rows); same rule as Appendix B, section 1.
    """
    t = np.asarray(t, dtype=float)
    n, k = t.shape
    d = t[:, -1].copy()
    done = np.full(n, k, dtype=np.int64)
    if k == 1:
        return d, done
    need = math.ceil(min_fraction * k - 1e-12)
    released = np.zeros(n, dtype=bool)
    arr = t[:, 0].copy()
    dev = t[:, 0] / 2.0
    for i in range(1, k):
        if i >= 2:
            g = t[:, i - 1] - t[:, i - 2]
            dev = 0.75 * dev + 0.25 * np.abs(arr - g)
            arr = (1.0 - gain) * arr + gain * g
        tau = arr + 4.0 * dev
        when = t[:, i - 1] + tau
        fire = ~released & (t[:, i] - t[:, i - 1] > tau) & (i >= need) & (when >= min_wait)
        d[fire] = when[fire]
        done[fire] = i
        released |= fire
    return d, done


@functools.lru_cache(maxsize=256)
def _knee_law(law, k: int, min_fraction: float, min_wait: float, gain: float, samples: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = max(1, (1 << 22) // k)
    sums = np.zeros(4)
    squares = np.zeros(4)
    pmf = np.zeros(k + 1)
    for a in range(0, samples, rows):
        n = min(rows, samples - a)
        x = np.asarray(law.rvs(size=n * k, random_state=rng), dtype=float).reshape(n, k)
        t = np.sort(x, axis=1)
        d, done = knee_release_sorted(t, min_fraction, min_wait, gain)
        work = np.minimum(x, d[:, None]).sum(axis=1)
        useful = np.where(np.arange(k)[None, :] < done[:, None], t, 0.0).sum(axis=1)
        cols = np.vstack([d, work, useful, done])
        sums += cols.sum(axis=1)
        squares += (cols**2).sum(axis=1)
        pmf += np.bincount(done, minlength=k + 1)
    mean = sums / samples
    se = np.sqrt(np.maximum(squares / samples - mean**2, 0.0) / (samples - 1))
    return ReleaseLaw(k, float(mean[0]), float(mean[1]), float(mean[2]), float(mean[3]), "monte-carlo",
                      tuple(float(p) for p in pmf[1:] / samples), float(se[0]), float(se[1]), float(se[2]), samples)


def knee_law(law, tasks: int, min_fraction: float = 0.5, min_wait: float = 0.0, gain: float = KNEE_GAIN,
             samples: int = KNEE_SAMPLES, seed: int = KNEE_SEED) -> ReleaseLaw:
    """Monte Carlo law of the knee release of ``tasks`` iid task times from ``law``."""
    k = check_int("tasks", tasks, low=1, high=MAX_MC_TASKS, high_name=f"{MAX_MC_TASKS:,} for the Monte Carlo knee law")
    samples = check_int("samples", samples, low=100)
    samples = min(samples, max(2_000, MC_DRAWS // k))          # bounded work; the standard errors say so
    return _knee_law(law, k, float(min_fraction), float(min_wait), float(gain), samples, int(seed))


#: timeouts beyond this many mean task times get doubling quadrature intervals (timeout_law)
TAIL_EDGE = 32.0


def timeout_law(law, tasks: int, timeout: float) -> ReleaseLaw:
    """Exact (quadrature) law of the timeout release ``D = min(X_(k:k), T)``."""
    from scipy import integrate

    k = check_int("tasks", tasks, low=1)
    t_end = float(timeout)
    points = {b for b in getattr(law, "breakpoints", ()) if 0 < b < t_end}
    # a timeout far beyond the law's scale: quad over [0, T] would sample only where 1 - F(t)^k is already 0 and
    # return 0 (a zero mean departure); intervals doubling from TAIL_EDGE means keep every piece on the scale of
    # its integrand (T up to TAIL_EDGE means: the intervals as before, unchanged)
    scale = float(law.mean())
    if math.isfinite(scale) and scale > 0:
        edge = TAIL_EDGE * scale
        while edge < t_end:
            points.add(edge)
            edge *= 2.0
    edges = [0.0, *sorted(points), t_end]
    opts = {"limit": 400, "epsabs": 1e-13 * max(t_end, 1e-300), "epsrel": 1e-11}

    def integral(f):
        return sum(integrate.quad(f, a, b, **opts)[0] for a, b in zip(edges[:-1], edges[1:], strict=True))

    f_t = float(law.cdf(t_end))
    mean_d = integral(lambda t: 1.0 - float(law.cdf(t)) ** k)
    mean_min = integral(lambda t: 1.0 - float(law.cdf(t)))
    # E[X; X <= T] = int_0^T (F(T) - F(t)) dt
    partial = integral(lambda t: f_t - float(law.cdf(t)))
    from scipy import stats

    pmf = tuple(float(stats.binom.pmf(i, k, f_t)) for i in range(1, k + 1))
    # L = 0 (no task by T) is possible for a timeout; reported through mean_completed
    return ReleaseLaw(k, mean_d, k * mean_min, k * partial, k * f_t, "quadrature", pmf)


def fixed_law(law, tasks: int, needed: int) -> ReleaseLaw:
    """Exact law of the fixed release after ``needed`` of ``tasks`` (order statistics)."""
    k = check_int("tasks", tasks, low=1)
    l_ = check_int("needed", needed, low=1, high=k, high_name=f"tasks = {k}")
    work, useful = server_time_per_job(law, k, l_)
    pmf = tuple(1.0 if i == l_ else 0.0 for i in range(1, k + 1))
    return ReleaseLaw(k, order_stat_mean(law, l_, k), work, useful, float(l_), "order-statistics", pmf)


def release_law(system, tasks: int | None = None) -> ReleaseLaw:
    """The release law of one of ``system``'s barrier jobs (of ``tasks`` tasks; default its k).

    One-phase jobs without an overhead model (phased jobs: :mod:`barrier_queues.phases`).
    """
    if system.phases > 1:
        raise ParameterError("phases must be 1 for release_law (got "
                             f"{system.phases}): use barrier_queues.phases.phase_law")
    if system.overhead is not None:
        raise ParameterError(f"overhead must be None for release_law (got {system.overhead!r})")
    k = system.tasks if tasks is None else check_int("tasks", tasks, low=1, high=system.servers,
                                                     high_name=f"servers = {system.servers}")
    law = system.task_dist
    if system.release == "knee":
        return knee_law(law, k, system.min_fraction, system.min_wait, system.knee_gain)
    if system.release == "timeout":
        return timeout_law(law, k, system.timeout)
    return fixed_law(law, k, system.needed if system.tasks_pmf is None and k == system.tasks else k)


def two_barrier_limit(system) -> dict:
    """Stability limit of a 2-barrier system under its release rule: ``floor(s/k) / E[D]``.

    Returns ``lambda_max``, ``rho_max`` (total), ``rho_useful``, the mean
    tasks completed and discarded work per job, the method, and for Monte
    Carlo laws a 95 % interval of ``lambda_max`` (delta method).
    """
    if system.tasks_pmf is not None:
        raise ParameterError("tasks must be fixed for two_barrier_limit (got a tasks_pmf)")
    r = release_law(system)
    c = system.servers // system.tasks
    lam = c / r.mean_departure
    out = {"lambda_max": lam, "rho_max": lam * r.mean_work / system.servers,
           "rho_useful": lam * r.mean_useful / system.servers, "mean_completed": r.mean_completed,
           "mean_discarded": r.mean_discarded, "mean_departure": r.mean_departure, "method": r.method}
    if r.departure_se is not None:
        half = 1.96 * lam * r.departure_se / r.mean_departure
        out["lambda_max_ci"] = [lam - half, lam + half]
    return out


__all__ = ["KNEE_SAMPLES", "ReleaseLaw", "fixed_law", "knee_law", "knee_release_sorted", "release_law",
           "timeout_law", "two_barrier_limit"]
