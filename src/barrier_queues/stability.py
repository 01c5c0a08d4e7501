"""Stability limits of barrier systems: the paper's Table I and its extensions.

All results are the largest job arrival rate a system can sustain
(``lambda_max``, jobs per unit time), the corresponding total utilization
``rho_max = lambda_max E[server time per job] / s`` and useful utilization
``rho_useful = lambda_max E[useful server time per job] / s`` (killed
stragglers' time is not useful), and the task throughput
``lambda_max l E[X] / s`` (completed tasks per worker per mean task time,
section II-E).

Closed forms (exponential tasks, rate mu; paper section II):

==============  =====================================  ==========================
system          lambda_max                             method
==============  =====================================  ==========================
1-barrier       ``mu / (H_s - H_{s-k})``  (eq. 5)      closed-form
1-barrier l<k   stationary start rate of a CTMC        ctmc (section II-D)
2-barrier       ``floor(s/k) mu / (H_k - H_{k-l})``    closed-form (eqs. 3, 8)
2-barrier, F    ``floor(s/k) / E[X_(l:k)]``            order-statistics
==============  =====================================  ==========================
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from ._validation import ParameterError, check_choice, check_int
from .distributions import Exponential
from .order_stats import exp_order_stat_mean, exp_server_time_per_job, order_stat_mean, server_time_per_job
from .rules import limit_kind
from .system import BarrierSystem, as_system

METHODS = ("auto", "closed-form", "ctmc", "order-statistics", "quadrature", "monte-carlo")
#: the CTMC's default refusal threshold (feasible states), as in barrier_queues.ctmc.MAX_STATES
MAX_STATES = 12_000_000
#: known_limit uses the CTMC only up to this many feasible states (a quick answer before a simulation)
QUICK_CTMC_STATES = 300_000
#: the failure chain is enumerated state by state in Python: the guard uses it up to this size (timing: CHANGELOG)
FAILURE_CTMC_STATES = 5_000


@dataclass(frozen=True)
class StabilityLimit:
    """The stability limit of one system.

    Attributes
    ----------
    lambda_max : float
        Maximum stable job arrival rate (jobs per unit time).
    rho_max, rho_useful : float
        Maximum stable total and useful utilization (dimensionless).
    task_throughput : float
        Completed tasks per worker per mean task time at ``lambda_max``.
    method : str
        ``"closed-form"``, ``"ctmc"``, ``"order-statistics"``, ``"quadrature"``
        (timeout release) or ``"monte-carlo"`` (knee release, Spark
        ``barrier()``; then ``lambda_max_ci`` is a 95 % interval).
    states : int or None
        Reachable CTMC states when the CTMC was used.
    """

    servers: int
    tasks: int
    needed: int
    barriers: int
    method: str
    lambda_max: float
    rho_max: float
    rho_useful: float
    task_throughput: float
    task_law: dict
    states: int | None = None
    lambda_max_ci: tuple | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def one_barrier_lambda_max(servers: int, tasks: int, task_rate: float = 1.0) -> float:
    """Conventional 1-barrier limit ``mu / (H_s - H_{s-k})`` (paper eq. 5).

    When backlogged, each start leaves all s workers busy and the next start
    comes after ``X_(k:s)``, the time until k of s busy workers are free.
    """
    system = BarrierSystem(servers, tasks, task_rate=task_rate)
    return 1.0 / exp_order_stat_mean(system.tasks, system.servers, system.task_rate)


def two_barrier_lambda_max(servers: int, tasks: int, needed: int | None = None,
                           task_rate: float = 1.0) -> float:
    """2-barrier (s,k,l) limit ``floor(s/k) mu / (H_k - H_{k-l})`` (paper eqs. 2, 8).

    ``floor(s/k)`` jobs run at once, each holding its k workers for ``X_(l:k)``:
    an M/G/c queue with ``c = floor(s/k)``.
    """
    system = BarrierSystem(servers, tasks, needed, barriers=2, task_rate=task_rate)
    return system.parallel_jobs / exp_order_stat_mean(system.needed, system.tasks, system.task_rate)


def _limit(system: BarrierSystem, method: str, lam: float, total: float, useful: float, completed: float,
           states=None, ci=None) -> StabilityLimit:
    s = system.servers
    return StabilityLimit(s, system.tasks, system.needed, system.barriers, method, float(lam), float(lam * total / s),
                          float(lam * useful / s), float(lam * completed * system.mean_task / s),
                          system.task_dist.describe(), states, None if ci is None else tuple(ci))


def stability_limit(servers, tasks: int | None = None, needed: int | None = None, barriers: int = 1,
                    task_rate: float | None = None, task_dist=None, method: str = "auto",
                    max_states: int = MAX_STATES) -> StabilityLimit:
    """Maximum stable load of a barrier system.

    Parameters
    ----------
    servers : int or BarrierSystem
        s; or a whole system (then the other system arguments must be left out).
    tasks, needed : int
        k and l (default k), ``1 <= l <= k <= s``.
    barriers : {1, 2}
    task_rate : float
        mu of exponential tasks (default 1; or give ``task_dist``).
    task_dist : TaskDistribution, scipy.stats frozen law or spec string, optional
        A non-exponential task law; supported for 2-barrier systems through
        order statistics (Appendix A, section 3).
    method : str
        ``"auto"`` picks the closed form when there is one, the CTMC for
        1-barrier systems with ``l < k``, order statistics for other laws
        (2-barrier), quadrature for timeout release and Monte Carlo for knee
        release and Spark ``barrier()`` (2-barrier). Forcing another valid
        method is useful for cross-checks.
    max_states : int
        CTMC size limit (see :func:`barrier_queues.ctmc.ctmc_stability`).

    Returns
    -------
    StabilityLimit

    Examples
    --------
    >>> round(stability_limit(16, 4).rho_max, 6)
    0.900841
    >>> round(stability_limit(10, 10, 8, barriers=2).rho_useful, 4)
    0.3598
    """
    if isinstance(servers, BarrierSystem):
        if (tasks, needed, barriers, task_rate, task_dist) != (None, None, 1, None, None):
            raise ParameterError("give either a BarrierSystem or servers, tasks, ... (got both)")
        system = servers
    else:
        system = BarrierSystem(servers, tasks, needed, barriers, task_rate=task_rate, task_dist=task_dist)
    check_choice("method", method, METHODS)
    max_states = check_int("max_states", max_states, low=1)
    if system.moldable is not None:                     # moldable jobs: their own limit (moldable_limit)
        return _moldable_stability_limit(system, method)
    return _stability_limit(system, method, max_states)


def _stability_limit_with_failures(system: BarrierSystem, method: str) -> StabilityLimit:
    """The failure-aware limit (:func:`_failure_limit`, the one simulate's guard uses); ``rho_max`` in the unit of
    ``--utilization`` (offered task work); refused where no exact limit is known."""
    found = _failure_limit(system) if method == "auto" and system.tasks is not None else None
    if found is None:
        raise ParameterError("the stability limit with failures is known for one k of exponential tasks with "
                             "a fresh draw per attempt (2 barriers; 1 barrier without a cap, delay or restart "
                             "cost; plain tasks without a cap), with method 'auto' (got "
                             f"{system.kind()}, method {method!r}); estimate it with saturated_throughput")
    lam, how = found
    work = system.tasks * system.mean_task
    return _limit(system, how, lam, work, work, system.tasks)


def _moldable_stability_limit(system: BarrierSystem, method: str) -> StabilityLimit:
    """A moldable system's limit where :func:`moldable_limit` knows it exactly; refused otherwise."""
    value, name, exact = moldable_limit(system)
    if not exact or method not in ("auto", "closed-form"):
        raise ParameterError(f"the stability limit of moldable jobs is known in closed form for a work-conserving "
                             f"policy with 1 barrier and for fixed n >= k alone (got {system.kind()}, method "
                             f"{method!r}); estimate it with saturated_moldable (simulate --moldable ... --saturated)")
    work = system.tasks * system.mean_task            # a job's k tasks, whatever workers it takes
    return _limit(system, name, value, work, work, system.tasks)


def _stability_limit(system: BarrierSystem, method: str = "auto", max_states: int = MAX_STATES) -> StabilityLimit:
    """:func:`stability_limit` of a validated system (no argument checks)."""
    if system.failure_rate is not None:                 # the limit with failures, as simulate's guard uses it
        return _stability_limit_with_failures(system, method)
    if system.tasks_pmf is not None or system.barrier_fraction < 1 or system.placement != "central" \
            or system.overhead is not None:
        raise ParameterError("the stability limit is known for pure barrier jobs with a fixed tasks under the "
                             f"central queue without an overhead model (got {system.kind()}); estimate it with "
                             "saturated_throughput")
    s, k, l_ = system.servers, system.tasks, system.needed
    law = system.task_dist
    exponential = isinstance(law, Exponential)
    special = system.phases > 1 or system.release != "fixed"
    if method == "auto":
        if system.phases > 1:
            method = "order-statistics" if system.sync == "ideal" else "monte-carlo"
        elif system.release == "timeout":
            method = "quadrature"
        elif system.release == "knee":
            method = "monte-carlo"
        elif not exponential:
            method = "order-statistics"
        elif system.barriers == 1 and l_ < k:
            method = "ctmc"
        else:
            method = "closed-form"

    if special:
        if system.barriers != 2:
            raise ParameterError(f"barriers must be 2 for the {system.release} release or phases (got 1): the "
                                 "1-barrier limit has no exact method here; estimate it with saturated_throughput")
        if system.phases > 1:
            from .phases import system_phase_law, two_barrier_limit
            expected = "order-statistics" if system.sync == "ideal" else "monte-carlo"
            law_ = system_phase_law(system)
            work, useful, completed = law_.mean_work, law_.mean_useful, k * system.phases
        else:
            from .release import release_law, two_barrier_limit
            expected = {"timeout": "quadrature", "knee": "monte-carlo"}[system.release]
            law_ = release_law(system)
            work, useful, completed = law_.mean_work, law_.mean_useful, law_.mean_completed
        if method != expected:
            raise ParameterError(f"method must be {expected!r} or 'auto' for this system (got {method!r})")
        lim = two_barrier_limit(system)
        return _limit(system, method, lim["lambda_max"], work, useful, completed, ci=lim.get("lambda_max_ci"))

    if method in ("quadrature", "monte-carlo"):
        raise ParameterError(f"method {method!r} is for timeout or knee release and phases; use 'auto'")
    if method == "order-statistics":
        if system.barriers != 2:
            raise ParameterError("barriers must be 2 for method 'order-statistics' (got 1): the "
                                 "1-barrier limit for non-exponential tasks has no exact method; "
                                 "estimate it by simulation")
        total, useful = server_time_per_job(law, k, l_)
        lam = system.parallel_jobs / order_stat_mean(law, l_, k)
        return _limit(system, method, lam, total, useful, l_)

    if not exponential:
        raise ParameterError(f"method {method!r} needs exponential tasks; for task_dist "
                             f"{law.describe()['law']!r} use method 'order-statistics' "
                             "(2-barrier) or simulation (1-barrier)")
    mu = law.rate
    total, useful = exp_server_time_per_job(k, l_, mu)
    if method == "ctmc":
        if system.barriers != 1:
            raise ParameterError("barriers must be 1 for method 'ctmc' (got 2): the 2-barrier "
                                 "system is an M/G/c queue with a closed form")
        from .ctmc import solve

        res = solve(s, k, l_, mu, max_states=max_states)
        return _limit(system, method, res.lambda_max, total, useful, l_, res.states)
    # closed form
    if system.barriers == 2:
        lam = system.parallel_jobs / exp_order_stat_mean(l_, k, mu)
    elif l_ == k:
        lam = 1.0 / exp_order_stat_mean(k, s, mu)
    else:
        raise ParameterError(f"method 'closed-form' has no 1-barrier formula for needed < tasks "
                             f"(got needed = {l_}, tasks = {k}); use method 'ctmc' or 'auto'")
    return _limit(system, method, lam, total, useful, l_)


def known_limit(system: BarrierSystem) -> tuple[float, str] | None:
    """The exact maximum stable arrival rate of ``system`` and its method, when one is known quickly.

    Known for: pure non-barrier systems (work conservation, ``s / E[work]``);
    pure barrier jobs with a fixed k under the central queue without an
    overhead model: 1-barrier with exponential tasks (closed form; the CTMC up
    to 300,000 feasible states for ``l < k``), 2-barrier with any law
    (order statistics), timeout release (quadrature), ideal ``barrier()``
    phases (order statistics). None otherwise (Monte Carlo laws such as the
    knee are not exact, so a simulation is not refused on them).
    """
    system = as_system(system)
    if system.moldable is not None:
        value, method, exact = moldable_limit(system)
        return (value, method) if exact else None
    if system.failure_rate is not None:
        return _failure_limit(system)
    if system.overhead is not None or system.placement != "central" or system.workload is not None:
        return None
    if system.barrier_fraction == 0:
        from .load import mean_work

        return system.servers / mean_work(system)[0], "work-conservation"
    if system.barrier_fraction < 1 or system.tasks_pmf is not None:
        return None
    if limit_kind(system) != "exact":               # how each rule's limit is found: barrier_queues.rules
        return None
    if system.barriers == 1:
        if not isinstance(system.task_dist, Exponential):
            return None
        if system.needed < system.tasks:
            from .ctmc import count_states

            try:
                if count_states(system.servers, system.tasks, system.needed) > QUICK_CTMC_STATES:
                    return None
            except ParameterError:
                return None
    lim = _stability_limit(system)
    return lim.lambda_max, lim.method


def _failure_limit(system: BarrierSystem) -> tuple[float, str] | None:
    """With failures, exact for 2 barriers, one k, exponential tasks and different work
    (:func:`barrier_queues.failures.two_barrier_lambda_max`), for 1 barrier with also no cap, no delay and no
    restart cost (:func:`barrier_queues.failures.one_barrier_lambda_max`, small chains), and for plain
    exponential tasks without a cap (work conservation); else None (the drift test and saturated runs)."""
    from .failures import two_barrier_lambda_max

    if system.barrier_fraction == 0 and system.workload is None and system.max_attempts is None:
        if isinstance(system.task_dist, Exponential) and system.retry_work == "different" \
                and system.restart_cost == 0:           # memoryless: a task holds its worker Exp(mu) in all
            from .load import mean_work

            return system.servers / mean_work(system)[0], "work-conservation (retried exponential tasks)"
        return None
    if (system.barriers == 1 and system.barrier_fraction == 1 and system.tasks_pmf is None and system.workload is None
            and isinstance(system.task_dist, Exponential) and system.retry_work == "different"
            and system.restart_cost == 0 and system.resubmit_delay == 0 and system.max_attempts is None):
        from .failures import one_barrier_lambda_max

        try:
            lam = one_barrier_lambda_max(system.servers, system.tasks, system.task_dist.rate, system.failure_rate,
                                         max_states=FAILURE_CTMC_STATES)
        except ParameterError:
            return None
        return lam, "failures: CTMC of the backlogged 1-barrier system with failure transitions"
    if (system.barriers != 2 or system.barrier_fraction < 1 or system.tasks_pmf is not None
            or system.workload is not None or not isinstance(system.task_dist, Exponential)
            or system.retry_work != "different" or system.restart_cost > 0):
        return None
    return (two_barrier_lambda_max(system.servers, system.tasks, system.task_dist.rate, system.failure_rate,
                                   system.max_attempts), "failures: floor(s/k) / E[time a job holds its workers]")


def estimated_limit(system: BarrierSystem) -> tuple[float, str, tuple[float, float]] | None:
    """A Monte Carlo estimate of the maximum stable arrival rate, its method and 95 % interval, or None.

    For the systems whose limit :func:`known_limit` leaves open but whose job
    law without queueing is simulated in a fraction of a second (CHANGELOG): 2-barrier jobs
    with the knee release or with phases and Spark's polling ``barrier()``,
    pure barrier, fixed k, central queue, no overhead model. The simulator
    uses it to refuse a load clearly beyond the limit and to say when a load
    is too close to it to tell (:func:`stability_verdict`).
    Computed once per system (the arrival rate does not enter).
    """
    system = as_system(system)
    if system.moldable is not None:                     # (its bound or exact limit: moldable_limit)
        return None
    if (system.overhead is None and system.placement == "central" and system.failure_rate is None
            and system.scheduling == "fcfs" and system.release == "fixed" and system.phases == 1
            and (system.tasks_pmf is not None or system.workload is not None or 0 < system.barrier_fraction < 1)):
        return _saturated_limit(system.without_rate())
    if (system.overhead is not None or system.placement != "central" or system.barrier_fraction < 1
            or system.tasks_pmf is not None or system.workload is not None or limit_kind(system) != "monte-carlo"
            or system.failure_rate is not None):
        return None
    return _estimated_limit(system.without_rate())


#: the saturated run behind the guard of mixed FIFO workloads (several k, barrier and plain jobs, job classes)
GUARD_SATURATED_JOBS, GUARD_SATURATED_REPLICATIONS, GUARD_SATURATED_SEED = 20_000, 4, 20251201


@functools.lru_cache(maxsize=256)
def _saturated_limit(system: BarrierSystem) -> tuple[float, str, tuple[float, float]] | None:
    """FIFO with several k, or barrier and plain jobs, has no closed form: a short saturated run (4 x 20,000
    jobs, a fixed seed) estimates its limit, so that a load clearly beyond it is refused as a single k's is."""
    from .saturated import saturated_throughput

    try:
        est = saturated_throughput(system, jobs=GUARD_SATURATED_JOBS, replications=GUARD_SATURATED_REPLICATIONS,
                                   seed=GUARD_SATURATED_SEED, workers=1, progress=False)
    except ParameterError:
        return None
    lo, hi = est["lambda_max_ci"]
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    method = f"saturated simulation, fcfs, {GUARD_SATURATED_REPLICATIONS} x {GUARD_SATURATED_JOBS:,} jobs"
    value, lo, hi = float(est["lambda_max"]), float(lo), float(hi)
    ceiling = holding_ceiling(system)
    if ceiling is not None:                          # no discipline passes the holding ceiling
        if lo >= ceiling:                             # the short run cannot tell FIFO's limit from the ceiling
            return ceiling, ("holding ceiling s / E[worker-time held per job], an upper bound: the guard's short "
                             "saturated FIFO run did not tell FIFO's own limit, which may be lower"), \
                (ceiling, ceiling)
        value, hi = min(value, ceiling), min(hi, ceiling)
    return value, method, (lo, hi)


@functools.lru_cache(maxsize=256)
def _estimated_limit(system: BarrierSystem) -> tuple[float, str, tuple[float, float]] | None:
    try:
        lim = _stability_limit(system)
    except ParameterError:          # e.g. a Monte Carlo law beyond its size limits
        return None
    if lim.lambda_max_ci is None:
        return None
    return lim.lambda_max, lim.method, (float(lim.lambda_max_ci[0]), float(lim.lambda_max_ci[1]))


#: a Monte Carlo stability limit decides only this many half-widths of its 95 % interval away from the
#: estimate (about 4 standard errors: a stable load is refused with probability below 1e-4)
MC_LIMIT_MARGIN = 2.0


def stability_verdict(system: BarrierSystem) -> dict:
    """Where the system's arrival rate lies against its stability limit, when one is known or estimated.

    ``lambda_max``, ``method``, ``lambda_max_ci`` (Monte Carlo limits only)
    and ``verdict``: ``"below"``, ``"above"`` (at or above an exact limit, or
    :data:`MC_LIMIT_MARGIN` half-widths or more above a Monte Carlo
    estimate), ``"undecided"`` (within that margin of an estimate) or None
    (no limit known, the drift test of a run decides; or no arrival rate).
    """
    lam = system.arrival_rate
    if system.moldable is not None:
        value, method, exact = moldable_limit(system)
        above = lam is not None and lam >= value
        return {"lambda_max": value if exact or above else None, "method": method if exact or above else
                f"no limit known for this policy ({method}); the run's drift and queue tests judge it",
                "lambda_max_ci": None, "verdict": "above" if above else "below" if exact and lam is not None
                else None}
    from .clocks import enabled

    if enabled(system):
        # gang clocks change who starts when (a head that leaves unblocks the jobs behind it, a requeued gang
        # comes back): no limit of the system without them applies; the run's drift and queue tests judge it
        return {"lambda_max": None, "method": "gang clocks change who starts when, so no limit of the system "
                "without them applies; the run's drift and queue tests judge it (a system that loses jobs "
                "instead of growing is stable, and reports its lost share)",
                "lambda_max_ci": None, "verdict": None}
    if system.node_size is not None and system.node_size > 1:
        # a gang must fit on nodes: fragmentation lowers every limit of the system without them, so none applies;
        # the packing ceiling on the nodes (or, where the gangs' held times are not known, the holding ceiling)
        # is passed by no discipline
        from .packing import system_packing_ceiling

        packed = system_packing_ceiling(system)
        ceiling = packed if packed is not None else _ceiling(system)
        above = lam is not None and ceiling is not None and lam >= ceiling
        name = (f"packing ceiling on nodes of {system.node_size} (the configuration LP)" if packed is not None else
                "holding ceiling s / E[worker-time held per job]")
        return {"lambda_max": ceiling if above else None,
                "method": f"{name} (no discipline passes it)" if above else
                f"nodes of {system.node_size} workers lower the limits of the system without them (a gang must fit "
                "on a node): the run's drift and queue tests judge it",
                "lambda_max_ci": None, "verdict": "above" if above else None}
    exact = known_limit(system)
    if exact is not None:
        return {"lambda_max": exact[0], "method": exact[1], "lambda_max_ci": None,
                "verdict": None if lam is None else "above" if lam >= exact[0] else "below"}
    estimate = estimated_limit(system)
    if estimate is None:
        ceiling = _ceiling(system)
        if lam is not None and ceiling is not None and lam >= ceiling:      # no discipline passes it
            return {"lambda_max": ceiling, "method": "holding ceiling s / E[worker-time held per job] (no "
                    "discipline passes it)", "lambda_max_ci": None, "verdict": "above"}
        return {"lambda_max": None, "method": None, "lambda_max_ci": None, "verdict": None}
    value, method, (lo, hi) = estimate
    margin = MC_LIMIT_MARGIN * (hi - lo) / 2
    verdict = (None if lam is None else "above" if lam >= value + margin else "below" if lam <= value - margin
               else "undecided")
    return {"lambda_max": value, "method": method, "lambda_max_ci": [lo, hi], "verdict": verdict}


def moldable_limit(system: BarrierSystem) -> tuple[float, str, bool]:
    """The stability limit of moldable jobs (:mod:`barrier_queues.schedulers.moldable`): ``(lambda, method,
    exact)``. Every policy serves each job's ``k`` tasks, so ``s / (k E[X])`` bounds them all; a
    work-conserving policy (take-fraction, take-random) with 1 barrier leaves no worker idle while jobs wait
    and reaches it (exact). ``fixed`` with ``n >= k`` (and ``k <= s``) is the paper's rigid system, job by job:
    its known limit (:func:`known_limit`). Otherwise the bound, not exact (``exact`` False)."""
    from .moldable_policies import POLICIES

    ceiling = system.servers / (system.tasks * system.mean_task)
    if system.moldable == "fixed" and system.requirement >= system.tasks <= system.servers:
        rigid = known_limit(system.replace(moldable=None))
        if rigid is not None:
            return rigid[0], f"{rigid[1]} (fixed n >= k: the paper's rigid jobs, job by job)", True
    if POLICIES[system.moldable].work_conserving and system.barriers == 1:
        return ceiling, "work conservation: a work-conserving policy with 1 barrier serves s / (k E[X])", True
    return ceiling, "s / (k E[X]) bounds every policy: each job's k tasks are served", False


def holding_ceiling(system: BarrierSystem) -> float | None:
    """``s / E[worker-time held per job]`` (jobs per unit time): the arrival rate no discipline can pass.

    Every job takes its held worker-time from the cluster whatever the order of starts
    (:func:`barrier_queues.load.mean_held`): with 1 barrier that is its work, so the ceiling is the offered
    load 1; with 2 barriers a job holds its k workers until its release, ``k E[X_(l:k)]``, so in units of
    offered load (task work) the ceiling is ``E[work] / E[held]`` < 1 (s = 8, k = 2 or 8 equally likely,
    exponential tasks: 5 / 12.37 = 0.404). None when unknown."""
    from .load import mean_held

    try:
        held = mean_held(system.without_rate() if system.overhead is None else system)
    except (ParameterError, TypeError, ValueError):
        return None
    return float(system.servers / held) if held is not None and held > 0 else None


def _ceiling(system: BarrierSystem) -> float | None:
    return holding_ceiling(system)


def stability_error(system: BarrierSystem) -> str | None:
    """The message for an arrival rate at or above the stability limit (:func:`stability_verdict`), else None."""
    v = stability_verdict(system)
    if v["verdict"] != "above":
        return None
    where = (f"lambda_max = {v['lambda_max']:.6g} ({v['method']})" if v["lambda_max_ci"] is None else
             f"lambda_max = {v['lambda_max']:.6g} ({v['method']}, 95 % interval [{v['lambda_max_ci'][0]:.6g}, "
             f"{v['lambda_max_ci'][1]:.6g}])")
    return (f"arrival_rate must be below the stability limit {where} for this system (got "
            f"{system.arrival_rate:.6g}): the queue would grow without bound; lower it, or pass "
            "allow_unstable=True (--allow-unstable) to simulate anyway")


#: Table I of the paper in LaTeX (exponential tasks; ``c = floor(s/k)``), keyed by (barriers, variant); the
#: book's Appendix A shows them as mathematics.
#:
#: :meta hide-value:
TABLE_ONE_FORMULAS = {
    ("1-barrier", "conventional"): {
        "lambda_max": r"\frac{\mu}{H_s - H_{s-k}}",
        "rho_max": r"\frac{k}{s\,(H_s - H_{s-k})}",
        "rho_useful": r"\frac{k}{s\,(H_s - H_{s-k})}",
    },
    ("1-barrier", "(s,k,l)"): {
        "lambda_max": r"\text{CTMC (section II-D)}",
        "rho_max": r"\frac{\lambda_{\max}\, l}{s\,\mu}",
        "rho_useful": r"\frac{\lambda_{\max}\,(l - (k-l)(H_k - H_{k-l}))}{s\,\mu}",
    },
    ("2-barrier", "conventional"): {
        "lambda_max": r"\frac{c\,\mu}{H_k}",
        "rho_max": r"\frac{c\,k}{s\,H_k}",
        "rho_useful": r"\frac{c\,k}{s\,H_k}",
    },
    ("2-barrier", "(s,k,l)"): {
        "lambda_max": r"\frac{c\,\mu}{H_k - H_{k-l}}",
        "rho_max": r"\frac{c\,l}{s\,(H_k - H_{k-l})}",
        "rho_useful": r"\frac{c\,(l - (k-l)(H_k - H_{k-l}))}{s\,(H_k - H_{k-l})}",
    },
}


def table_one(servers: int, tasks: int, needed: int, task_rate: float = 1.0):
    """The paper's Table I evaluated for one (s, k, l): symbolic and numeric.

    One row per system (1-/2-barrier, conventional and (s,k,l)) with the
    formulas (LaTeX), ``lambda_max``, ``rho_max``, ``rho_useful``, the task
    throughput, the method and the CTMC size where used.
    """
    import pandas as pd

    rows = []
    for (barrier_name, variant), formulas in TABLE_ONE_FORMULAS.items():
        b = 1 if barrier_name == "1-barrier" else 2
        l_ = tasks if variant == "conventional" else needed
        lim = stability_limit(servers, tasks, l_, b, task_rate)
        rows.append({
            "system": barrier_name, "variant": variant, "needed": lim.needed,
            "lambda_max formula": f"${formulas['lambda_max']}$",
            "rho_max formula": f"${formulas['rho_max']}$",
            "rho_useful formula": f"${formulas['rho_useful']}$",
            "lambda_max": lim.lambda_max, "rho_max": lim.rho_max,
            "rho_useful": lim.rho_useful, "task_throughput": lim.task_throughput,
            "method": lim.method, "states": lim.states,
        })
    table = pd.DataFrame(rows)
    table["states"] = table["states"].astype("Int64")
    return table


def stability_curve(servers, tasks, needed=None, barriers=1, task_rate=None, task_dist=None):
    """Stability limits over a grid: each argument may be a scalar or a list.

    Returns one row per combination (a tidy DataFrame) with the parameters and
    the fields of :class:`StabilityLimit`. Combinations with ``k > s`` or
    ``l > k`` are skipped (a sweep over ``k`` for several ``s`` is a grid with
    holes); any other bad value raises.
    """
    import pandas as pd

    rows = []
    for s in np.atleast_1d(servers):
        for k in np.atleast_1d(tasks):
            if k > s:
                continue
            ls = [k] if needed is None else np.atleast_1d(needed)
            for l_ in ls:
                if l_ > k:
                    continue
                for b in np.atleast_1d(barriers):
                    lim = stability_limit(int(s), int(k), int(l_), int(b), task_rate, task_dist)
                    row = lim.to_dict()
                    row.pop("task_law")
                    rows.append(row)
    return pd.DataFrame(rows)


def redundancy_gain(servers: int, tasks: int, task_dist=None) -> dict:
    """How much useful load a 2-barrier (s,k,l) system gains by killing stragglers (paper Fig. 3).

    For every l = 1..k the useful utilization limit ``rho_useful(l)``; returns
    the best ``l``, its ``rho_useful``, the conventional (l = k) value and the
    gain ``rho_useful(best) / rho_useful(k)``, plus the whole curve.
    """
    curve = stability_curve(servers, tasks, list(range(1, int(tasks) + 1)), barriers=2, task_dist=task_dist)
    best = curve.loc[curve.rho_useful.idxmax()]
    conventional = float(curve.loc[curve.needed == tasks, "rho_useful"].item())
    return {"best_needed": int(best.needed), "best_rho_useful": float(best.rho_useful),
            "conventional_rho_useful": conventional, "gain": float(best.rho_useful) / conventional, "curve": curve}


def bimodal_gain_grid(servers: int, tasks: int, probs, ratios, fast_rate: float = 1.0):
    """:func:`redundancy_gain` over bimodal task laws: rate ``fast_rate`` with probability ``p``, else
    ``fast_rate / ratio`` (a two-phase hyperexponential; the paper's Fig. 3 right law was lost).

    One row per (p, ratio): ``best_needed``, ``gain``, the conventional and best useful utilization, and
    the law's squared coefficient of variation ``cv2``.
    """
    import pandas as pd

    from .distributions import HyperExponential

    rows = []
    for p in probs:
        for ratio in ratios:
            law = HyperExponential.bimodal(float(p), fast_rate, fast_rate / float(ratio))
            g = redundancy_gain(servers, tasks, law)
            mean = law.mean()
            second = float(np.sum(law.probs * 2 / law.rates**2))
            rows.append({"p": float(p), "ratio": float(ratio), "best_needed": g["best_needed"], "gain": g["gain"],
                         "conventional_rho_useful": g["conventional_rho_useful"],
                         "best_rho_useful": g["best_rho_useful"], "cv2": second / mean**2 - 1})
    return pd.DataFrame(rows)
