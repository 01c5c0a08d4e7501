"""The stability limit of a system that no saturated run measures, from overloaded queueing runs.

A saturated run (:mod:`barrier_queues.saturated`) puts every job at time 0 and
measures the start rate of a backlog served in arrival order. Under a gang
clock's ``hold`` with requeues (:mod:`barrier_queues.clocks`) jobs leave and
return, so the limit is measured instead as the start rate of a queue that
grows through the whole run: arrivals at a rate above what any discipline
serves (a multiple of :func:`~barrier_queues.stability.holding_ceiling`).
"""

from __future__ import annotations

import numpy as np

from ._validation import ParameterError
from .clocks import enabled
from .load import offered_utilization
from .simulate import simulate
from .stability import holding_ceiling
from .statistics import t_interval, within
from .system import BarrierSystem


def overload_limit(system: BarrierSystem, jobs: int = 200_000, replications: int = 4, seed=None,
                   overload: float = 1.5, level: float = 0.95, workers: int | None = None) -> dict:
    """The stability limit of a system that no saturated run measures (a gang clock's ``hold`` with
    requeues, ``first-fit``, ...): the start rate of overloaded queueing runs.

    Jobs arrive at ``overload`` times the holding ceiling (:func:`holding_ceiling`, a rate no discipline
    passes), so the queue grows through the whole run and the system is always backlogged, as in a saturated
    run. Per replication ``lambda_max`` is the start rate between the 20 % and the 80 % quantiles of the
    times of the starts before the last arrival (the empty start and the drain left out); the pooled
    estimate is their mean with a t interval over the replications (two or more). ``rho_max`` is
    ``lambda_max E[work] / s``. Refused: a system that loses jobs (a clock that lets gangs leave: it never
    grows), and one in which a class starves in overload (a k started at less than half its share of the
    submissions between those quantiles, as first-fit's widest gangs: its limit is per class)."""
    if enabled(system) and (system.on_budget != "requeue" or system.requeue_limit is not None):
        raise ParameterError("on_budget must be 'requeue' without requeue_limit for an overload limit (got "
                             f"{system.on_budget!r}, limit {system.requeue_limit!r}): a system that loses jobs "
                             "does not grow, its lost share says what it turns away")
    ceiling = holding_ceiling(system)
    if ceiling is None:
        raise ParameterError("overload_limit needs a system whose holding ceiling is known (mean held work)")
    loaded = system.replace(arrival_rate=overload * ceiling)
    result = simulate(loaded, jobs=jobs, replications=replications, seed=seed, keep_jobs=True, allow_unstable=True,
                      workers=workers)
    rates, starved = [], []
    for r in result.replications:
        order = np.argsort(r.jobs["start"], kind="stable")
        order = order[r.jobs["start"][order] < r.jobs["arrival"].max()]      # (while the arrivals go on)
        a, b = int(0.2 * order.size), int(0.8 * order.size)
        starts = r.jobs["start"][order]
        rates.append((b - a) / (starts[b] - starts[a]))
        # a class served below half its share of the submissions starves: the start rate is then not a limit
        k = r.jobs["tasks"]
        for value in np.unique(k):
            submitted, served = float(np.mean(k == value)), float(np.mean(k[order[a:b]] == value))
            if served < 0.5 * submitted:
                starved.append({"tasks": int(value), "submitted_share": submitted, "started_share": served})
    if starved:
        raise ParameterError(f"a class starves in the overloaded runs ({starved[0]}): their start rate is not a "
                             "stability limit; judge the system by queueing runs and their per-class verdict")
    lam = float(np.mean(rates))
    per_rate = offered_utilization(loaded) / loaded.arrival_rate
    out = {"lambda_max": lam, "rho_max": lam * per_rate, "arrival_rate": loaded.arrival_rate, "jobs": jobs,
           "replications": replications, "level": level,
           "method": f"start rate of overloaded runs ({overload:g} x the holding ceiling), starts between the 20 % "
                     "and 80 % quantiles of the start times"}
    out["lambda_max_ci"] = within(t_interval(rates, level)) if len(rates) >= 2 else None
    out["rho_max_ci"] = [x * per_rate for x in out["lambda_max_ci"]] if out["lambda_max_ci"] else None
    return out


__all__ = ["overload_limit"]
