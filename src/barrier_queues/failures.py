"""Failures of running tasks: whole-stage restart, retries, aborts and checkpoints (Appendix B, section 5).

Seed 001: "a failure of a single task of a barrier stage fails the whole
stage". Spark 4.3.0 (Appendix C): a failed barrier ``ShuffleMapStage`` is
resubmitted after ``RESUBMIT_TIMEOUT`` = 0.2 s at most
``spark.stage.maxConsecutiveAttempts`` = 4 times in all; a barrier
``ResultStage`` is aborted at its first failure (``max_attempts = 1``).

Model (``BarrierSystem(failure_rate=gamma, ...)``). Each
running task fails at rate ``gamma`` (independent exponential clocks; time
spent restarting and checkpointing counts as running). The first failure of
any running task of a job ends its attempt at that instant ``t_f``: its
running tasks are killed and its workers freed (with 2 barriers all ``k`` at
``t_f``). After ``A`` = ``max_attempts`` attempts the job is **aborted**
(it departs at ``t_f``, counted apart); otherwise, ``D`` =
``resubmit_delay`` later, it waits again for ``k`` free workers at its
original place in the arrival order. A retry does ``retry_work =
"different"`` work (fresh draws of the task law) or ``"identical"`` work
(the same as the first attempt). With checkpoints (identical work) a task
checkpoints after every ``tau`` = ``checkpoint_interval`` of work, which
takes ``delta`` = ``checkpoint_cost``; a retry first spends ``R`` =
``restart_cost``, then resumes each task from its last completed checkpoint
(a final partial segment has no checkpoint after it).

A non-barrier job's failed task is retried alone (Spark's
``spark.task.maxFailures``, here ``max_attempts``): ``D`` after it fails it
waits again at its job's place in the arrival order, before the job's tasks
not yet started (Spark takes pending tasks from the end of a list to which a
failed task is appended, so the latest failed task goes first). A task whose
last attempt fails aborts its job at that instant: the job's running tasks
are killed, its waiting ones dropped. A barrier job and a non-barrier job's
task are the *units* that fail and are retried (:func:`units`).

Every attempt of a unit starts its tasks together and a failure strikes
only running tasks, so the sequence of a unit's attempts does not depend on
the queue: it is drawn with the job (:func:`attempts`, vectorised by rounds
of attempts) and the kernel only schedules it (and, for a non-barrier job
that aborts, kills the tasks still running then). This is also why the
abort share and the attempts per job need no warm-up (nor does the goodput,
but for the killed tasks of aborted non-barrier jobs, whose work depends on
when they ran).

Exact results (each tested against simulation): :func:`attempt_moments`
(success probability, moments of an attempt's length, exponential tasks,
different work), :func:`execution_transform`, :func:`abort_probability`,
:func:`mean_execution`, :func:`mg1_waiting` (one job at a time,
Pollaczek-Khinchine), :func:`daly_wall_time` (lockstep deterministic tasks
with checkpoints; Daly, FGCS 2006) with Young's and Daly's intervals and the
exact best interval, and :func:`two_barrier_lambda_max`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._validation import ParameterError
from .kernels import kernels_module

#: Spark's resubmit delay (DAGScheduler.RESUBMIT_TIMEOUT, seconds) and attempt caps (Appendix C)
SPARK_RESUBMIT_DELAY = 0.2
SPARK_ATTEMPTS = {"result": 1, "shuffle-map": 4}
#: a job without an attempt cap may use at most this many attempts (beyond it the run is refused)
MAX_ROUNDS = 100_000
#: refuse uncapped systems whose mean attempts per job may exceed e^GUARD (checked before any work)
GUARD = 20.0
FIELDS = ("failure_rate", "max_attempts", "resubmit_delay", "retry_work", "checkpoint_interval",
          "checkpoint_cost", "restart_cost")


# ---------------------------------------------------------------------------------------------------------------
# failure models: what a failed attempt leaves for the retry (one registry, one entry per value of retry_work)


def _no_check(system) -> None:
    return None


@dataclass(frozen=True)
class FailureModel:
    """A failure model: how a retry's tasks are drawn and how long each task of an attempt needs.

    Every model shares the failure clocks (each running task fails at rate
    ``gamma``: the first clock below a task's need ends the attempt at
    ``t_f``; every task holds ``min(need, t_f)``), the attempt cap, the
    resubmit delay and the restart cost ``R`` spent before each retry. A
    model declares, once:

    * ``name`` (the value of ``BarrierSystem.retry_work``) and ``help``;
    * ``fresh``: a retry draws fresh task times from the task law (else it
      redoes the work its task had in the first attempt);
    * ``checkpoints``: it owns ``checkpoint_interval`` and ``checkpoint_cost``
      (others refuse them);
    * ``check(system)``: combinations it refuses, beyond the common ranges;
    * ``kernel(system)``: the keyword arguments of the compiled
      ``attempt_round`` (``checkpoints``, ``tau``, ``delta``), or None when
      no compiled round computes it (its ``round`` then serves both paths);
    * ``round(system, work, progress, pos, starts, k, clocks, base)``: its
      plain reference of one round (numpy): per task (at ``pos``, unit by
      unit from ``starts``, ``k`` tasks each) the need from the work
      ``work[pos]`` and the work already saved ``progress[pos]`` (updated in
      place for the failed units), returning ``(holds, failed)``;
    * ``attempt(fail, work, progress, clocks, base)``: its plain-Python
      reference of one unit's attempt, for the reference scheduler
      (:mod:`barrier_queues.schedulers.waitlist_reference`): lists of the
      unit's task works, saved work (updated in place if the attempt fails)
      and clocks; ``fail`` holds ``tau`` and ``delta``; returns ``(holds,
      failed)``;
    * ``law(system)``: the exact mean execution time of one job alone
      (``s = k``, 2 barriers, ``D = 0``, no cap) when known, else None: the
      oracle its test checks the simulation against.
    """

    name: str
    help: str
    fresh: bool
    round: Callable
    attempt: Callable
    checkpoints: bool = False
    check: Callable = _no_check
    kernel: Callable | None = None
    law: Callable | None = None


def _restart_round(system, work, progress, pos, starts, k, clocks, base):
    """Whole-task restart, with checkpoints when the system has them: a task needs ``base + w`` (``w`` its work
    not yet saved) plus ``delta floor(w / tau)``; a failed attempt saves ``tau`` per checkpoint passed."""
    tau, delta = system.checkpoint_interval, system.checkpoint_cost
    w = work[pos] - progress[pos]
    need = base + w if tau is None else base + w + delta * np.floor(w / tau)
    t_f = np.minimum.reduceat(np.where(clocks < need, clocks, np.inf), starts)
    failed = np.isfinite(t_f)
    holds = np.minimum(need, np.repeat(t_f, k))    # (t_f = inf for a unit whose attempt succeeds: need)
    if tau is not None:
        elapsed = np.repeat(t_f, k) - base
        done = np.where(np.repeat(failed, k) & (elapsed > 0), np.floor(elapsed / (tau + delta)), 0.0)
        progress[pos] += tau * np.minimum(done, np.floor(w / tau))
    return holds, failed


def _restart_attempt(fail, work, progress, clocks, base):
    """One attempt, task by task (the plain reference of :func:`_restart_round` and the compiled round)."""
    tau, delta = fail["tau"], fail["delta"]
    need, left = [], []
    for i in range(len(work)):
        w = work[i] - progress[i]
        left.append(w)
        need.append(base + w if tau is None else base + w + delta * math.floor(w / tau))
    t_f = math.inf
    for i in range(len(work)):
        if clocks[i] < need[i] and clocks[i] < t_f:
            t_f = clocks[i]
    if t_f == math.inf:
        return need, False
    if tau is not None:
        elapsed = t_f - base
        done = math.floor(elapsed / (tau + delta)) if elapsed > 0 else 0
        for i in range(len(work)):
            progress[i] += tau * min(done, math.floor(left[i] / tau))
    return [min(x, t_f) for x in need], True


def _restart_kernel(system) -> dict:
    tau = system.checkpoint_interval
    return {"checkpoints": tau is not None, "tau": tau or 1.0, "delta": system.checkpoint_cost or 0.0}


def _different_law(system):
    from .distributions import Exponential

    if not isinstance(system.task_dist, Exponential) or system.restart_cost:
        return None
    return mean_execution(system.tasks, system.task_dist.rate, system.failure_rate)


def _identical_law(system):
    from .distributions import Deterministic

    tau = system.checkpoint_interval
    if tau is None or not isinstance(system.task_dist, Deterministic):
        return None
    work = system.task_dist.value
    if abs(work / tau - round(work / tau)) > 1e-9:
        return None
    return daly_wall_time(work, tau, system.checkpoint_cost, system.restart_cost,
                          1.0 / (system.tasks * system.failure_rate))


#: the failure models, by name (``BarrierSystem.retry_work``); :func:`register` adds one
MODELS: dict[str, FailureModel] = {m.name: m for m in (
    FailureModel("different", "a retry draws fresh task times (Spark's rerun of a nondeterministic stage)",
                 fresh=True, round=_restart_round, attempt=_restart_attempt, kernel=_restart_kernel,
                 law=_different_law),
    FailureModel("identical", "a retry redoes the same work (a rerun partition), from its last checkpoint",
                 fresh=False, round=_restart_round, attempt=_restart_attempt, checkpoints=True,
                 kernel=_restart_kernel, law=_identical_law),
)}


def register(model: FailureModel) -> FailureModel:
    """Add a failure model (``BarrierSystem(retry_work=model.name)`` then selects it)."""
    if not isinstance(model, FailureModel):
        raise TypeError(f"a failure model must be a FailureModel (got {type(model).__name__})")
    if model.name in MODELS:
        raise ParameterError(f"failure model {model.name!r} is already registered")
    MODELS[model.name] = model
    return model


def unregister(name: str) -> None:
    MODELS.pop(name)


def names() -> tuple[str, ...]:
    return tuple(MODELS)


def get(name: str) -> FailureModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ParameterError(f"retry_work must be one of {', '.join(MODELS)} (got {name!r})") from None


def enabled(system) -> bool:
    return system.failure_rate is not None


def validate(system, set_) -> None:
    """The failure fields of a system (called once, by ``BarrierSystem``): defaults, ranges, conflicts."""
    from ._validation import check_choice, check_int, check_positive, check_time

    if system.failure_rate is None:
        for name in FIELDS[1:]:
            if getattr(system, name) is not None:
                raise ParameterError(f"{name} must be None without failure_rate (got {getattr(system, name)!r}): "
                                     "it shapes what a failure does (--failure-rate > 0 turns failures on)")
        return
    mean = system.mean_task
    set_("failure_rate", check_positive("failure_rate", system.failure_rate, "(failures per running task per unit "
                                        "time)"))
    if not system.failure_rate * mean <= 1e6:
        raise ParameterError(f"failure_rate must be at most 1e6 per mean task time, i.e. <= {1e6 / mean:.3g} "
                             f"(got {system.failure_rate!r})")
    if system.max_attempts is not None:
        set_("max_attempts", check_int("max_attempts", system.max_attempts, low=1, high=MAX_ROUNDS,
                                       high_name=f"{MAX_ROUNDS:,}"))
    set_("resubmit_delay", check_time("resubmit_delay", 0.0 if system.resubmit_delay is None
                                      else system.resubmit_delay, mean, allow_zero=True))
    set_("retry_work", check_choice("retry_work", "different" if system.retry_work is None else system.retry_work,
                                    names()))
    set_("restart_cost", check_time("restart_cost", 0.0 if system.restart_cost is None else system.restart_cost,
                                    mean, allow_zero=True))
    if system.checkpoint_interval is None:
        if system.checkpoint_cost is not None:
            raise ParameterError(f"checkpoint_cost must be None without checkpoint_interval (got "
                                 f"{system.checkpoint_cost!r})")
    else:
        set_("checkpoint_interval", check_time("checkpoint_interval", system.checkpoint_interval, mean))
        set_("checkpoint_cost", check_time("checkpoint_cost", 0.0 if system.checkpoint_cost is None
                                           else system.checkpoint_cost, mean, allow_zero=True))
    model = get(system.retry_work)
    if system.checkpoint_interval is not None and not model.checkpoints:
        owners = " or ".join(repr(m.name) for m in MODELS.values() if m.checkpoints)
        raise ParameterError(f"retry_work must be {owners} with checkpoint_interval (got {system.retry_work!r}): a "
                             "checkpoint saves the work of the task that is retried")
    model.check(system)
    _check_model(system)
    _guard(system)


def _check_model(system) -> None:
    for name, value, ok, why in (
            ("release", system.release, "fixed", "a failure restarts every task of the job"),
            ("phases", system.phases, 1, "a failure restarts the whole stage"),
            ("overhead", system.overhead, None, "failures are simulated without Spark's overhead models"),
            ("placement", system.placement, "central", "failures are simulated under the central queue")):
        if value != ok:
            raise ParameterError(f"{name} must be {ok!r} with failure_rate (got {value!r}): {why}")
    if system.stragglers:
        raise ParameterError(f"needed must equal tasks with failure_rate (got needed = {system.needed}, tasks = "
                             f"{system.tasks}): a failure restarts every task of the job")
    if system.workload is not None and any(c.shared for c in system.workload):
        raise ParameterError("workload classes must not have a shared time with failure_rate: a failure clock "
                             "runs per task")


def _guard(system) -> None:
    if system.max_attempts is not None:
        return
    span = (system.mean_task if system.checkpoint_interval is None
            else system.restart_cost + system.checkpoint_interval + system.checkpoint_cost)
    x = system.failure_rate * system.max_tasks * span
    if x > GUARD:
        what = "E[X]" if system.checkpoint_interval is None else "(R + tau + delta)"
        raise ParameterError(f"failure_rate must keep gamma k {what} <= {GUARD:g} without max_attempts (got "
                             f"{x:.4g}): a job could need about e^{x:.0f} attempts; give max_attempts, checkpoints "
                             "or a lower rate")


# ---------------------------------------------------------------------------------------------------------------
# the attempts of each job, drawn with the job


def _fresh_times(system, tasks: np.ndarray, cls, units: np.ndarray, rng) -> np.ndarray:
    """k fresh task times for each of ``units`` (task order), from each unit's law."""
    if system.workload is None:
        total = int(tasks[units].sum())
        return np.asarray(system.task_dist.rvs(size=total, random_state=rng), dtype=np.float64)
    out = np.empty(int(tasks[units].sum()))
    starts = np.zeros(units.size, dtype=np.int64)
    np.cumsum(tasks[units][:-1], out=starts[1:])
    for c, job_class in enumerate(system.workload):
        sel = np.flatnonzero(cls[units] == c)
        if sel.size:
            k = int(tasks[units][sel[0]])                  # a class's units have one size (k, or 1 per task)
            out[(starts[sel][:, None] + np.arange(k)).ravel()] = np.asarray(
                system.class_law(job_class).rvs(size=sel.size * k, random_state=rng), dtype=np.float64)
    return out


def units(chunk: dict, compiled: bool = True) -> dict:
    """The units that fail and are retried: a barrier job (its ``k`` tasks together), or one task of a
    non-barrier job (retried alone). Per unit, in job order then task order: ``job``, ``tasks`` (``k`` or
    1), ``offsets`` (its first task's draw in the chunk's ``times``) and ``cls``; ``first`` = index of each
    job's first unit. ``compiled``: the per-unit arrays by the compiled ``attempt_units``; False: by numpy
    (the reference, equal)."""
    tasks, barrier = chunk["tasks"], chunk["barrier"]
    per = np.where(barrier, 1, tasks)
    first = np.zeros(tasks.size, dtype=np.int64)
    np.cumsum(per[:-1], out=first[1:])
    if compiled:
        total = int(first[-1] + per[-1]) if tasks.size else 0
        job, utasks, offsets = (np.empty(total, dtype=np.int64) for _ in range(3))
        kernels_module().attempt_units(np.ascontiguousarray(tasks, dtype=np.int64),
                                       np.ascontiguousarray(barrier, dtype=np.bool_).view(np.uint8),
                                       np.ascontiguousarray(chunk["offsets"], dtype=np.int64), first, job, utasks,
                                       offsets)
        out = {"job": job, "tasks": utasks, "offsets": offsets, "first": first}
    else:
        job = np.repeat(np.arange(tasks.size), per)
        within = np.arange(job.size) - first[job]
        out = {"job": job, "tasks": np.where(barrier[job], tasks[job], 1).astype(np.int64),
               "offsets": chunk["offsets"][job] + within, "first": first}
    if "cls" in chunk:
        out["cls"] = chunk["cls"][job]
    return out


def attempts(system, chunk: dict, rng: np.random.Generator, compiled: bool = True, raw: bool = True) -> dict:
    """Draw the attempts of each job of ``chunk`` (from :func:`barrier_queues.inputs.draw_jobs`).

    A barrier job's attempts restart all its ``k`` tasks; a non-barrier job's
    task is retried alone: each is a *unit* (:func:`units`). Rounds ``a = 0,
    1, ...``: for every unit still making attempts, one failure clock
    Exp(gamma) per task (unit order, task order), then with ``different``
    work and ``a > 0`` fresh task times. A unit's attempts do not depend on
    the queue. Returns the chunk's arrays plus, per unit, ``unit_attempts``,
    ``unit_aborted`` (its last attempt fails), ``unit_toff`` (index of its
    first hold), ``unit_first`` (each job's first unit), ``unit_job`` (each
    unit's job) and ``holds`` (per
    unit, attempt and task: how long the task held its worker), the raw
    draws ``clocks`` and ``fresh`` in the layout of ``holds``; and per job
    ``attempts`` (the most attempts of one of its units), ``aborted`` (a unit
    aborted), ``useful`` (the work of the successful attempts, 0 if aborted)
    and ``toff`` (its first unit's first hold). Without non-barrier jobs a
    unit is a job. ``compiled``: each round's arithmetic and the layout by
    the compiled ``attempt_round`` and ``attempt_layout``; False: by numpy,
    the plain reference (the same numbers, bit for bit, tested; the draws
    are numpy's either way, in the same order). ``raw`` False: without
    ``clocks`` and ``fresh`` (what only the plain-Python reference reads; a
    run's kernel needs the holds), so that they are not laid out.
    """
    u = units(chunk, compiled)
    natt, aborted, useful, rounds = _rounds(system, u, chunk["times"], rng, compiled)
    return _layout(chunk, u, natt, aborted, useful, rounds, compiled, raw or not compiled)


def _rounds(system, u: dict, first: np.ndarray, rng, compiled: bool = True):
    gamma, cap = system.failure_rate, system.max_attempts or MAX_ROUNDS
    model = get(system.retry_work)
    compiled = compiled and model.kernel is not None   # (a model without a compiled round: its reference)
    kernel = model.kernel(system) if compiled else None
    restart, identical = system.restart_cost, not model.fresh
    tasks = u["tasks"]
    n = tasks.size
    natt = np.zeros(n, dtype=np.int64)
    aborted = np.zeros(n, dtype=np.bool_)
    useful = np.zeros(n)
    work = first if identical else first.copy()  # each task's work (identical: never written) or this draw
    progress = np.zeros(first.size) if not compiled or kernel["checkpoints"] else np.empty(0)    # work saved
    rounds = []                                  # (units, holds, clocks, fresh) per round
    active = np.arange(n)
    a = 0
    while active.size:
        if a >= cap:
            if system.max_attempts is None:
                raise ParameterError(f"max_attempts must be given for this system: a job needed more than "
                                     f"{MAX_ROUNDS:,} attempts (failure_rate = {gamma:g})")
            aborted[active] = True
            break
        k = tasks[active] if a else tasks                # (round 0: every unit)
        fresh = None
        fresh_due = a > 0 and not identical
        if fresh_due or not compiled:
            starts = np.zeros(active.size, dtype=np.int64)   # each active unit's first task among theirs
            np.cumsum(k[:-1], out=starts[1:])
            pos = np.repeat(u["offsets"][active] - starts, k)   # the active units' tasks, in order: offset + i
            pos += np.arange(pos.size)
        size = int(k.sum())
        clocks = rng.standard_exponential(size)      # exponential(1 / gamma) bit for bit: (1 / gamma) e, in place
        clocks *= 1.0 / gamma
        if fresh_due:
            fresh = _fresh_times(system, tasks, u.get("cls"), active, rng)
            work[pos] = fresh
        base = restart if a > 0 else 0.0
        if compiled:                              # the same arithmetic, in one pass (_failures.pxi)
            holds, failed = np.empty(size), np.empty(active.size, dtype=np.uint8)
            kernels_module().attempt_round(active, tasks, u["offsets"], work, progress, clocks, base,
                                           kernel["checkpoints"], kernel["tau"], kernel["delta"], holds, natt,
                                           useful, failed)
            rounds.append((active, holds, clocks, fresh))
            active = active[failed.view(np.bool_)]
            a += 1
            continue
        holds, failed = model.round(system, work, progress, pos, starts, k, clocks, base)
        rounds.append((active, holds, clocks, fresh))
        natt[active] += 1
        has = np.flatnonzero(~failed)            # the successful units' tasks' work, summed in task order
        for i in range(int(k[has].max()) if has.size else 0):
            if i:
                has = has[k[has] > i]               # (the units with more than i tasks: a shrinking set)
            useful[active[has]] += work[pos[starts[has] + i]]
        active = active[failed]
        a += 1
    return natt, aborted, useful, rounds


def _layout(chunk: dict, u: dict, natt, aborted, useful, rounds, compiled: bool = True, raw: bool = True) -> dict:
    """Place each round's per-task arrays at ``unit_toff[u] + a k_u + i`` (unit-major); job arrays from the
    units'. ``raw`` False: the holds only (compiled only)."""
    tasks = u["tasks"]
    size = natt * tasks
    toff = np.zeros(tasks.size, dtype=np.int64)
    np.cumsum(size[:-1], out=toff[1:])
    total = int(size.sum())
    holds = np.empty(total)
    clocks, fresh = (np.empty(total), np.full(total, np.nan)) if raw else (np.empty(0), np.empty(0))
    for a, (active, h, c, f) in enumerate(rounds):
        if compiled:
            kernels_module().attempt_layout(active, tasks, toff, a, h, c, np.empty(0) if f is None or not raw else f,
                                            holds, clocks, fresh)
            continue
        k = tasks[active]
        idx = np.repeat(toff[active] + a * k - (np.cumsum(k) - k), k)     # toff + a k + i for task i
        idx += np.arange(idx.size)
        holds[idx], clocks[idx] = h, c
        if f is not None:
            fresh[idx] = f
    out = dict(chunk)
    first = u["first"]
    if first.size == tasks.size:                 # every unit is a job
        job_natt, job_aborted, job_useful = natt, aborted, useful
    elif compiled:
        job_natt, job_aborted, job_useful = (np.empty(first.size, dtype=np.int64),
                                             np.empty(first.size, dtype=np.bool_), np.empty(first.size))
        kernels_module().attempt_jobs(first, natt, aborted.view(np.uint8), useful, job_natt,
                                      job_aborted.view(np.uint8), job_useful)
    else:
        job_natt = np.maximum.reduceat(natt, first) if first.size else natt[:0]
        job_aborted = np.logical_or.reduceat(aborted, first) if first.size else aborted[:0]
        per = np.diff(np.append(first, tasks.size))
        job_useful = np.zeros(first.size)
        has = np.arange(first.size)
        for i in range(int(per.max()) if per.size else 0):      # summed in task order, as the reference does
            if i:
                has = has[per[has] > i]             # (the jobs with more than i units: a shrinking set)
            job_useful[has] += useful[first[has] + i]
        job_useful[job_aborted] = 0.0
    out.update({"attempts": job_natt, "aborted": job_aborted, "useful": job_useful, "toff": toff[first],
                "holds": holds, "unit_attempts": natt, "unit_aborted": aborted, "unit_toff": toff, "unit_first": first,
                "unit_job": u["job"]})
    if raw:
        out.update(clocks=clocks, fresh=fresh)
    return out


# ---------------------------------------------------------------------------------------------------------------
# exact results


def attempt_moments(k: int, mu: float, gamma: float) -> dict:
    """One attempt of a job of ``k`` Exp(mu) tasks with failure rate ``gamma`` per running task (different work).

    With ``j`` tasks running the next event comes at rate ``j (mu + gamma)``
    and is a failure with probability ``gamma / (mu + gamma)``, independently
    of when it comes. Returns ``p`` (success probability ``q^k`` with ``q =
    mu / (mu + gamma)``), and the partial moments ``E[L; success]``,
    ``E[L^2; success]``, ``E[L; failure]``, ``E[L^2; failure]`` of the
    attempt's length ``L``; ``mean`` = ``E[L]`` = ``sum_j q^(k-j) / (j (mu +
    gamma))`` (Appendix B, section 5).
    """
    q = mu / (mu + gamma)
    alive, m1, m2 = 1.0, 0.0, 0.0                # mass still running and its partial moments of the time so far
    f0 = f1 = f2 = 0.0
    for j in range(k, 0, -1):
        r = j * (mu + gamma)
        n1 = m1 + alive / r
        n2 = m2 + 2.0 * m1 / r + 2.0 * alive / r ** 2
        f0, f1, f2 = f0 + (1 - q) * alive, f1 + (1 - q) * n1, f2 + (1 - q) * n2
        alive, m1, m2 = q * alive, q * n1, q * n2
    return {"p": alive, "success_mean": m1, "success_m2": m2, "failure_prob": f0, "failure_mean": f1,
            "failure_m2": f2, "mean": m1 + f1}


def execution_transform(theta: float, k: int, mu: float, gamma: float, delay: float = 0.0) -> float:
    """E[exp(-theta E)] of the execution E (first start to departure) of a job alone, uncapped attempts.

    ``S(theta) / (1 - F(theta) e^(-theta D))`` with ``S`` and ``F`` the
    transforms of an attempt's length restricted to success and failure:
    products of ``q a_j`` and sums of ``(1 - q) a_j`` over the stages, ``a_j
    = j (mu + gamma) / (j (mu + gamma) + theta)``.
    """
    q = mu / (mu + gamma)
    alive, fail = 1.0, 0.0
    for j in range(k, 0, -1):
        a = j * (mu + gamma) / (j * (mu + gamma) + theta)
        fail += alive * (1 - q) * a
        alive *= q * a
    return alive / (1.0 - fail * math.exp(-theta * delay))


def abort_probability(p: float, max_attempts: int | None) -> float:
    """``(1 - p)^A``: every one of ``A`` attempts fails (0 without a cap and p > 0)."""
    return 0.0 if max_attempts is None else (1.0 - p) ** max_attempts


def mean_execution(k: int, mu: float, gamma: float, delay: float = 0.0) -> float:
    """``E[A1] / p + D (1/p - 1)`` (Wald; Appendix B, section 5), uncapped attempts."""
    m = attempt_moments(k, mu, gamma)
    return m["mean"] / m["p"] + delay * (1.0 / m["p"] - 1.0)


def holding_moments(k: int, mu: float, gamma: float, max_attempts: int | None = None) -> tuple[float, float]:
    """First two moments of the total time a job holds its workers (all its attempts, no delays), with an
    optional cap: attempts are iid; with a cap ``A`` the number of failed attempts is min(G, A) for a
    geometric G."""
    m = attempt_moments(k, mu, gamma)
    p = m["p"]
    fm, fm2 = m["failure_mean"] / (1 - p), m["failure_m2"] / (1 - p)       # a failed attempt's moments
    sm, sm2 = m["success_mean"] / p, m["success_m2"] / p
    var_f = fm2 - fm ** 2
    if max_attempts is None:                                # G failures ~ geometric, then a success
        eg, eg2 = (1 - p) / p, (1 - p) * (2 - p) / p ** 2
        first = eg * fm + sm
        second = eg * var_f + eg2 * fm ** 2 + 2 * eg * fm * sm + sm2
        return first, second
    first = second = 0.0
    for g in range(max_attempts + 1):                       # g failures, then success (g < A) or abort (g = A)
        prob = (1 - p) ** g * (p if g < max_attempts else 1.0)
        tail_m, tail_m2 = (sm, sm2) if g < max_attempts else (0.0, 0.0)     # g = A: aborted, no success
        s1 = g * fm + tail_m
        s2 = g * var_f + (g * fm) ** 2 + 2 * g * fm * tail_m + tail_m2
        first += prob * s1
        second += prob * s2
    return first, second


def mg1_waiting(arrival_rate: float, k: int, mu: float, gamma: float, max_attempts: int | None = None) -> float:
    """Mean waiting when one job runs at a time (``s = k``, 2 barriers, ``D = 0``): Pollaczek-Khinchine
    ``lambda E[S^2] / (2 (1 - lambda E[S]))`` with ``S`` the time a job holds the workers (:func:`holding_moments`).
    """
    m1, m2 = holding_moments(k, mu, gamma, max_attempts)
    rho = arrival_rate * m1
    if rho >= 1:
        raise ParameterError(f"arrival_rate must be below 1 / E[S] = {1 / m1:.6g} for one job at a time "
                             f"(got {arrival_rate!r})")
    return arrival_rate * m2 / (2.0 * (1.0 - rho))


def two_barrier_lambda_max(servers: int, k: int, mu: float, gamma: float, max_attempts: int | None = None) -> float:
    """Stability limit of a 2-barrier system of one k with failures: ``floor(s / k) / E[S]``, each of the
    ``floor(s/k)`` slots holding one job's attempts back to back (a backlog fills every resubmit delay)."""
    return (servers // k) / holding_moments(k, mu, gamma, max_attempts)[0]


#: one_barrier_lambda_max refuses chains with more states than this (a plain sparse LU)
MAX_CHAIN_STATES = 50_000


def one_barrier_lambda_max(servers: int, k: int, mu: float, gamma: float,
                           max_states: int = MAX_CHAIN_STATES) -> float:
    """Stability limit of a 1-barrier FIFO system of one ``k`` with failures: the completion rate of the
    always-backlogged CTMC with failure transitions (exact for Exp(mu) tasks, different work, no attempt cap,
    ``D = 0``, no restart cost: a failed job rejoins at the head of the backlog, where by memorylessness it
    is a fresh job).

    The state is the multiset of running jobs' running-task counts (the paper's ``n_j``, section II-D, with
    ``l = k``). From it, a task of a job with ``j`` running tasks ends at rate ``j mu`` (``j = 1``: the job
    departs, a completion) and the job fails at rate ``j gamma`` (all ``j`` workers freed); then the head job
    starts if ``k`` workers are free (at most one can). Enumerated from ``floor(s/k)`` fresh jobs by a
    search that stops at ``max_states`` (independent of :mod:`barrier_queues.ctmc`'s key arithmetic), ``pi Q =
    0`` by sparse LU.
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve


    def settle(jobs):
        jobs = list(jobs)
        if servers - sum(jobs) >= k:
            jobs.append(k)
        return tuple(sorted(jobs))

    start = tuple([k] * (servers // k))
    index, states, queue = {start: 0}, [start], [start]
    rows, cols, rates, done = [], [], [], {}
    while queue:
        state = queue.pop()
        i = index[state]
        completion = 0.0
        for pos, j in enumerate(state):
            if pos and state[pos - 1] == j:
                continue                                    # each distinct j once, times its multiplicity
            mult = state.count(j)
            rest = state[:pos] + state[pos + 1:]
            ends = settle(rest + ((j - 1,) if j > 1 else ()))
            if j == 1:
                completion += mult * mu
            for target, rate in ((ends, mult * j * mu), (settle(rest), mult * j * gamma)):
                if target not in index:
                    if len(states) >= max_states:           # the search stops at the size guard
                        raise ParameterError(f"servers and tasks must give at most {max_states:,} CTMC states "
                                             f"with failures (s = {servers}, k = {k}); use a saturated simulation")
                    index[target] = len(states)
                    states.append(target)
                    queue.append(target)
                rows.append(i)
                cols.append(index[target])
                rates.append(rate)
        done[i] = completion
    n = len(states)
    q = sp.coo_matrix((rates, (rows, cols)), shape=(n, n)).tocsr()
    q = q - sp.diags(np.asarray(q.sum(axis=1)).ravel())
    a = q.T.tocsc()
    pi = np.ones(n)                                         # pi_0 = 1, the other balance equations, normalise
    if n > 1:
        pi[1:] = spsolve(a[1:, 1:], -a[1:, 0].toarray().ravel())
    pi /= pi.sum()
    return float(pi @ np.array([done[i] for i in range(n)]))


def daly_wall_time(work: float, tau: float, delta: float, restart: float, mtbf: float) -> float:
    """Daly (FGCS 2006): mean wall time of ``work`` (a multiple of ``tau``) in segments of ``tau`` each followed
    by a checkpoint of ``delta``, failures at rate ``1 / mtbf`` (``mtbf`` = ``1 / (k gamma)`` for ``k`` lockstep
    tasks), a restart of ``restart`` before each retry: ``(W / tau) M e^(R/M) (e^((tau + delta)/M) - 1)``."""
    m = mtbf
    return (work / tau) * m * math.exp(restart / m) * math.expm1((tau + delta) / m)


def young_interval(delta: float, mtbf: float) -> float:
    """Young (1974): ``sqrt(2 delta M)``."""
    return math.sqrt(2.0 * delta * mtbf)


def daly_interval(delta: float, mtbf: float) -> float:
    """Daly's (2006) higher-order estimate of the best interval (``delta < 2 M``; else ``M``)."""
    if delta >= 2.0 * mtbf:
        return mtbf
    x = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta


def best_interval(delta: float, mtbf: float, restart: float = 0.0) -> float:
    """The ``tau`` that minimises Daly's wall time per unit of work, ``M e^(R/M) (e^((tau+delta)/M) - 1) / tau``
    (exact, by Brent's minimiser; the work is taken as a multiple of ``tau``)."""
    from ._solvers import brent_minimize

    def cost(log_tau):
        tau = math.exp(log_tau)
        return math.expm1((tau + delta) / mtbf) / tau

    guess = math.log(max(young_interval(delta, mtbf), 1e-12 * mtbf))
    x, _ = brent_minimize(cost, guess - 5.0, guess + 5.0, xatol=1e-10)
    return math.exp(x)


__all__ = ["FIELDS", "FailureModel", "GUARD", "MAX_ROUNDS", "MODELS", "SPARK_ATTEMPTS", "SPARK_RESUBMIT_DELAY",
           "abort_probability", "attempt_moments", "attempts", "best_interval", "daly_interval", "daly_wall_time",
           "enabled", "execution_transform", "get", "holding_moments", "mean_execution", "mg1_waiting", "names",
           "one_barrier_lambda_max", "register", "two_barrier_lambda_max", "units", "unregister", "validate",
           "young_interval"]
