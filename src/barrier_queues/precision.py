"""Simulation to a stated precision: replications added in rounds until every reported mean is known well enough.

A user wants "the mean sojourn time to within 1 %", not "2 million jobs". The
sequential rule (a relative-precision procedure after Law, *Simulation
Modeling and Analysis*, 5th ed., 2015, Sect. 9.4.1):

1. Run ``replications`` (at least 10) independent replications of ``jobs``
   jobs each; the warm-up is chosen by MSER-5 on their replication-averaged
   waiting times, as for every run, and kept, in jobs, for every later
   replication (a pilot warm-up: later rounds neither move it nor need the
   earlier replications' raw data, so memory stays small).
2. Form the t interval (``level``, default 95 %) of each reported mean
   (waiting, sojourn, execution) over the replications. The target is met
   when every half-width ``h`` satisfies ``h <= gamma' |mean|`` with
   ``gamma' = gamma / (1 + gamma)`` (Law's correction: the interval's own
   centre may be off by ``h``, so an error of at most ``gamma`` relative to
   the true mean needs the smaller ``gamma'``), or ``h <= absolute``.
3. Otherwise the next round brings the replications to ``ceil(R (h /
   target)^2)`` for the worst mean (the t interval shrinks as ``1 /
   sqrt(R)``), at least ``R + 1`` and at most ``2 R``.
4. The job budget (replications x jobs) is never exceeded: when the next
   round would pass it, the replications that still fit are run and the
   run stops, reporting the precision reached and ``met: false`` (near the
   stability limit the variance grows without bound and this is the answer,
   not a loop). A run whose projected need (``R (h / target)^2`` replications
   of ``jobs``) passes ``HOPELESS`` (100) times the budget stops at once with
   the same report: a relative target on a mean near 0, or an absurdly small
   target, would otherwise spend the whole budget without a word.

:func:`barrier_queues.simulate` with ``precision`` (or
:func:`~barrier_queues.simulate.simulate_to_precision`) returns an ordinary
:class:`~barrier_queues.simulate.SimulationResult`
whose ``summary()`` adds ``precision``: the target, whether it was met, the
relative half-width reached per mean, the replications, jobs used and
rounds. Coverage of the final intervals (the stopping rule must not bias
them) is tested on M/M/s and split-merge queues.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import ParameterError, check_int, check_probability
from .backends import resolve
from .inputs import recorded_seed, spawn_seeds
from .runs import Task, check_run, run_replications
from .stability import stability_error
from .statistics import METRICS, t_interval
from .system import as_system

#: the first round's replications at least (fewer make the sequential intervals undercover)
MIN_FIRST_ROUND = 10
#: default job budget of a run to a precision (replications x jobs)
DEFAULT_BUDGET = 100_000_000
#: the most replications a run to a precision may reach (their statistics stay in memory)
MAX_REPLICATIONS = 100_000
#: a run stops at once, target not met, when the jobs it projects to need pass this many times its budget
#: (a relative target on a mean near 0, or a target of 1e-300, would otherwise spend the whole budget in silence)
HOPELESS = 100


def replication_streams(seed, low: int, high: int) -> list:
    """Replications ``low .. high - 1`` of ``seed``'s streams: ``SeedSequence(seed).spawn(high)[low:]``, from a
    fresh copy each time (spawning moves a SeedSequence's counter), so rounds continue one numbering."""
    if isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    return spawn_seeds(seed, high)[low:]


def half_widths(stats: list, level: float, metrics=METRICS) -> dict:
    """Per mean: the estimate (over replications) and its t interval's half-width."""
    out = {}
    for m in metrics:
        means = [s.mean(m) for s in stats]
        lo, hi = t_interval(means, level)
        out[m] = (float(np.mean(means)), (hi - lo) / 2)
    return out


def check_precision(precision, absolute, budget, jobs: int, replications: int) -> tuple:
    """The targets and budget, checked before any work."""
    if precision is None and absolute is None:
        raise ParameterError("budget must come with a precision target, precision or absolute_precision "
                             "(--precision, --precision-abs; got a budget alone)")
    if precision is not None:
        precision = check_probability("precision", precision, open_low=True, open_high=True)
    if absolute is not None:
        absolute = float(absolute)
        if not (absolute > 0 and math.isfinite(absolute)):
            raise ParameterError(f"absolute_precision must be a finite number > 0 (got {absolute!r})")
    budget = check_int("budget", DEFAULT_BUDGET if budget is None else budget, low=1, high=10**13,
                       high_name="1e13")
    if replications < MIN_FIRST_ROUND:
        raise ParameterError(f"replications must be at least {MIN_FIRST_ROUND} with a precision target (got "
                             f"{replications}): the first round's replications; fewer make the sequential "
                             "intervals undercover")
    if replications * jobs > budget:
        raise ParameterError(f"budget must be at least replications x jobs = {replications * jobs:,} (got "
                             f"{budget:,}): the first round alone needs that many jobs")
    return precision, absolute, budget


def run_to_precision(system, precision: float | None, absolute_precision: float | None, jobs: int,
                     replications: int, budget: int | None, seed, warmup: int | None, workers: int | None,
                     progress: bool | None, allow_unstable: bool, backend, master: str | None,
                     level: float = 0.95) -> tuple[list, dict, object]:
    """The rounds of the module docstring: ``(replications, precision report, seed used)``; the public entry is
    :func:`barrier_queues.simulate` (or :func:`~barrier_queues.simulate.simulate_to_precision`), which wraps
    them in a :class:`~barrier_queues.simulate.SimulationResult`. Same seed, same result, on every backend."""
    system = as_system(system)
    if system.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) to simulate a queue (got None)")
    jobs, replications, warmup = check_run(jobs, replications, warmup, False, [system])
    level = check_probability("level", level, open_low=True, open_high=True)
    precision, absolute, budget = check_precision(precision, absolute_precision, budget, jobs, replications)
    if not allow_unstable and (message := stability_error(system)):
        raise ParameterError(message)
    seed = recorded_seed(seed)
    where = resolve(backend, master)
    most = min(budget // jobs, MAX_REPLICATIONS)
    tasks = [Task(system, jobs, s, False, warmup, False, None, i)
             for i, s in enumerate(replication_streams(seed, 0, replications))]
    reps = run_replications(tasks, where, workers, progress, "replications", group=replications)
    kept = reps[0].stats.warmup                                 # the pilot warm-up, fixed from now on
    relative = precision / (1 + precision) if precision is not None else None
    rounds = 1
    hopeless = None
    while True:
        widths = half_widths([r.stats for r in reps], level)
        targets = {m: max(relative * abs(mean) if relative is not None else 0.0, absolute or 0.0)
                   for m, (mean, _) in widths.items()}
        ratio = max((h / targets[m] if targets[m] > 0 else (0.0 if h == 0 else math.inf))
                    for m, (_, h) in widths.items())
        if ratio <= 1 or len(reps) >= most:
            break
        total = len(reps)
        projected = total * min(ratio, 1e100) ** 2 * jobs          # jobs the t interval's 1/sqrt(R) law asks for
        if projected > HOPELESS * budget:
            hopeless = projected
            break
        wanted = math.ceil(total * ratio**2)
        nxt = min(max(wanted, total + 1), 2 * total, most)
        tasks = [Task(system, jobs, s, False, kept, False, None, total + i)
                 for i, s in enumerate(replication_streams(seed, total, nxt))]
        new = run_replications(tasks, where, workers, progress, f"round {rounds + 1}", group=len(tasks))
        for r in new:
            r.stats.block_means = {}                            # the drift test and batch means use replication 0
        reps += new
        rounds += 1
    reached = {m: (h / abs(mean) if mean != 0 else (0.0 if h == 0 else math.inf)) for m, (mean, h) in widths.items()}
    met = ratio <= 1
    info = {
        "met": bool(met), "target": precision, "absolute": absolute, "level": level,
        "reached": reached, "half_width": {m: h for m, (_, h) in widths.items()},
        "replications": len(reps), "jobs_per_replication": jobs, "jobs_used": len(reps) * jobs, "budget": budget,
        "rounds": rounds, "warmup_jobs": int(kept),
        "rule": ("replications added in rounds until every mean's t half-width h <= gamma/(1+gamma) |mean| (Law "
                 "2015, Sect. 9.4.1) or h <= the absolute target; warm-up by MSER-5 on the first round, kept "
                 "for later rounds; at most the budget of jobs"),
    }
    if not met and hopeless is not None:
        worst = max(reached, key=lambda m: reached[m])
        info["reason"] = (f"stopped after round {rounds}: the worst mean ({worst}) is known to {reached[worst]:.2%}, "
                          f"and reaching the target would need about {hopeless:.3g} jobs, more than {HOPELESS} times "
                          f"the budget of {budget:,} (a relative target on a mean near 0 needs an absolute one, "
                          "--precision-abs)")
    elif not met:
        worst = max(reached, key=lambda m: reached[m])
        info["reason"] = (
            f"the target was not met within the budget of {budget:,} jobs"
            + (f" ({MAX_REPLICATIONS:,} replications at most)" if len(reps) >= MAX_REPLICATIONS else "")
            + f": the worst mean ({worst}) is known to {reached[worst]:.2%}; a system near its stability limit "
            "needs far more jobs (its variance grows without bound there)")
    return reps, info, seed


__all__ = ["DEFAULT_BUDGET", "MAX_REPLICATIONS", "MIN_FIRST_ROUND", "check_precision", "half_widths",
           "replication_streams", "run_to_precision"]
