"""Offered load: the server time a system's jobs bring, and the arrival rate for a target load.

``rho = lambda E[server time per job] / s`` (Appendix A, section 1) is computed
here and only here, for every system :class:`~barrier_queues.BarrierSystem`
describes. The server time of a job is the time its tasks occupy workers:

* conventional jobs: ``k E[X]`` (plus ``k E[O]`` with the paper's iid Spark
  overhead ``O``, eq. 40, which lengthens every task);
* (s,k,l), knee and timeout release: ``E[sum_i min(x_i, D)]``
  (:mod:`barrier_queues.release`; ``l / mu`` for exponential tasks, eq. 13);
* phased jobs: until each task's last phase ends, ``barrier()`` waits
  included (:mod:`barrier_queues.phases`);
* non-barrier jobs of a hybrid system: ``k E[X]``.

A pmf of k mixes these with its probabilities; the placement (central queue
or batch sampling) and the event-accurate overhead (which delays starts but
occupies no worker) do not change them. :func:`arrival_rate_for` inverts
:func:`offered_utilization` (for the paper's overhead, whose mean depends on
lambda, by a root search).
"""

from __future__ import annotations

import math

from ._validation import ParameterError, check_positive
from .system import BarrierSystem, as_system


def _barrier_job(system: BarrierSystem, k: int, useful_only: bool = False) -> tuple[float, float]:
    """(E[work], E[useful]) of one barrier job of k tasks, without the paper's overhead.

    ``useful_only`` skips a Monte Carlo law whose work is not needed (returns NaN work).
    """
    if system.phases > 1 and useful_only:
        return float("nan"), k * system.phases * system.mean_task
    if system.phases > 1:
        from .phases import phase_law

        law = phase_law(system.task_dist, k, system.phases, system.sync, system.sync_poll or 1.0)
        return law.mean_work, law.mean_useful
    if system.release == "fixed" and (system.tasks_pmf is not None or system.needed == system.tasks):
        w = k * system.mean_task
        return w, w
    from .release import release_law

    r = release_law(system.replace(overhead=None) if system.overhead else system, k)
    return r.mean_work, r.mean_useful


def mean_work(system: BarrierSystem, arrival_rate: float | None = None,
              useful_only: bool = False) -> tuple[float, float] | None:
    """``(E[server time], E[useful server time])`` per job (time units), or None when unknown.

    ``arrival_rate`` overrides the system's (it sets the paper's overhead
    mean); None is returned for the paper's overhead with killed stragglers
    (no closed form is implemented for the order statistics of ``X + O``).
    """
    system = as_system(system)
    lam = system.arrival_rate if arrival_rate is None else arrival_rate
    extra = 0.0
    if system.overhead == "paper":
        if system.stragglers or system.release != "fixed":
            return None
        from .overhead import OverheadModel

        extra = OverheadModel(system.revive_interval, lam).mean()
    if system.workload is not None:
        return _workload_work(system)
    work = useful = 0.0
    p = system.barrier_fraction
    for k, pk in zip(system.ks, system.pk, strict=True):
        k = int(k)
        bw, bu = _barrier_job(system, k, useful_only) if p > 0 else (0.0, 0.0)
        nw = k * system.mean_task
        work += pk * (p * (bw + k * extra) + (1 - p) * (nw + k * extra))
        useful += pk * (p * (bu + k * extra) + (1 - p) * (nw + k * extra))
    return work, useful


def mean_held(system: BarrierSystem) -> float | None:
    """``E[worker-time held per job]`` (time units): what a job takes from the cluster under any discipline.

    A worker is held from a job's start until it is given back: with 1 barrier (and for non-barrier jobs)
    when its own task ends, so the held time is the job's work ``k E[X]``; with 2 barriers all k workers
    are given back together at the release, ``k E[D]`` (``D = X_(l:k)``, or the knee's or timeout's
    release time); a shared time holds k workers for ``T``: ``k E[T]``. ``s / mean_held`` is the ceiling
    no discipline passes (see :func:`barrier_queues.stability.holding_ceiling`). None where unknown (the
    paper's overhead, phased jobs with 2 barriers, a registered rule without a release law)."""
    system = as_system(system)
    if system.barriers == 1:
        w = mean_work(system)
        return None if w is None else w[0]
    if system.overhead == "paper" or system.phases > 1:
        return None
    if system.workload is not None:
        return _workload_work(system)[0]          # its work already counts 2-barrier jobs as held
    from .release import release_law
    from .rules import service_rule

    if system.barrier_fraction > 0 and service_rule(system).law != "barrier_queues.release:release_law":
        return None                               # a rule whose release law this library does not compute

    held = 0.0
    p = system.barrier_fraction
    for k, pk in zip(system.ks, system.pk, strict=True):
        k = int(k)
        barrier = k * release_law(system.replace(overhead=None) if system.overhead else system, k).mean_departure \
            if p > 0 else 0.0
        held += pk * (p * barrier + (1 - p) * k * system.mean_task)
    return held


def _workload_work(system: BarrierSystem) -> tuple[float, float]:
    """A workload's server time per job: ``sum_c p_c w_c`` with ``w_c = k_c E[X_c]`` (a shared time, a
    non-barrier job, or 1 barrier) or ``k_c E[max of k_c X_c]`` (2 barriers: every worker held to the end)."""
    from .order_stats import order_stat_mean

    work = useful = 0.0
    for c in system.workload:
        law = system.class_law(c)
        mean = float(law.mean())
        held = c.tasks * mean if c.shared or not c.barrier or system.barriers == 1 else \
            c.tasks * order_stat_mean(law, c.tasks, c.tasks)
        work += c.share * held
        useful += c.share * c.tasks * mean
    return work, useful


def offered_utilization(system: BarrierSystem, useful: bool = False) -> float | None:
    """``rho = lambda E[server time per job] / s``; None without an arrival rate or a known mean.

    ``useful``: the useful work only (completed tasks; for phased jobs the
    draws, without ``barrier()`` waits). None also where the mean would need
    a Monte Carlo law beyond its size limits.
    """
    system = as_system(system)
    if system.arrival_rate is None:
        return None
    try:
        w = mean_work(system, useful_only=useful)
    except ParameterError:
        return None
    return None if w is None else system.arrival_rate * w[1 if useful else 0] / system.servers


def arrival_rate_for(system: BarrierSystem, utilization: float) -> float:
    """The arrival rate lambda at which ``system`` offers ``utilization`` (inverse of :func:`offered_utilization`)."""
    system = as_system(system)
    rho = check_positive("utilization", utilization)
    if system.overhead == "paper":
        from ._solvers import brent_root

        if mean_work(system, 1.0) is None:
            raise ParameterError("overhead 'paper' with stragglers has no known mean work: give arrival_rate")

        def gap(log_lam):
            lam = math.exp(log_lam)
            return lam * mean_work(system, lam)[0] / system.servers - rho

        # rho(lambda) increases from 0 to infinity (the overhead's mean is bounded by R)
        lo, hi = -30.0, 30.0
        return math.exp(brent_root(gap, lo, hi, xtol=1e-14, rtol=1e-13))
    w = mean_work(system)
    if w is None:
        raise ParameterError(f"the mean work per job of this system is not known: give arrival_rate "
                             f"({system.kind()})")
    return rho * system.servers / w[0]


def at_utilization(system: BarrierSystem, utilization: float) -> BarrierSystem:
    """``system`` with the arrival rate that offers ``utilization``."""
    system = as_system(system)
    return system.replace(arrival_rate=arrival_rate_for(system, utilization))


def system_at_utilization(options: dict, utilization: float) -> BarrierSystem:
    """The system of ``options`` (:class:`BarrierSystem` keywords, no ``arrival_rate``) at ``utilization``.

    A system with one of Spark's overhead models cannot be described without
    an arrival rate (its offers follow the arrivals), so it is described at
    one job per mean task time first and then moved to the rate that offers
    ``utilization`` (:func:`at_utilization`). The command line and sweeps
    build their systems from a load through this function.
    """
    if options.get("arrival_rate") is not None:
        raise ParameterError("give at most one of arrival_rate and utilization (got both)")
    options = {k: v for k, v in options.items() if k != "arrival_rate"}
    if options.get("overhead") is not None:
        plain = BarrierSystem(**{k: v for k, v in options.items() if k not in ("overhead", "revive_interval")})
        options["arrival_rate"] = 1.0 / plain.mean_task
    return at_utilization(BarrierSystem(**options), utilization)


__all__ = ["arrival_rate_for", "at_utilization", "mean_held", "mean_work", "offered_utilization",
           "system_at_utilization"]
