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

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ._validation import ParameterError, check_choice
from .ctmc import MAX_STATES, ctmc_stability
from .distributions import Exponential, as_task_distribution
from .order_stats import exp_order_stat_mean, exp_server_time_per_job, order_stat_mean, server_time_per_job
from .system import BarrierSystem

METHODS = ("auto", "closed-form", "ctmc", "order-statistics")


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
        ``"closed-form"``, ``"ctmc"`` or ``"order-statistics"``.
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
    return system.parallel_jobs / exp_order_stat_mean(system.needed, system.tasks,
                                                      system.task_rate)


def _limit(system: BarrierSystem, method: str, lam: float, total: float, useful: float,
           mean_task: float, law: dict, states=None) -> StabilityLimit:
    s = system.servers
    return StabilityLimit(s, system.tasks, system.needed, system.barriers, method,
                          float(lam), float(lam * total / s), float(lam * useful / s),
                          float(lam * system.needed * mean_task / s), law, states)


def stability_limit(servers: int, tasks: int, needed: int | None = None, barriers: int = 1,
                    task_rate: float = 1.0, task_dist=None, method: str = "auto",
                    max_states: int = MAX_STATES) -> StabilityLimit:
    """Maximum stable load of a 1- or 2-barrier (s,k,l) system.

    Parameters
    ----------
    servers, tasks, needed : int
        s, k and l (default k), ``1 <= l <= k <= s``.
    barriers : {1, 2}
    task_rate : float
        mu of exponential tasks (used when ``task_dist`` is None).
    task_dist : TaskDistribution, scipy.stats frozen law or spec string, optional
        A non-exponential task law; supported for 2-barrier systems through
        order statistics (MODEL.md section 3).
    method : {"auto", "closed-form", "ctmc", "order-statistics"}
        ``"auto"`` picks the closed form when there is one, the CTMC for
        1-barrier systems with ``l < k``, order statistics for non-exponential
        laws. Forcing another valid method is useful for cross-checks.
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
    system = BarrierSystem(servers, tasks, needed, barriers, task_rate)
    check_choice("method", method, METHODS)
    s, k, l_ = system.servers, system.tasks, system.needed
    law = as_task_distribution(task_dist, system.task_rate)
    exponential = isinstance(law, Exponential)
    mu = law.rate if exponential else None

    if method == "auto":
        if not exponential:
            method = "order-statistics"
        elif barriers == 1 and l_ < k:
            method = "ctmc"
        else:
            method = "closed-form"

    if method == "order-statistics":
        if barriers != 2:
            raise ParameterError("barriers must be 2 for method 'order-statistics' (got 1): the "
                                 "1-barrier limit for non-exponential tasks has no exact method; "
                                 "estimate it by simulation")
        total, useful = server_time_per_job(law, k, l_)
        lam = system.parallel_jobs / order_stat_mean(law, l_, k)
        return _limit(system, method, lam, total, useful, law.mean(), law.describe())

    if not exponential:
        raise ParameterError(f"method {method!r} needs exponential tasks; for task_dist "
                             f"{law.describe()['law']!r} use method 'order-statistics' "
                             "(2-barrier) or simulation (1-barrier)")
    total, useful = exp_server_time_per_job(k, l_, mu)
    if method == "ctmc":
        if barriers != 1:
            raise ParameterError("barriers must be 1 for method 'ctmc' (got 2): the 2-barrier "
                                 "system is an M/G/c queue with a closed form")
        res = ctmc_stability(s, k, l_, mu, max_states=max_states)
        return _limit(system, method, res.lambda_max, total, useful, 1 / mu, law.describe(),
                      res.states)
    # closed form
    if barriers == 2:
        lam = two_barrier_lambda_max(s, k, l_, mu)
    elif l_ == k:
        lam = one_barrier_lambda_max(s, k, mu)
    else:
        raise ParameterError(f"method 'closed-form' has no 1-barrier formula for needed < tasks "
                             f"(got needed = {l_}, tasks = {k}); use method 'ctmc' or 'auto'")
    return _limit(system, method, lam, total, useful, 1 / mu, law.describe())


#: Table I of the paper in LaTeX (exponential tasks; ``c = floor(s/k)``).
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


def table_one(servers: int, tasks: int, needed: int, task_rate: float = 1.0) -> pd.DataFrame:
    """The paper's Table I evaluated for one (s, k, l): symbolic and numeric.

    One row per system (1-/2-barrier, conventional and (s,k,l)) with the
    formulas (LaTeX), ``lambda_max``, ``rho_max``, ``rho_useful``, the task
    throughput, the method and the CTMC size where used.
    """
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


def stability_curve(servers, tasks, needed=None, barriers=1, task_rate=1.0,
                    task_dist=None) -> pd.DataFrame:
    """Stability limits over a grid: each argument may be a scalar or a list.

    Returns one row per combination (a tidy DataFrame) with the parameters and
    the fields of :class:`StabilityLimit`. Combinations with ``k > s`` or
    ``l > k`` are skipped (a sweep over ``k`` for several ``s`` is a grid with
    holes); any other bad value raises.
    """
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
