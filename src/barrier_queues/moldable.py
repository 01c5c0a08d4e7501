"""Moldable barrier jobs: the number of workers a job takes is chosen online (Appendix B, section 7).

The policies are a registry (:mod:`barrier_queues.moldable_policies`); the list below states each.

``s`` workers and one FIFO queue. A job of ``k`` tasks (iid task times, in task order) starts on ``m = min(n,
k)`` workers chosen when it reaches the head: it claims the ``m`` lowest-numbered free workers, its task ``i``
goes to claimed worker ``i mod m``, and each worker runs its tasks back to back (its *composite task*). With 1
barrier a worker is freed when its last task ends; with 2 barriers all ``m`` are held until the job departs
(its last task's end). Decision points are arrivals and every task end (releases of an instant first); at a
decision, while jobs wait and ``F >= 1`` workers are free, the policy starts the head with ``n`` workers or
leaves it waiting (which blocks the jobs behind it):

* ``take-fraction f``: ``n = 1`` if ``F = 1``, else ``max(1, ceil(F f))`` (the product in double precision,
  as the paper authors' forkulator computes it);
* ``take-random``: the same with a fresh ``U ~ Uniform[0, 1)`` per started job in place of ``f``;
* ``take-random-all``: each job draws a requirement ``n = min(k, max(1, ceil(s U)))``; the head starts only
  when ``F >= n``;
* ``fixed n`` (``requirement``; ours, the baseline of a fixed choice): every job needs ``min(k, n)`` workers and
  the head starts only when that many are free (``n = k``: the paper's system, job by job);
* ``patience W``: with ``l = F`` free workers, the speed-up of one more worker ``S = k/l - k/(l+1)`` (0 when
  all ``s`` are free) against the expected wait ``E`` for the next free worker (in mean task times): if ``S >
  E`` the head is deferred, else it starts on all ``F`` free workers. ``E`` over the ``b`` busy workers, with
  ``h_w`` a worker's unfinished tasks (the running one included): ``min`` = ``min h_w``, ``mean`` = ``sum h_w /
  b``, ``height`` = ``sum hh_w / b`` with ``hh_w = sum_{j<H} (H - j) x^j / j! / sum_{j<H} x^j / j!``, ``H`` the
  tasks dealt to the worker at its job's start ``t_w`` and ``x = mu (t - t_w)`` (0 with no busy worker).

The model runs in its scheduler room (:mod:`barrier_queues.schedulers.moldable`: the compiled kernel and its
plain-Python reference, :func:`moldable_run`, bit for bit), selected by ``BarrierSystem.moldable``, through
:func:`barrier_queues.simulate` and :func:`barrier_queues.saturated_throughput` like every other system: the
same statistics (warm-up, intervals, quantiles, drift and queue tests) and the same stability verdict
(:func:`barrier_queues.stability.moldable_limit`). This module is its front in the terms of the appendix:
:func:`moldable_system`, :func:`simulate_moldable` and :func:`saturated_moldable`.
"""

from __future__ import annotations

from . import moldable_policies
from ._validation import ParameterError, check_positive
from .moldable_policies import PATIENCE_WAITS
from .schedulers.moldable import MAX_DRAWS, moldable_compiled, moldable_run
from .system import BarrierSystem

#: the policies' names (the registry's: barrier_queues.moldable_policies)
POLICIES = moldable_policies.names()


def check_moldable(policy: str, take_fraction, patience_wait, requirement=None) -> tuple:
    """The policy's options as its registry entry reads them (:func:`barrier_queues.moldable_policies.
    check_options`); one clear error otherwise. Returns ``(take_fraction, patience_wait, requirement)``."""
    out = moldable_policies.check_options(policy, take_fraction=take_fraction, patience_wait=patience_wait,
                                          requirement=requirement)
    return out["take_fraction"], out["patience_wait"], out["requirement"]


def moldable_system(servers: int, tasks: int, policy: str, take_fraction: float | None = None,
                    patience_wait: str | None = None, barriers: int = 1, task_dist=None,
                    arrival_rate: float | None = None, arrival: str = "poisson",
                    requirement: int | None = None) -> BarrierSystem:
    """The :class:`~barrier_queues.BarrierSystem` of moldable jobs under ``policy`` (validated once, there):
    ``task_dist`` any task law (a spec string or a distribution; default Exp(1))."""
    return BarrierSystem(servers=servers, tasks=tasks, barriers=barriers, task_dist=task_dist,
                         arrival_rate=arrival_rate, arrival=arrival, moldable=policy, take_fraction=take_fraction,
                         patience_wait=patience_wait, requirement=requirement)


def _described(summary: dict, system: BarrierSystem) -> dict:
    return {"moldable": system.moldable, "take_fraction": system.take_fraction, "requirement": system.requirement,
            "patience_wait": system.patience_wait, **summary}


def simulate_moldable(servers: int, tasks: int, arrival_rate: float, policy: str, take_fraction: float | None = None,
                      patience_wait: str | None = None, barriers: int = 1, task_dist=None, arrival: str = "poisson",
                      jobs: int = 20_000, replications: int = 10, seed=None, level: float = 0.95,
                      requirement: int | None = None, allow_unstable: bool = False, workers: int | None = None) -> dict:
    """:func:`barrier_queues.simulate` of :func:`moldable_system`: its summary (mean waiting, sojourn, execution
    and ``mean_workers`` with intervals, quantiles, the stability verdict and tests) with the policy and its
    option in front. ``seed``: an integer or a ``numpy.random.SeedSequence``; ``workers``: processes."""
    from .simulate import simulate

    check_positive("arrival_rate", arrival_rate)
    system = moldable_system(servers, tasks, policy, take_fraction, patience_wait, barriers, task_dist,
                             arrival_rate, arrival, requirement)
    result = simulate(system, jobs=jobs, replications=replications, seed=seed, workers=workers, progress=False,
                      allow_unstable=allow_unstable)
    return _described(result.summary(level), system)


def saturated_moldable(servers: int, tasks: int, policy: str, take_fraction: float | None = None,
                       patience_wait: str | None = None, barriers: int = 1, task_dist=None, jobs: int = 20_000,
                       replications: int = 10, seed=None, level: float = 0.95, requirement: int | None = None,
                       workers: int | None = None) -> dict:
    """The stability limit of :func:`moldable_system` by simulation: :func:`barrier_queues.saturated_throughput`
    (every job waiting at time 0; the start rate after an MSER-5 warm-up on the start spacings, t intervals
    over replications), with ``rho_max = lambda_max k E[X] / s``. (Exponential tasks, small systems: the exact
    value is :func:`barrier_queues.moldable_ctmc.moldable_saturated_ctmc`.)"""
    from .saturated import saturated_throughput

    if replications < 2:
        raise ParameterError(f"replications must be at least 2 for a saturated moldable run (got {replications}): "
                             "its interval is over replications")
    system = moldable_system(servers, tasks, policy, take_fraction, patience_wait, barriers, task_dist,
                             requirement=requirement)
    return _described(saturated_throughput(system, jobs=jobs, replications=replications, seed=seed, workers=workers,
                                           progress=False, level=level), system)


__all__ = ["MAX_DRAWS", "PATIENCE_WAITS", "POLICIES", "check_moldable", "moldable_compiled", "moldable_run",
           "moldable_system", "saturated_moldable", "simulate_moldable"]
