"""Saturated runs: the stability limit of a system by simulation.

An always-backlogged system (every job arrives at time 0) starts jobs at its
maximum stable rate: after the warm-up, ``jobs / sum of spacings between
starts`` estimates ``lambda_max`` (Appendix A, section 2, the paper's Monte
Carlo check of Table I). With the event-accurate Spark overhead only revive
ticks then offer executors to a blocked job, as in a real Spark run that
submits a backlog at once.
"""

from __future__ import annotations

import numpy as np

from ._validation import ParameterError, check_probability
from .backends import resolve
from .inputs import recorded_seed, spawn_seeds
from .runs import Task, check_run, run_replications
from .statistics import batch_means, batch_means_interval, t_interval, within
from .system import BarrierSystem, as_system


def _saturated_estimate(system: BarrierSystem, reps: list, level: float) -> dict:
    stats = [r.stats for r in reps]
    s = system.servers
    if len(stats) >= 2:
        lam = [st.jobs / st.sums["spacing"] for st in stats]
        rho = [x * st.sums["work"] / st.jobs / s for x, st in zip(lam, stats, strict=True)]
        useful = [x * st.sums["useful"] / st.jobs / s for x, st in zip(lam, stats, strict=True)]
        held = [x * st.sums["held"] / st.jobs / s for x, st in zip(lam, stats, strict=True)]
        method = "t interval over replications"
        batches = None
    else:
        st = stats[0]
        spacing = batch_means(st.block_means["spacing"], 20)
        # a batch whose jobs all started at one instant has no finite rate: no interval then (below)
        lam = list(np.divide(1.0, spacing, out=np.full(spacing.shape, np.inf), where=spacing > 0))
        work = st.sums["work"] / st.jobs
        with np.errstate(invalid="ignore"):        # an infinite batch rate times no held time: NaN, not used
            rho = [float(np.float64(x) * work / s) for x in lam]
            useful = [float(np.float64(x) * st.sums["useful"] / st.jobs / s) for x in lam]
            held = [float(np.float64(x) * st.sums["held"] / st.jobs / s) for x in lam]
        method = "t interval over 20 batches of one replication"
        blocks = st.block_means["spacing"]
        batches = batch_means_interval(np.divide(1.0, blocks, out=np.full(blocks.shape, np.inf), where=blocks > 0),
                                       20, level) if (blocks > 0).all() else None
    est = {}
    total_jobs = sum(st.jobs for st in stats)
    spent = sum(st.sums["spacing"] for st in stats)
    if not spent > 0:
        raise ParameterError(f"jobs must be larger for a saturated run of this system (got "
                             f"{reps[0].stats.total_jobs:,} per replication): every measured job started at the "
                             "first instant, so there is no start rate to measure")
    pooled_lam = total_jobs / spent
    # the work-conservation ceiling: no system keeps its servers busier than all the time, rho_max <= 1 (the
    # true value); a short run's start rate times its work per job can exceed it, and the loads (estimates and
    # intervals) are cut at 1. lambda_max stays the run's start rate: its ceiling s / E[work] needs the true
    # mean work per job, which the run only estimates (cutting at the estimate would lose coverage)
    ceiling = s * total_jobs / sum(st.sums["work"] for st in stats)
    est["lambda_max"] = float(pooled_lam)
    finite = bool(np.isfinite(lam).all())
    est["lambda_max_ci"] = within(t_interval(lam, level)) if finite else [float("nan"), float("nan")]
    if not finite:
        est["lambda_max_ci_reason"] = ("a batch of the run started all its jobs at one instant (no finite rate): "
                                       "run more jobs or replications for an interval")
    for key, values, col in (("rho_max", rho, "work"), ("rho_useful", useful, "useful"), ("held_share", held, "held")):
        est[key] = min(1.0, float(pooled_lam * sum(st.sums[col] for st in stats) / total_jobs / s))
        est[f"{key}_ci"] = within(t_interval(values, level), 0.0, 1.0) if finite else [float("nan"), float("nan")]
    if pooled_lam > ceiling:
        est["at_ceiling"] = (f"the run's start rate {pooled_lam:.6g} exceeds its work-conservation ceiling "
                             f"s / E[work] = {ceiling:.6g} (a load above 1): rho_max reported at 1")
    est["mean_completed_tasks"] = sum(st.sums["completed"] for st in stats) / total_jobs
    est.update({"replications": len(stats), "jobs": reps[0].stats.total_jobs, "level": level, "ci_method": method,
                "warmup": {"rule": stats[0].warmup_rule, "jobs": [st.warmup for st in stats],
                           "at_limit": [st.warmup_at_limit for st in stats]}})
    if batches is not None:
        est["batches"] = {k: batches[k] for k in ("batches", "lag1", "pvalue", "independent")}
    if system.placement != "sample":
        est.pop("held_share")
        est.pop("held_share_ci")
    return est


def saturated_throughput(system: BarrierSystem, jobs: int = 200_000, replications: int = 10, seed=None,
                         warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                         level: float = 0.95, backend=None, master: str | None = None) -> dict:
    """Stability limit by simulation: the job start rate of an always-backlogged system.

    Every job arrives at time 0 (with the event-accurate Spark overhead only
    revive ticks then offer executors to a blocked job, as in a real Spark run
    that submits a backlog at once). After the warm-up (MSER-5 on the spacings
    between starts, or ``warmup`` jobs) the start rate ``jobs / sum of
    spacings`` estimates ``lambda_max``; ``rho_max = lambda_max E[work] / s``
    and ``rho_useful`` likewise with the measured useful work. Intervals: t
    over replications, or over 20 batches of one replication.
    """
    seed = recorded_seed(seed)                   # drawn now if none given, and reported, so a run can be repeated
    est = saturated_many([system], jobs, replications, seed, warmup, workers, progress, level, backend, master)[0]
    est["seed"] = seed if not isinstance(seed, np.random.SeedSequence) else None
    return est


def saturated_many(systems: list, jobs: int = 200_000, replications: int = 10, seed=None,
                   warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                   level: float = 0.95, backend=None, master: str | None = None) -> list[dict]:
    """:func:`saturated_throughput` for a sweep, all runs in one process pool.

    System ``i`` uses the streams of ``SeedSequence(seed).spawn(len(systems))[i]``.
    """
    systems = [as_system(c) for c in systems]
    level = check_probability("level", level, open_low=True, open_high=True)
    for c in systems:
        if c.overhead == "paper":
            raise ParameterError("overhead must be None or 'event' for a saturated run (got 'paper'): the paper's "
                                 "model draws from the arrival process; with every job queued at time 0 only revive "
                                 "ticks offer executors, which the event model follows")
    jobs, replications, warmup = check_run(jobs, replications, warmup, systems=systems, saturated=True)
    where = resolve(backend, master)
    # every job arrives at time 0 (the event overhead keeps its rate for validation only: no later arrivals)
    cfgs = [c.without_rate() if c.arrival_rate is not None and c.overhead is None else c
            for c in systems]
    tasks = [Task(c, jobs, s, True, warmup, False, None, r)
             for c, root in zip(cfgs, spawn_seeds(seed, len(cfgs)), strict=True)
             for r, s in enumerate(root.spawn(replications))]
    reps = run_replications(tasks, where, workers, progress, "saturated runs", group=replications)
    return [_saturated_estimate(c, reps[i * replications:(i + 1) * replications], level)
            for i, c in enumerate(cfgs)]


def saturated_curve(servers, tasks, needed=None, barriers=1, task_dist=None, jobs: int = 50_000,
                    replications: int = 10, seed=None, workers: int | None = None,
                    progress: bool | None = None, level: float = 0.95, backend=None, master: str | None = None,
                    **fixed):
    """Simulated stability limits over a grid, the counterpart of :func:`~barrier_queues.stability_curve`.

    Each of ``servers``, ``tasks``, ``needed`` and ``barriers`` may be a
    scalar or a list; combinations with ``k > s`` or ``l > k`` are skipped.
    ``fixed`` are further :class:`BarrierSystem` fields for every point.
    Returns one row per combination with ``lambda_max``, ``rho_max`` and
    ``rho_useful`` and their intervals (``*_ci``: [low, high]).
    """
    import pandas as pd

    grid = []
    for s_ in np.atleast_1d(servers):
        for k in np.atleast_1d(tasks):
            if k > s_:
                continue
            for l_ in ([k] if needed is None else np.atleast_1d(needed)):
                if l_ > k:
                    continue
                for b in np.atleast_1d(barriers):
                    grid.append(BarrierSystem(servers=int(s_), tasks=int(k), needed=int(l_), barriers=int(b),
                                              task_dist=task_dist, **fixed))
    estimates = saturated_many(grid, jobs, replications, seed, None, workers, progress, level, backend, master)
    rows = [{"servers": c.servers, "tasks": c.tasks, "needed": c.needed, "barriers": c.barriers, **e}
            for c, e in zip(grid, estimates, strict=True)]
    return pd.DataFrame(rows)


__all__ = ["saturated_curve", "saturated_many", "saturated_throughput"]
