"""Barrier jobs in phases with ``barrier()`` sync points (Appendix B, section 3; seeds 001, 004).

A job's ``k`` tasks run ``m`` phases; in each phase each task does an iid
draw ``X_ij`` of the task law; between phases every task calls
``barrier()``. With an **ideal** barrier phase ``j+1`` starts for all tasks
at ``T_j = max_i`` (end of phase ``j``); with **Spark's** barrier every task
polls once per ``P`` (1 s) from its own arrival ``a_i``, so it resumes at
``a_i + P (floor((T_j - a_i) / P) + 1)``: the last one ``P`` after ``T_j``.

The job's service law, without queueing:

* ideal release, exactly (order statistics): the departure is
  ``D = sum_j max_i X_ij``, so ``E[D] = m E[X_(k:k)]``; a 1-barrier worker is
  occupied until its own last phase ends, ``E[sum_i e_i] = k (m-1) E[X_(k:k)]
  + k E[X]``;
* Spark release: Monte Carlo over ``samples`` jobs (vectorised numpy,
  independent of the simulation kernels), with standard errors.

The 2-barrier stability limit is ``floor(s/k) / E[D]``. :func:`plan_phases`
answers "how many phases per job before the sync cost dominates": a task's
work ``X`` is split into ``m`` phases of ``X / m`` each, and the sync share
``1 - E[D_ideal] / E[D_spark]`` is the part of a job's time that Spark's
polling adds.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np

from ._validation import ParameterError, check_int, check_positive, check_probability
from .order_stats import order_stat_mean

PHASE_SAMPLES = 200_000
PHASE_SEED = 20181015
MAX_MC_DRAWS_PER_JOB = 100_000


@dataclass(frozen=True)
class PhaseLaw:
    """Means of a phased job: ``mean_departure`` E[D] (start to departure), ``mean_work`` (worker
    time its tasks occupy, sync waits included, 1 barrier), ``mean_useful`` (the draws: ``k m E[X]``),
    ``sync_share`` ``1 - mean_useful / mean_work``, ``method`` and Monte Carlo standard errors."""

    tasks: int
    phases: int
    sync: str
    mean_departure: float
    mean_work: float
    mean_useful: float
    method: str
    departure_se: float | None = None
    work_se: float | None = None
    samples: int | None = None

    @property
    def idle_share(self) -> float:
        """Share of the occupied worker time spent waiting at barriers."""
        return 1.0 - self.mean_useful / self.mean_work

    def to_dict(self) -> dict:
        d = asdict(self)
        d["idle_share"] = self.idle_share
        return d


def phase_ends(x: np.ndarray, sync: str = "ideal", poll: float = 1.0) -> np.ndarray:
    """Each task's end of its last phase, relative to the start: ``x`` is (n, m, k); returns (n, k)."""
    e = x[:, 0, :].copy()
    for j in range(1, x.shape[1]):
        t = e.max(axis=1, keepdims=True)
        if sync == "spark":
            e = e + poll * (np.floor((t - e) / poll) + 1) + x[:, j, :]
        else:
            e = np.broadcast_to(t, e.shape) + x[:, j, :]
    return e


@functools.lru_cache(maxsize=256)
def _spark_law(law, k: int, m: int, poll: float, samples: int, seed: int) -> PhaseLaw:
    rng = np.random.default_rng(seed)
    rows = max(1, (1 << 22) // (k * m))
    sums, squares = np.zeros(2), np.zeros(2)
    for a in range(0, samples, rows):
        n = min(rows, samples - a)
        x = np.asarray(law.rvs(size=n * m * k, random_state=rng), dtype=float).reshape(n, m, k)
        e = phase_ends(x, "spark", poll)
        cols = np.vstack([e.max(axis=1), e.sum(axis=1)])
        sums += cols.sum(axis=1)
        squares += (cols**2).sum(axis=1)
    mean = sums / samples
    se = np.sqrt(np.maximum(squares / samples - mean**2, 0.0) / (samples - 1))
    return PhaseLaw(k, m, "spark", float(mean[0]), float(mean[1]), k * m * float(law.mean()), "monte-carlo",
                    float(se[0]), float(se[1]), samples)


def phase_law(law, tasks: int, phases: int, sync: str = "ideal", poll: float = 1.0,
              samples: int = PHASE_SAMPLES, seed: int = PHASE_SEED) -> PhaseLaw:
    """The service law of a job of ``tasks`` tasks and ``phases`` phases (module docstring)."""
    k = check_int("tasks", tasks, low=1)
    m = check_int("phases", phases, low=1)
    if sync not in ("ideal", "spark"):
        raise ParameterError(f"sync must be one of 'ideal', 'spark' (got {sync!r})")
    if sync == "ideal" or m == 1:
        top = order_stat_mean(law, k, k)
        mean = float(law.mean())
        return PhaseLaw(k, m, "ideal" if m > 1 else sync, m * top, k * (m - 1) * top + k * mean, k * m * mean,
                        "order-statistics")
    poll = check_positive("poll", poll, "(time units)")
    if k * m > MAX_MC_DRAWS_PER_JOB:
        raise ParameterError(f"tasks x phases must be at most {MAX_MC_DRAWS_PER_JOB:,} for the Monte Carlo law of "
                             f"Spark's barrier() (got {k * m:,}); estimate it by simulation")
    samples = min(check_int("samples", samples, low=100), max(2_000, 40_000_000 // (k * m)))
    return _spark_law(law, k, m, float(poll), samples, int(seed))


def system_phase_law(system, tasks: int | None = None) -> PhaseLaw:
    """:func:`phase_law` of one of ``system``'s jobs (of ``tasks`` tasks; default its k)."""
    k = system.tasks if tasks is None else tasks
    return phase_law(system.task_dist, k, system.phases, system.sync or "ideal", system.sync_poll or 1.0)


def two_barrier_limit(system) -> dict:
    """Stability limit of a 2-barrier phased system: ``floor(s/k) / E[D]``, with rho and method."""
    if system.tasks_pmf is not None:
        raise ParameterError("tasks must be fixed for two_barrier_limit (got a tasks_pmf)")
    law = system_phase_law(system)
    lam = (system.servers // system.tasks) / law.mean_departure
    out = {"lambda_max": lam, "rho_max": lam * law.mean_work / system.servers,
           "rho_useful": lam * law.mean_useful / system.servers, "mean_departure": law.mean_departure,
           "method": law.method}
    if law.departure_se is not None:
        half = 1.96 * lam * law.departure_se / law.mean_departure
        out["lambda_max_ci"] = [lam - half, lam + half]
    return out


def plan_phases(tasks: int, task_dist=None, sync_poll: float = 1.0, max_share: float = 0.5,
                max_phases: int = 64, samples: int = 50_000, seed: int = PHASE_SEED) -> dict:
    """How many phases per job before Spark's ``barrier()`` cost dominates.

    A task's work has the law ``task_dist`` (default Exp(1)); with ``m``
    phases each phase is ``X / m`` (the same total work, split). For ``m = 1
    .. max_phases`` the table gives the mean job time with an ideal barrier
    and with Spark's polling barrier (period ``sync_poll``), and the sync
    share ``1 - E[D_ideal] / E[D_spark]`` (at least 0: a Monte Carlo estimate below 0 is reported as
    0); ``recommended`` is the largest ``m`` whose share stays at or below ``max_share``.

    Returns ``{"recommended": {...}, "curve": DataFrame}``.
    """
    import pandas as pd

    from .distributions import as_task_distribution, scaled

    k = check_int("tasks", tasks, low=1, high=10_000, high_name="10,000")
    law = as_task_distribution(task_dist)
    poll = check_positive("sync_poll", sync_poll, "(time units)")
    share_limit = check_probability("max_share", max_share, open_low=True, open_high=True)
    max_phases = check_int("max_phases", max_phases, low=1, high=1000, high_name="1,000")
    if k * max_phases * samples > 2 * 10**9:
        raise ParameterError(f"tasks x max_phases x samples must be at most 2e9 (got {k * max_phases * samples:.3g}): "
                             "lower max_phases or samples")
    rows = []
    for m in range(1, max_phases + 1):
        per_phase = scaled(law, 1.0 / m)
        ideal = phase_law(per_phase, k, m, "ideal")
        spark = phase_law(per_phase, k, m, "spark", poll, samples=samples, seed=seed) if m > 1 else ideal
        rows.append({"phases": m, "mean_job_ideal": ideal.mean_departure, "mean_job_spark": spark.mean_departure,
                     "spark_se": spark.departure_se or 0.0,
                     # the true share is >= 0 (a polling barrier never releases before the ideal one); a
                     # Monte Carlo estimate below 0 is noise (spark_se says how much) and is reported as 0
                     "sync_share": max(0.0, 1.0 - ideal.mean_departure / spark.mean_departure)})
    curve = pd.DataFrame(rows)
    ok = curve[curve.sync_share <= share_limit]
    best = int(ok.phases.max()) if len(ok) else 1
    return {"recommended": {"phases": best, "max_share": share_limit, "sync_poll": poll, "tasks": k,
                            "task_law": law.describe(),
                            "share_at_recommended": float(curve.loc[curve.phases == best, "sync_share"].item())},
            "curve": curve}


__all__ = ["PhaseLaw", "phase_ends", "phase_law", "plan_phases", "system_phase_law", "two_barrier_limit"]
