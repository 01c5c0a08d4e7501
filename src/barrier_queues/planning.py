"""Planning with the bounds, and how the bounds compare with simulation (paper sections III and V).

:func:`plan` answers "which k (and l) should my jobs use?" from the bounds
and models of :mod:`barrier_queues.bounds` (with simulation on request);
:func:`bounds_versus_simulation` and :func:`random_point_check` put the
bounds beside simulated quantiles (Figs. 7-9 and the random-point check).
:mod:`barrier_queues.bounds` itself is theory only.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ._validation import ParameterError, check_choice, check_int, check_positive, check_probability
from .bounds import FORMS, BoundProblem, bound, problem_bound, spacing_model, two_barrier_mean_waiting
from .simulate import simulate, simulate_many
from .statistics import QUANTILES
from .system import BarrierSystem

#: plan answers within seconds up to this many servers (timings: CHANGELOG) and refuses beyond
PLAN_MAX_SERVERS = 100_000
#: plan evaluates every k up to this many servers, a logarithmic grid plus refinement beyond
PLAN_ALL_K = 128
#: the most candidate (k, l) pairs plan simulates
PLAN_MAX_SIMULATED = 200


def _plan_candidates(servers: int, barriers: int) -> list[int]:
    if barriers == 2:
        divisors = [k for k in range(1, math.isqrt(servers) + 1) if servers % k == 0]
        ks = sorted(set(divisors + [servers // k for k in divisors]))
        if len(ks) <= PLAN_ALL_K:
            return ks
        idx = np.unique(np.round(np.geomspace(1, len(ks), PLAN_ALL_K)).astype(int) - 1)
        return [ks[i] for i in idx]
    if servers <= PLAN_ALL_K:
        return list(range(1, servers + 1))
    return sorted(set(np.unique(np.round(np.geomspace(1, servers, PLAN_ALL_K)).astype(int)).tolist()))


def _plan_point(servers: int, k: int, rho: float, eps: float, form: str, barriers: int,
                min_needed_fraction: float) -> tuple[list, list]:
    """The rows and systems of one k: the bound (1 barrier) or the M/G/c model for every allowed l (2 barriers)."""
    mu = k / servers
    rows, systems = [], []
    if barriers == 1:
        system = BarrierSystem(servers=servers, tasks=k, arrival_rate=rho, task_rate=mu)
        try:
            b = bound(system, eps, form)
        except ParameterError:
            return rows, systems                 # the bound needs E[spacing] < 1 / lambda
        rows.append({"tasks": k, "needed": k, "k/s": k / servers, "sojourn_bound": b.sojourn_quantile,
                     "waiting_bound": b.waiting_quantile})
        systems.append(system)
        return rows, systems
    for l_ in range(max(1, math.ceil(min_needed_fraction * k - 1e-9)), k + 1):
        try:
            approx = two_barrier_mean_waiting(servers, k, rho, l_, mu)
        except ParameterError:
            continue
        rows.append({"tasks": k, "needed": l_, "k/s": k / servers, "mean_sojourn_model": approx["mean_sojourn"],
                     "model": approx["method"]})
        systems.append(BarrierSystem(servers=servers, tasks=k, needed=l_, barriers=2, arrival_rate=rho, task_rate=mu))
    return rows, systems


def _evaluate(ks, show: bool, **point) -> tuple[list, list]:
    rows, systems = [], []
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(ks), desc="plan: k", leave=False)
    for k in ks:
        r, sy = _plan_point(k=k, **point)
        rows += r
        systems += sy
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return rows, systems


def _simulate_curve(curve, systems, key: str, barriers: int, eps: float, jobs: int, replications: int, seed,
                    show: bool):
    """Add simulated columns to the plan's curve; returns ``(curve, key)`` with the criterion to minimise."""
    if len(systems) > PLAN_MAX_SIMULATED:
        raise ParameterError(f"simulate_jobs needs at most {PLAN_MAX_SIMULATED} candidate (k, l) pairs "
                             f"(got {len(systems)}); raise min_needed_fraction or simulate a few k directly")
    results = simulate_many(systems, jobs=jobs, replications=replications, seed=seed, progress=show,
                            allow_unstable=True)
    q = next((x for x in QUANTILES if abs(x - (1 - eps)) < 1e-12), None)
    sims = [r.summary() for r in results]
    curve["mean_sojourn_sim"] = [x["mean_sojourn"] for x in sims]
    if q is not None:
        curve["sojourn_quantile_sim"] = [x["quantiles"]["sojourn"][q] for x in sims]
    curve["stable_sim"] = [x["stable"] for x in sims]
    if barriers == 1 and q is not None:
        key = "sojourn_quantile_sim"
    elif barriers == 2:
        key = "mean_sojourn_sim"
    curve = curve[curve["stable_sim"]] if curve["stable_sim"].any() else curve
    return curve, key


#: the fewest jobs per replication a plan simulates: a mean (2 barriers), or 100 / epsilon for the quantile
PLAN_MIN_JOBS = 1_000


def plan_min_jobs(barriers: int, eps: float) -> int:
    """The fewest simulated jobs per candidate a plan accepts (:data:`PLAN_MIN_JOBS`, or ``ceil(100 /
    epsilon)`` for the 1-barrier quantile criterion)."""
    return max(PLAN_MIN_JOBS, math.ceil(100 / eps)) if barriers == 1 else PLAN_MIN_JOBS


def plan(servers: int, utilization: float, epsilon: float = 0.01, barriers: int = 1, form: str = "gigi",
         simulate_jobs: int = 0, replications: int = 10, seed=None, min_needed_fraction: float = 1.0,
         progress: bool | None = None) -> dict:
    """The degree of parallelism k (and l for 2-barrier systems) that minimises delay.

    Uses the paper's scaling (Appendix A, section 6): a job is a fixed amount of
    work split into k tasks of mean ``s/k`` (``mu = k/s``), so ``rho =
    lambda``. Fewer tasks mean longer tasks; more tasks mean more blocking.

    * 1-barrier: the ``1 - epsilon`` sojourn quantile bound for every stable
      k (and, with ``simulate_jobs > 0``, the simulated quantile with its CI);
      the recommendation minimises the bound (or the simulation when run).
    * 2-barrier: the mean sojourn time of the M/G/c model
      (:func:`~barrier_queues.bounds.two_barrier_mean_waiting`) for every k dividing s and every l,
      plus simulation on request; the recommendation minimises it. Only
      ``l >= min_needed_fraction * k`` is considered (default: conventional
      jobs): with exponential tasks ``l = 1`` always wins on delay, at the
      price of discarding almost all the work (paper section II-E).

    Bounded work: every k for ``s <= 128``; beyond, 128 values of k on a
    logarithmic grid, then 128 evenly spaced k between the best one's
    neighbours (every k when they are close).
    A progress bar shows on a terminal (``progress``).

    Returns ``{"recommended": {...}, "curve": DataFrame}``.
    """
    import pandas as pd

    servers = BarrierSystem(servers=servers, tasks=1, arrival_rate=1.0).servers       # validates servers
    if servers > PLAN_MAX_SERVERS:                       # a size guard before any work (each k's bound grows with s)
        raise ParameterError(f"servers must be at most {PLAN_MAX_SERVERS:,} for plan (got {servers:,}): each "
                             "candidate k costs one bound, whose set-up grows with s; call bounds.bound for a "
                             "few k directly")
    rho = check_positive("utilization", utilization)
    if rho >= 1:
        raise ParameterError(f"utilization must be a number with 0 < utilization < 1 (got {rho!r})")
    check_choice("barriers", barriers, (1, 2))
    check_choice("form", form, FORMS)
    eps = check_probability("epsilon", epsilon, open_low=True, open_high=True)
    check_probability("min_needed_fraction", min_needed_fraction, open_low=True)
    simulate_jobs = check_int("simulate_jobs", simulate_jobs, low=0)
    least = plan_min_jobs(barriers, eps)
    if 0 < simulate_jobs < least:
        why = (f"the 1 - epsilon = {1 - eps:g} quantile of the sojourn needs about 100 / epsilon jobs" if barriers == 1
               else "a mean over fewer jobs says nothing about the steady state")
        raise ParameterError(f"simulate_jobs must be 0 or at least {least:,} (got {simulate_jobs:,}): {why}")
    show = sys.stderr.isatty() if progress is None else progress
    point = {"servers": servers, "rho": rho, "eps": eps, "form": form, "barriers": barriers,
             "min_needed_fraction": min_needed_fraction}
    key = "sojourn_bound" if barriers == 1 else "mean_sojourn_model"
    candidates = _plan_candidates(servers, barriers)
    rows, systems = _evaluate(candidates, show, **point)
    if rows and barriers == 1 and servers > PLAN_ALL_K:      # refine between the best k's grid neighbours
        best_k = min(rows, key=lambda r: r[key])["tasks"]
        i = candidates.index(best_k)
        lo, hi = candidates[max(i - 1, 0)], candidates[min(i + 1, len(candidates) - 1)]
        finer = np.unique(np.round(np.linspace(lo, hi, PLAN_ALL_K)).astype(int)).tolist()
        more_rows, more_systems = _evaluate([k for k in finer if k not in candidates], show, **point)
        rows += more_rows
        systems += more_systems
    if not rows:
        raise ParameterError(f"utilization = {rho} is beyond the stability limit of every k for servers = {servers}")
    order = np.argsort([r["tasks"] * (servers + 1) + r["needed"] for r in rows], kind="stable")
    curve = pd.DataFrame([rows[i] for i in order])
    if simulate_jobs:
        curve, key = _simulate_curve(curve, [systems[i] for i in order], key, barriers, eps, simulate_jobs,
                                     replications, seed, show)
    best = curve.loc[curve[key].idxmin()]
    return {"recommended": {"tasks": int(best.tasks), "needed": int(best.needed), "criterion": key,
                            "value": float(best[key])},
            "curve": curve.reset_index(drop=True), "evaluated": int(len(rows)),
            "grid": "every k" if servers <= PLAN_ALL_K or barriers == 2 and len(candidates) < PLAN_ALL_K
            else f"{PLAN_ALL_K} k on a logarithmic grid, refined around the best"}


def bounds_versus_simulation(configs: list, epsilon: float, jobs: int = 50_000, replications: int = 10,
                             seed=None, forms=FORMS, progress: bool | None = False):
    """Bounds and simulation of each configuration, one row per configuration.

    Columns: ``waiting_bound_<form>``, ``sojourn_bound_<form>``,
    ``service_bound`` (the ``1 - epsilon`` quantile of the largest task time);
    from simulation (:func:`barrier_queues.simulate_many`; ``epsilon`` must be
    0.5, 0.1, 0.01 or 0.001) the quantiles ``waiting_sim``, ``sojourn_sim``,
    ``execution_sim`` with 95 % intervals (``*_ci``), the means ``mean_*`` with
    intervals, and the tightness ``sojourn_bound_gigi / sojourn_sim`` (and
    ``waiting_tightness``, the same for the waiting time: infinite where the
    simulated quantile is 0, i.e. at light load most jobs do not wait).
    """
    import pandas as pd

    q = 1 - check_probability("epsilon", epsilon, open_low=True, open_high=True)
    key = next((x for x in QUANTILES if abs(x - q) < 1e-12), None)
    if key is None:
        raise ParameterError(f"epsilon must be one of 0.5, 0.1, 0.01, 0.001 to compare with simulated "
                             f"quantiles (got {epsilon!r})")
    results = simulate_many(configs, jobs=jobs, replications=replications, seed=seed, progress=progress)
    rows = []
    for c, res in zip(configs, results, strict=True):
        row = {}
        problem = BoundProblem(c)               # theta* and the service quantile solved once
        for form in forms:
            b = problem_bound(problem, epsilon, form)
            row[f"waiting_bound_{form}"] = b.waiting_quantile
            row[f"sojourn_bound_{form}"] = b.sojourn_quantile
            row["service_bound"] = b.service_quantile
        summary = res.summary()
        for metric in ("waiting", "sojourn", "execution"):
            row[f"{metric}_sim"] = summary["quantiles"][metric][key]
            row[f"{metric}_sim_ci"] = summary["quantile_ci"][metric][key]
            row[f"mean_{metric}"] = summary[f"mean_{metric}"]
            row[f"mean_{metric}_ci"] = summary["ci"][metric]
        row["utilization_sim"] = summary["utilization"]
        row["stable_sim"] = summary["stable"]
        if "sojourn_bound_gigi" in row:
            row["tightness"] = row["sojourn_bound_gigi"] / row["sojourn_sim"]
            row["waiting_tightness"] = (row["waiting_bound_gigi"] / row["waiting_sim"] if row["waiting_sim"] > 0
                                        else float("inf"))
        rows.append(row)
    return pd.DataFrame(rows)


def random_points(n: int, seed, max_load: float = 0.95, min_load: float = 0.1) -> tuple[list, list]:
    """``n`` random 1-barrier systems the bounds cover: s in 2..32; pure barrier (fixed k), hybrid (random
    barrier fraction) or heterogeneous (two values of k); load ``lambda E[spacing]`` uniform in
    ``[min_load, max_load]`` (for pure barrier jobs, the fraction of the stability limit). Returns
    ``(systems, loads)``."""
    rng = np.random.default_rng(seed)
    systems, loads = [], []
    while len(systems) < n:
        s = int(rng.integers(2, 33))
        kind = rng.choice(["barrier", "hybrid", "heterogeneous"])
        kwargs = {"servers": s}
        if kind == "heterogeneous":
            k1, k2 = sorted(rng.choice(np.arange(1, s + 1), size=2, replace=False).tolist())
            q = float(rng.uniform(0.1, 0.9))
            kwargs["tasks_pmf"] = {int(k1): q, int(k2): 1 - q}
        else:
            kwargs["tasks"] = int(rng.integers(1, s + 1))
            if kind == "hybrid":
                kwargs["barrier_fraction"] = float(rng.uniform(0.05, 0.95))
        mean_spacing = spacing_model(BarrierSystem(arrival_rate=1.0, **kwargs)).mean()
        load = float(rng.uniform(min_load, max_load))
        systems.append(BarrierSystem(arrival_rate=load / mean_spacing, **kwargs))
        loads.append(load)
    return systems, loads


def random_point_check(n: int = 50, seed=20251214, jobs: int = 100_000, replications: int = 10,
                       max_load: float = 0.95, epsilons=(1e-2, 1e-3), forms=FORMS, refine=(8, 50),
                       progress: bool | None = False):
    """Bounds against simulation at ``n`` random points (:func:`random_points`), with the margins.

    One row per point, epsilon, form and metric (waiting, sojourn): the
    bound, the simulated quantile and its 95 % interval (t over
    ``replications``), the margin ``bound / simulated quantile`` and the
    ``verdict``: ``below`` (the interval lies below the bound), ``violation``
    (it lies above: the bound fails) or ``tight`` (it contains the bound, so
    the simulation cannot tell them apart). A point with a ``tight`` or
    ``violation`` row is simulated again with ``refine`` times the jobs
    (fixed seeds) and judged on the last run: a real violation persists,
    while a wide interval of a correlated heavy-load run shrinks to one side.
    ``violation`` (bool) repeats ``verdict == "violation"``; ``refined`` says
    which points needed a longer run. Near the stability limit the GI|GI bound
    is nearly exact for jobs of k close to s, and ``tight`` rows remain there.
    """
    import pandas as pd

    systems, loads = random_points(n, seed, max_load)
    results = simulate_many(systems, jobs=jobs, replications=replications, seed=seed, progress=progress)

    def rows_for(i, system, summary, used_jobs, refined):
        out = []
        for eps in epsilons:
            q = next(x for x in QUANTILES if abs(x - (1 - eps)) < 1e-12)
            for form in forms:
                b = bound(system, eps, form)
                for metric, limit in (("waiting", b.waiting_quantile), ("sojourn", b.sojourn_quantile)):
                    est = summary["quantiles"][metric][q]
                    lower, upper = summary["quantile_ci"][metric][q]
                    verdict = "below" if upper <= limit else "violation" if lower > limit else "tight"
                    out.append({"point": i, "servers": system.servers, "kind": system.kind(), "load": loads[i],
                                "epsilon": eps, "form": form, "metric": metric, "bound": limit, "simulated": est,
                                "simulated_lower": lower, "simulated_upper": upper,
                                "margin": limit / est if est > 0 else float("inf"), "verdict": verdict,
                                "violation": verdict == "violation", "refined": refined, "jobs": used_jobs})
        return out

    rows = []
    for i, (system, res) in enumerate(zip(systems, results, strict=True)):
        summary, used, refined = res.summary(), jobs, False
        for factor in refine:
            if all(r["verdict"] == "below" for r in rows_for(i, system, summary, used, refined)):
                break
            refined, used = True, jobs * factor
            summary = simulate(system, jobs=used, replications=replications,
                               seed=np.random.SeedSequence([seed, i, factor]),
                               progress=False).summary()
        rows += rows_for(i, system, summary, used, refined)
    return pd.DataFrame(rows)


def plan_gang(servers: int, work: float, failure_rate: float, arrival_rate: float, ks=None,
              checkpoint_interval: float | None = None, checkpoint_cost: float = 0.0, restart_cost: float = 0.0,
              max_attempts: int | None = None, resubmit_delay: float = 0.0, jobs: int = 20_000,
              replications: int = 8, seed=0) -> dict:
    """The best k for a training gang under failures (Appendix B, section 5), by simulation.

    A job of ``work`` (time units of one worker) is split over ``k`` tasks of
    ``work / k`` each (deterministic, lockstep: one barrier stage, 2
    barriers), arriving at ``arrival_rate``; each running task fails at
    ``failure_rate``; retries redo identical work from the last checkpoint.
    Without checkpoints an attempt fails with probability ``1 - exp(-gamma work)`` whatever
    ``k`` (``k`` clocks for ``work / k`` each), so what sets the best ``k``
    is the restart cost (failures come ``k`` times as often per unit of
    time, and each costs ``restart_cost``), the checkpoints' cost and the
    wait for ``k`` free workers. Every ``k`` (default: the divisors of
    ``servers``) is simulated on the same arrivals (common random numbers);
    a ``k`` whose 2-barrier system is unstable under the drift test, or that
    aborts jobs, is reported so. Returns ``{"curve": [...], "best_k": k or
    None}``: per ``k`` the mean sojourn of completed jobs with its interval,
    mean attempts, aborted share, goodput and stability.
    """
    s = check_int("servers", servers, low=1)
    work = check_positive("work", work, "(time units of one worker)")
    ks = [k for k in range(1, s + 1) if s % k == 0] if ks is None else [check_int("ks value", k, low=1, high=s)
                                                                       for k in ks]
    curve = []
    for k in ks:
        system = BarrierSystem(servers=s, tasks=k, barriers=2, arrival_rate=arrival_rate,
                               task_dist=f"deterministic:value={work / k!r}", failure_rate=failure_rate,
                               retry_work="identical", checkpoint_interval=checkpoint_interval,
                               checkpoint_cost=None if checkpoint_interval is None else checkpoint_cost,
                               restart_cost=restart_cost, max_attempts=max_attempts,
                               resubmit_delay=resubmit_delay)
        summary = simulate(system, jobs=jobs, replications=replications, seed=seed, allow_unstable=True,
                           progress=False).summary()
        curve.append({"k": k, "mean_sojourn": summary["mean_sojourn"], "ci": summary["ci"]["sojourn"],
                      "mean_execution": summary["mean_execution"], "mean_waiting": summary["mean_waiting"],
                      "mean_attempts": summary["mean_attempts"], "aborted_share": summary["aborted_share"],
                      "goodput": summary["goodput"], "stable": summary["stable"]})
    usable = [c for c in curve if c["stable"] and c["aborted_share"] == 0]
    best = min(usable, key=lambda c: c["mean_sojourn"])["k"] if usable else None
    return {"curve": curve, "best_k": best}


__all__ = ["PLAN_ALL_K", "bounds_versus_simulation", "plan", "plan_gang", "random_point_check", "random_points"]
