"""Simulation of barrier systems: replications, stopping rules and streaming summaries.

:func:`simulate` runs ``replications`` independent runs of a
:class:`~barrier_queues.BarrierSystem` (any system of Appendix A, section 2 and
Appendix B: 1 or 2 barriers, (s,k,l), knee and timeout release, hybrid,
heterogeneous k, phases with ideal or Spark ``barrier()``, Spark's overhead
models, the central FIFO queue or batch sampling with late binding) and
returns a :class:`SimulationResult`.

The parts live in their own rooms:

* **random inputs** (:mod:`barrier_queues.inputs`): drawn in Python with numpy
  Generators, chunk by chunk, in a fixed order, from independent streams per
  replication (``SeedSequence(seed).spawn``). Same seed, same results, bit for
  bit, whatever the number of processes or the backend;
* **one job's service** (:mod:`barrier_queues.rules`) and **who starts next**
  (:mod:`barrier_queues.schedulers`): compiled kernels, each with a
  plain-Python reference that agrees bit for bit;
* **one replication and many** (:mod:`barrier_queues.runs`) on a **backend**
  (:mod:`barrier_queues.backends`: process pool or Spark, chosen by the
  ``backend`` argument);
* **statistics** (:mod:`barrier_queues.statistics`): streamed, memory does not
  grow with the number of jobs; the warm-up is chosen by MSER-5 on the series
  averaged over the replications (or fixed by the caller); quantiles come from
  logarithmic histograms with 0.2 % relative accuracy. Per-job records are
  kept only on request (``keep_jobs``, ``jobs_csv``, :func:`trace`).

Times are in the system's time unit (mean task time ``1/mu``).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import clocks
from ._validation import ParameterError, check_choice, check_int, check_probability
from .backends import resolve
from .inputs import chunk_jobs, recorded_seed, spawn_seeds
from .precision import MIN_FIRST_ROUND, run_to_precision
from .runs import MAX_JOBS, MAX_KEPT_JOBS, MAX_TRACE_JOBS, Task, check_run, run_replication, run_replications
from .stability import MC_LIMIT_MARGIN, stability_error, stability_verdict
from .statistics import (
    ALPHA,
    METRICS,
    MIN_SPAN_EXECUTIONS,
    MIN_TAIL_JOBS,
    MIN_UTILIZATION_JOBS,
    QUANTILES,
    ReplicationStats,
    batch_means_interval,
    drift,
    merge_histograms,
    run_stability,
    sectioning_interval,
    t_interval,
    wilson_interval,
    within,
)
from .system import BarrierSystem, as_system


def _csv_parts(jobs_csv, replications):
    if jobs_csv is None:
        return [None] * replications
    path = Path(jobs_csv)
    return [path.with_name(f".{path.name}.part{r}") for r in range(replications)]


def _join_csv(jobs_csv, parts) -> None:
    if jobs_csv is None:
        return
    with open(jobs_csv, "w") as out:
        for i, part in enumerate(parts):
            with open(part) as f:
                header = f.readline()
                if i == 0:
                    out.write(header)
                for block in iter(lambda f=f: f.read(1 << 20), ""):
                    out.write(block)
            os.remove(part)


def simulate(system: BarrierSystem, jobs: int = 100_000, replications: int = 1, seed=None,
             warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
             allow_unstable: bool = False, keep_jobs: bool = False, jobs_csv=None, backend=None,
             master: str | None = None, precision: float | None = None, absolute_precision: float | None = None,
             budget: int | None = None) -> SimulationResult:
    """Simulate ``replications`` independent runs of ``jobs`` jobs each, or to a stated precision.

    Parameters
    ----------
    system : BarrierSystem
        With an ``arrival_rate``.
    jobs : int
        Jobs per replication (>= 2).
    replications : int
        Independent replications (streams from ``SeedSequence(seed).spawn``),
        in a process pool over ``workers`` processes (default: all cores).
    seed : int >= 0 or SeedSequence, optional
        Same seed, same results, bit for bit. Without one, fresh entropy is
        drawn and recorded in the result (``result.seed``, ``provenance()``).
    warmup : int, optional
        Jobs dropped from the start of each replication; default: MSER-5 on the
        replication-averaged series (``summary()["warmup"]`` reports the choice).
    allow_unstable : bool
        Simulate even at or above the known stability limit (the summary
        reports ``stable: False``).
    keep_jobs : bool
        Keep per-job arrays (``metric``, ``to_frame``); statistics never need them.
    jobs_csv : path, optional
        Write per-job rows of every replication to this file (its folder
        must exist; the caller checks that it may be written).
    backend, master : optional
        Where replications run (:func:`barrier_queues.backends.resolve`):
        ``"local"`` (a process pool) or ``"spark"`` (``master``); default
        from ``SWEEP_BACKEND`` / ``SPARK_MASTER``, else local. Same results
        on every backend.
    precision, absolute_precision, budget : optional
        Run until every mean's 95 % interval half-width is at most
        ``precision`` of the mean (e.g. 0.01) or ``absolute_precision``
        (time units), adding replications in rounds, within ``budget`` jobs
        (default 1e8); ``replications`` is then the first round (default 10).
        See :mod:`barrier_queues.precision`; ``summary()["precision"]`` says
        whether the target was met and what was reached.

    Examples
    --------
    >>> res = simulate(BarrierSystem(servers=16, tasks=4, arrival_rate=2.8), jobs=20_000, seed=1)
    >>> round(res.summary()["utilization"], 1)
    0.7
    """
    system = as_system(system)
    if precision is not None or absolute_precision is not None or budget is not None:
        if keep_jobs or jobs_csv is not None:
            raise ParameterError("keep_jobs and jobs_csv must not be given with a precision target (got them): "
                                 "a run to a precision keeps statistics only")
        t0 = time.perf_counter()
        reps, info, seed = run_to_precision(system, precision, absolute_precision, jobs,
                                            MIN_FIRST_ROUND if replications == 1 else replications, budget, seed,
                                            warmup, workers, progress, allow_unstable, backend, master)
        return SimulationResult(system, reps, time.perf_counter() - t0, seed, warmup, precision=info)
    if system.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) to simulate a queue (got None); "
                             "use saturated_throughput for a backlogged system")
    jobs, replications, warmup = check_run(jobs, replications, warmup, keep_jobs, [system])
    if not allow_unstable and (message := stability_error(system)):
        raise ParameterError(message)
    seed = recorded_seed(seed)
    t0 = time.perf_counter()
    parts = _csv_parts(jobs_csv, replications)
    where = resolve(backend, master)
    tasks = [Task(system, jobs, s, False, warmup, keep_jobs, parts[i], i)
             for i, s in enumerate(spawn_seeds(seed, replications))]
    reps = run_replications(tasks, where, workers if replications > 1 else 1, progress, "replications",
                            group=replications)
    _join_csv(jobs_csv, parts)
    return SimulationResult(system, reps, time.perf_counter() - t0, seed, warmup)


def simulate_to_precision(system: BarrierSystem, precision: float | None = 0.01,
                          absolute_precision: float | None = None, jobs: int = 100_000,
                          replications: int = MIN_FIRST_ROUND, budget: int | None = None, seed=None,
                          warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                          allow_unstable: bool = False, backend=None, master: str | None = None) -> SimulationResult:
    """Simulate until every mean's 95 % interval is within ``precision`` of the mean (relative) or
    ``absolute_precision`` (time units), within ``budget`` jobs: :func:`simulate` with a precision target
    (the rule: :mod:`barrier_queues.precision`). ``replications``: the first round (>= 10)."""
    return simulate(system, jobs=jobs, replications=replications, seed=seed, warmup=warmup, workers=workers,
                    progress=progress, allow_unstable=allow_unstable, backend=backend, master=master,
                    precision=precision, absolute_precision=absolute_precision, budget=budget)


def simulate_many(systems: list, jobs: int = 100_000, replications: int = 1, seed=None,
                  warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                  allow_unstable: bool = False, keep_jobs: bool = False, backend=None,
                  master: str | None = None) -> list[SimulationResult]:
    """:func:`simulate` for a sweep: all (system, replication) runs share one process pool.

    System ``i`` uses the streams of ``SeedSequence(seed).spawn(len(systems))[i]``,
    so adding a system to a sweep does not change the others' results.
    """
    systems = [as_system(c) for c in systems]
    jobs, replications, warmup = check_run(jobs, replications, warmup, keep_jobs, systems)
    for c in systems:
        if c.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (> 0) for every system (got None)")
        if not allow_unstable and (message := stability_error(c)):
            raise ParameterError(message)
    seed = recorded_seed(seed)
    t0 = time.perf_counter()
    where = resolve(backend, master)
    tasks = [Task(c, jobs, s, False, warmup, keep_jobs, None, r)
             for c, root in zip(systems, spawn_seeds(seed, len(systems)), strict=True)
             for r, s in enumerate(root.spawn(replications))]
    reps = run_replications(tasks, where, workers, progress, "simulations", group=replications)
    seconds = time.perf_counter() - t0
    return [SimulationResult(c, reps[i * replications:(i + 1) * replications], seconds / len(systems), seed, warmup)
            for i, c in enumerate(systems)]


@dataclass
class SimulationResult:
    """Replications of one system, with statistics after each replication's warm-up.

    Attributes
    ----------
    system : BarrierSystem
    replications : list of Replication
    seconds : float
        Wall-clock time of the whole run.
    """

    system: BarrierSystem
    replications: list
    seconds: float
    seed: object = None
    fixed_warmup: int | None = None
    #: a run to a precision (:mod:`barrier_queues.precision`): the target, whether it was met, what was reached
    precision: dict | None = None
    _summary_cache: dict = field(default_factory=dict, repr=False)

    @property
    def config(self) -> BarrierSystem:
        """Alias of :attr:`system`."""
        return self.system

    @property
    def stats(self) -> list[ReplicationStats]:
        return [r.stats for r in self.replications]

    def _kept(self):
        if any(r.jobs is None for r in self.replications):
            raise ParameterError("keep_jobs must be True in simulate() for per-job records (got False): "
                                 "statistics are streamed and per-job arrays are not kept by default")
        return self.replications

    def metric(self, name: str, replication: int | None = None) -> np.ndarray:
        """Per-job ``waiting``, ``sojourn`` or ``execution`` times after the warm-up (needs ``keep_jobs``): the
        measured jobs of ``summary()``, so with failures the completed ones (:meth:`to_frame` has every job)."""
        check_choice("metric", name, METRICS)
        reps = self._kept()
        reps = reps if replication is None else [reps[replication]]
        parts = []
        for r in reps:
            j = r.jobs
            measured = self._measured(r)
            if measured is not None:
                j = {k: j[k][measured] for k in ("arrival", "start", "departure")}
            w = slice(r.stats.warmup, None)
            a, st, d = j["arrival"][w], j["start"][w], j["departure"][w]
            parts.append(st - a if name == "waiting" else d - a if name == "sojourn" else d - st)
        return np.concatenate(parts)

    def _measured(self, r):
        """The measured jobs of a kept replication (a mask), or None when every job is: with failures the
        completed ones, with gang clocks the served ones (not lost)."""
        mask = None
        if self.system.failure_rate is not None and not r.saturated:
            mask = ~r.jobs["aborted"]
        if "lost" in r.jobs:
            mask = ~r.jobs["lost"] if mask is None else mask & ~r.jobs["lost"]
        return mask

    def to_frame(self):
        """Per-job table of every replication, warm-up jobs flagged (needs ``keep_jobs``)."""
        import pandas as pd

        frames = []
        for i, r in enumerate(self._kept()):
            j = r.jobs
            n = j["arrival"].size
            cut = r.stats.warmup
            measured = self._measured(r)
            if measured is not None:                # the warm-up counts completed (served) jobs
                done = np.flatnonzero(measured)
                cut = int(done[cut]) if cut < done.size else n
            frames.append(pd.DataFrame({
                "replication": i, "job": np.arange(n), "warmup": np.arange(n) < cut, **j,
                "waiting": j["start"] - j["arrival"], "sojourn": j["departure"] - j["arrival"],
                "execution": j["departure"] - j["start"]}))
        return pd.concat(frames, ignore_index=True)

    def quantile(self, metric: str, q: float) -> float:
        """The ``q`` quantile (any ``0 < q < 1``) of ``waiting``, ``sojourn`` or ``execution`` after the warm-up,
        pooled over the replications (logarithmic histograms: within 0.2 % relative)."""
        check_choice("metric", metric, METRICS)
        q = check_probability("q", q, open_low=True, open_high=True)
        return merge_histograms([s.histograms[metric] for s in self.stats]).quantile(q)

    def quantiles(self, metric: str, levels=QUANTILES, level: float = 0.95) -> dict[float, dict]:
        """Quantiles at any levels the caller asks for, keyed by the level as a float: ``{q: {"value": ...,
        "interval": [lo, hi] or None, "reason": why there is no interval, or None}}`` (see :meth:`quantile`
        and :meth:`quantile_interval`). ``summary()`` gives the levels of ``QUANTILES``, keyed the same way
        (floats; text only in the JSON the command line prints)."""
        return {float(q): {"value": self.quantile(metric, q), **self.quantile_interval(metric, q, level)}
                for q in levels}

    def quantile_interval(self, metric: str, q: float, level: float = 0.95) -> dict:
        """A sectioning interval of the ``q`` quantile: ``{"interval": [lo, hi] or None, "reason": ...}``.

        Centred on the pooled quantile, spread from the replications' own
        quantiles; given only with two or more replications each holding at
        least ``MIN_TAIL_JOBS`` = 50 measured jobs beyond the quantile (fewer
        undercover), else None with the reason.
        """
        value = self.quantile(metric, q)
        level = check_probability("level", level, open_low=True, open_high=True)
        stats = self.stats
        if len(stats) < 2:
            return {"interval": None, "reason": "one replication: a quantile interval needs 2 or more"}
        fewest = min(s.jobs for s in stats)
        if fewest * (1 - q) < MIN_TAIL_JOBS:
            return {"interval": None, "reason": f"a replication has {fewest * (1 - q):.0f} measured jobs beyond the "
                                                f"{q:g} quantile; {MIN_TAIL_JOBS} are needed"}
        return {"interval": within(sectioning_interval(value, [s.quantile(metric, q) for s in stats], level)),
                "reason": None}

    def _class_summary(self, level: float) -> list[dict]:
        """Per job class (k, barrier or not): jobs, share, means with t intervals over replications (two or
        more), quantiles; after the warm-up of all jobs."""
        from .runs import class_labels

        stats = self.stats
        total = sum(s.jobs for s in stats)
        out = []
        for c, (k, barrier) in enumerate(class_labels(self.system)):
            per_rep = [s.extra["classes"][c] for s in stats]
            jobs = sum(r["jobs"] for r in per_rep)
            if jobs == 0:
                continue
            row = {"tasks": k, "barrier": barrier, "jobs": int(jobs), "share": jobs / total if total else float("nan"),
                   "ci": {"level": level}, "quantiles": {}}
            for m in METRICS:
                row[f"mean_{m}"] = sum(r["sums"][m] for r in per_rep) / jobs
                means = [r["sums"][m] / r["jobs"] for r in per_rep if r["jobs"] > 0]
                row["ci"][m] = within(t_interval(means, level)) if len(means) >= 2 else None
                pooled = merge_histograms([r["histograms"][m] for r in per_rep])
                row["quantiles"][m] = {q: pooled.quantile(q) for q in QUANTILES}
            if len(stats) < 2:
                row["ci"]["reason"] = "one replication: per-class intervals need 2 or more replications"
            out.append(row)
        return out

    def _failure_summary(self, level: float, utilization: float) -> dict:
        """With failures: ``aborted_share``, ``mean_attempts`` per job, ``goodput`` (the work of the tasks of
        successful attempts per unit of task time spent, useful / work), ``work_per_job`` (task time spent per
        submitted job, failed attempts included) and ``work_per_completed`` (task time spent per completed job:
        all the work over the jobs that completed; by renewal-reward ``E[work of an attempt] / p`` whatever the
        attempt cap, as the goodput is), over every job of every replication
        (no warm-up: a job's attempts do not depend on the queue), with t intervals over replications, but
        for the aborted share a Wilson interval over all jobs (each job aborts or not independently of the
        others; with rare aborts a t interval over a few replications misses); the waiting, execution and
        sojourn above are those of the completed jobs."""
        per = [s.extra["failures"] for s in self.stats]
        jobs = sum(f["jobs"] for f in per)
        values = {"aborted_share": [f["aborted"] / f["jobs"] for f in per],
                  "mean_attempts": [f["attempts"] / f["jobs"] for f in per],
                  "goodput": [f["useful"] / f["work"] if f["work"] > 0 else float("nan") for f in per],
                  "work_per_job": [f["work"] / f["jobs"] for f in per],
                  "work_per_completed": [f["work"] / (f["jobs"] - f["aborted"]) if f["jobs"] > f["aborted"]
                                         else float("nan") for f in per]}
        completed = sum(f["jobs"] - f["aborted"] for f in per)
        out = {"aborted_share": sum(f["aborted"] for f in per) / jobs,
               "mean_attempts": sum(f["attempts"] for f in per) / jobs,
               "goodput": sum(f["useful"] for f in per) / max(sum(f["work"] for f in per), 1e-300),
               "work_per_job": sum(f["work"] for f in per) / jobs,
               "work_per_completed": sum(f["work"] for f in per) / completed if completed else None,
               "aborted_jobs": int(sum(f["aborted"] for f in per)), "failure_jobs": int(jobs),
               "failure_ci": {"level": level, "method": "t interval over replications (every job, no warm-up)"}}
        ranges = {"aborted_share": (0.0, 1.0), "mean_attempts": (1.0, math.inf), "goodput": (0.0, 1.0),
                  "work_per_job": (0.0, math.inf), "work_per_completed": (0.0, math.inf)}
        for name, v in values.items():
            finite = len(v) >= 2 and all(math.isfinite(x) for x in v)
            out["failure_ci"][name] = within(t_interval(v, level), *ranges[name]) if finite else None
        out["failure_ci"]["aborted_share"] = wilson_interval(out["aborted_jobs"], int(jobs), level)
        out["failure_ci"]["method"] = ("t interval over replications (every job, no warm-up); aborted share: "
                                       "Wilson score interval over every job")
        out["measured_jobs"] = ("mean_waiting, mean_execution, mean_sojourn and the quantiles: the completed jobs "
                                "only (aborted jobs are in aborted_share); mean_sojourn_submitted: every submitted "
                                "job, an aborted one until its abort")
        submitted = self._submitted_sojourn(level)
        out["failure_ci"]["sojourn_submitted"] = submitted.pop("ci")
        out.update(submitted)
        done = sum(f["completed_work"] for f in per)
        if done > 0:                        # the measured jobs are the completed ones: add the aborted ones' work
            # the aborted jobs' work is counted over every job, the window over the measured ones: at most 1
            out["utilization"] = min(1.0, utilization * sum(f["work"] for f in per) / done)
        return out

    def _extras(self, out: dict, level: float) -> None:
        """What failures and gang clocks add to a summary (:meth:`_failure_summary`, :meth:`_clock_summary`)."""
        extra = self.stats[0].extra
        if extra.get("failures"):
            out.update(self._failure_summary(level, out["utilization"]))
        if "clocks" in extra:
            self._clock_summary(out, level)
        if "workers" in extra:
            self._workers_summary(out, level)

    def _workers_summary(self, out: dict, level: float) -> None:
        """Moldable jobs (:mod:`barrier_queues.schedulers.moldable`): the mean workers a measured job took, with
        its interval as every mean's (t over replications, or over 20 batch means of one)."""
        parts = [s.extra["workers"] for s in self.stats]
        jobs = sum(p["jobs"] for p in parts)
        out["mean_workers"] = sum(p["sum"] for p in parts) / jobs if jobs else float("nan")
        if len(parts) >= 2:
            out["ci"]["workers"] = within(t_interval([p["sum"] / p["jobs"] if p["jobs"] else float("nan")
                                                      for p in parts], level))
        else:
            out["ci"]["workers"] = within(batch_means_interval(parts[0]["block_means"], 20, level)["interval"])

    def _clock_summary(self, out: dict, level: float) -> None:
        """With gang clocks (:mod:`barrier_queues.clocks`): per class and overall, the jobs submitted after the
        warm-up, the share lost, the lost work's share of all work submitted (``k r`` per lost job), requeues
        and time in backoff per job (under hold also the held share of worker time), with t intervals over
        replications (two or more: losses bunch in time, so jobs are not independent trials). The waiting,
        execution and sojourn above are the served jobs'."""
        pairs = [(clocks.tally_after(s.extra["clocks"], s.warmup), s) for s in self.stats]
        pairs = [(t, s) for t, s in pairs if t is not None]
        tallies = [t for t, _ in pairs]
        if not tallies:
            out["clock_note"] = "the warm-up reaches past the last mark of every replication: no clock counts"
            return
        from .runs import class_labels

        labels = class_labels(self.system) or [(None, None)]

        def rates(sums: np.ndarray) -> dict:
            jobs, lost, lost_work, requeues, away, served_work, _, _ = (float(v) for v in sums)
            total_work = lost_work + served_work
            return {"jobs": int(jobs), "lost_jobs": int(lost),
                    "lost_share": lost / jobs if jobs else None,
                    "lost_work_share": lost_work / total_work if total_work > 0 else None,
                    "requeues_per_job": requeues / jobs if jobs else None,
                    "backoff_per_job": away / jobs if jobs else None}

        def interval(per_rep: list, name: str):
            v = [r[name] for r in per_rep if r[name] is not None]
            return within(t_interval(v, level), 0.0, 1.0 if "share" in name else math.inf) if len(v) >= 2 else None

        names = ("lost_share", "lost_work_share", "requeues_per_job", "backoff_per_job")
        per_rep = [rates(t.sum(axis=0)) for t in tallies]
        total = rates(sum(t.sum(axis=0) for t in tallies))
        out["clocks"] = {"wait_budget": str(self.system.wait_budget), "on_budget": self.system.on_budget,
                         **total, "ci": {"level": level, **{n: interval(per_rep, n) for n in names}},
                         "measured": "the jobs submitted after the served jobs' warm-up (cut at the first of "
                                     f"{clocks.Tally.MARKS} marks past it); waiting, execution and sojourn are "
                                     "the served jobs' only (lost jobs are counted here, never averaged there)"}
        out.update({n: total[n] for n in names}, lost_jobs=total["lost_jobs"])
        if self.system.scheduling == "hold":          # the worker time held idle for gangs, lost ones too
            span = sum(self.system.servers * s.busy_span for _, s in pairs)
            out["held_share"] = float(sum(t[:, 7].sum() for t in tallies) / span) if span > 0 else None
            out["clocks"]["held_share"] = out["held_share"]
            held = [float(t[:, 7].sum() / (self.system.servers * s.busy_span)) for t, s in pairs if s.busy_span > 0]
            out["clocks"]["ci"]["held_share"] = (within(t_interval(held, level), 0.0, 1.0) if len(held) >= 2
                                                 else None)
        if len(labels) > 1:
            by_class = {}
            for c, (k, b) in enumerate(labels):
                row = rates(sum(t[c] for t in tallies))
                if row["jobs"]:
                    row["ci"] = {n: interval([rates(t[c]) for t in tallies], n) for n in names}
                    by_class[(k, b)] = row
            for row in out.get("classes", []):               # the served jobs' rows gain the class's counts
                counts = dict(by_class.get((row["tasks"], row["barrier"]), {}))
                row["clock_ci"] = counts.pop("ci", None)
                row.update({key: v for key, v in counts.items() if key != "jobs"})
            out["clocks"]["classes"] = [{"tasks": k, "barrier": b, **r} for (k, b), r in by_class.items()]

    def _submitted_sojourn(self, level: float) -> dict:
        """With failures, the sojourn of every submitted job (an aborted job's from its arrival to its abort)
        beside the completed jobs' ``mean_sojourn``: ``mean_sojourn_submitted`` and ``mean_abort_sojourn`` (the
        aborted jobs' alone, None without aborts), after each replication's warm-up. The warm-up is the measured
        (completed) jobs' one, carried to the submitted jobs at the first mark (every ``marks["every"]``-th
        submitted job, see :class:`barrier_queues.runs.Sink`) where that many jobs have completed; t interval
        over replications (two or more)."""
        sums, means = [0.0, 0, 0.0, 0], []
        for s in self.stats:
            f = s.extra["failures"]
            marks, every = f["marks"], f["marks"]["every"]
            done = (np.arange(1, marks["sojourn"].size + 1) * every) - marks["aborted"]   # completed at each mark
            i = int(np.searchsorted(done, s.warmup)) if s.warmup > 0 else -1
            if i >= marks["sojourn"].size:
                continue                                  # the warm-up reaches past the last mark
            cut = {k: (marks[k][i] if i >= 0 else 0) for k in ("sojourn", "aborted_sojourn", "aborted")}
            rep = [f["sojourn"] - cut["sojourn"], f["jobs"] - (i + 1) * every,
                   f["aborted_sojourn"] - cut["aborted_sojourn"], f["aborted"] - int(cut["aborted"])]
            sums = [a + b for a, b in zip(sums, rep, strict=True)]
            means.append(rep[0] / rep[1])
        out = {"mean_sojourn_submitted": sums[0] / sums[1] if sums[1] else None,
               "mean_abort_sojourn": sums[2] / sums[3] if sums[3] else None}
        out["ci"] = within(t_interval(means, level), 0.0, math.inf) if len(means) >= 2 else None
        return out

    def _stability(self, out: dict) -> None:
        """The verdict: ``stable`` False when the arrival rate is at or above a known limit, when replication
        0's pooled waiting drifts, or when any class's queue or waiting grows or the class starts only after the
        arrivals end (:func:`~barrier_queues.statistics.run_stability`); None when too close to an estimated
        limit to tell; else True. ``stability["reasons"]`` says which test decided."""
        from .runs import class_labels

        system, stats = self.system, self.stats
        verdict = stability_verdict(system)
        dr = drift(stats[0].block_means["waiting"], 20)
        labels = class_labels(system)
        run = run_stability(stats, labels or None)
        reasons = []
        if verdict["verdict"] == "above":
            reasons.append(f"the arrival rate is at or above lambda_max = {verdict['lambda_max']:.6g} "
                           f"({verdict['method']})")
        if dr["drifting"]:
            reasons.append(f"the waiting times of all jobs grow (Kendall tau {dr['kendall_tau']:.2f})")
        for c in run["classes"]:
            name = f"k = {c['tasks']}{'' if c['barrier'] else ' plain'}" if labels else "the jobs"
            if c["queue_grows"]:
                reasons.append(f"the queue of {name} grows by {c['queue_growth']:.3g} jobs per unit time "
                               f"(Kendall tau {c['queue_tau']:.2f})")
            if c["waiting_grows"]:
                reasons.append(f"the waiting of {name} grows by {c['waiting_growth']:.3g} per unit time "
                               f"(Kendall tau {c['waiting_tau']:.2f})")
            if c["starts_late"]:
                reasons.append(f"{c['late_share']:.0%} of {name} ({c['unstarted']:,} jobs) were still waiting at "
                               "the last arrival: they start only once the arrivals end")
        # a class none of whose jobs started before the last arrival (too few for the late-start test) is not
        # passed: whether it is served at all is not known from this run
        never = [c for c in run["classes"] if c["arrived"] and c["unstarted"] == c["arrived"] and c["stable"]]
        if labels and run["queue_grows"] and not any(c["queue_grows"] for c in run["classes"]):
            reasons.append(f"the queue of all jobs grows by {run['queue_growth']:.3g} jobs per unit time")
        out["stable"] = (False if reasons else None if verdict["verdict"] == "undecided" or never else True)
        for c in never:
            c["stable"] = None
        out["stability"] = {"lambda_max": verdict["lambda_max"], "method": verdict["method"],
                            "drift_test": "Kendall tau of 20 batch means of replication 0's waiting times", **dr,
                            "queue_test": "per class: Kendall tau of 20 batch means of the queue (jobs waiting at "
                                          "each 1 % segment's first arrival) and of the mean waiting, averaged over "
                                          "the replications; tau > 0.6 with p < 0.001 means growth",
                            "queue_tau": run["queue_tau"], "queue_growth": run["queue_growth"],
                            "unstarted": run["unstarted"], "censored": run["censored"],
                            "censoring": "none: every job that arrived runs to its end (the system drains after the "
                                         "last arrival); unstarted counts the jobs still waiting at the last "
                                         "arrival, whose waiting the drain completed",
                            "reasons": reasons}
        if labels:
            out["stability"]["classes"] = run["classes"]
        elif run["classes"]:
            only = run["classes"][0]
            out["stability"].update({k: only[k] for k in ("queue_grows", "mean_queue", "late_share")})
        if verdict["lambda_max_ci"] is not None:
            out["stability"]["lambda_max_ci"] = verdict["lambda_max_ci"]
        if out["stable"] is None and verdict["verdict"] == "undecided":
            out["stability"]["undecided"] = (
                f"the arrival rate lies within {MC_LIMIT_MARGIN:g} half-widths of the 95 % interval of the "
                "Monte Carlo stability limit and the drift test does not flag a growing queue: too close to "
                "the limit to tell (a saturated run, or a longer one, decides)")
        elif out["stable"] is None:
            names = ", ".join(f"k = {c['tasks']}{'' if c['barrier'] else ' plain'} ({c['arrived']:,} job(s))"
                              for c in never)
            out["stability"]["undecided"] = (
                f"no job of {names} started before the last arrival, too few for the late-start test: whether "
                "that class is served at all is not known from this run (run more jobs)")
        out["warnings"] = []

    @staticmethod
    def _withdraw_means(out: dict) -> None:
        """An unstable system has no steady-state mean: its means, of all jobs and of every class, move to
        ``run_means`` (this run only: they grow with its length) and the mean fields become None."""
        growth = out["stability"]["queue_growth"]
        out["run_means"] = {m: out[f"mean_{m}"] for m in METRICS}
        out["run_means_note"] = (
            "means of this run only, not steady-state means: the system is unstable ("
            + "; ".join(out["stability"]["reasons"]) + "), so they grow with run length"
            + (f" (the queue of all jobs grows by {growth:.3g} jobs per unit time)"
               if math.isfinite(growth) and growth > 0 else ""))
        for m in METRICS:
            out[f"mean_{m}"] = None
            out["ci"][m] = None
        for key in ("mean_sojourn_submitted", "mean_abort_sojourn", "mean_workers"):   # failures, moldable jobs
            if key in out:
                out["run_means"][key.removeprefix("mean_")] = out[key]
                out[key] = None
        if "failure_ci" in out:
            out["failure_ci"]["sojourn_submitted"] = None
        if "workers" in out["ci"]:
            out["ci"]["workers"] = None
        for row in out.get("classes", []):
            row["run_means"] = {m: row[f"mean_{m}"] for m in METRICS}
            for m in METRICS:
                row[f"mean_{m}"] = None
                row["ci"][m] = None

    def _check_run_length(self, out: dict) -> None:
        """The run-length warnings into ``out``; a run too short to judge does not pass (``stable`` None)."""
        out["warnings"] += self._run_length_warnings(out)
        if out["stability"].get("too_short") and out["stable"] is True:
            out["stable"] = None
            out["stability"]["undecided"] = f"the run is too short to judge: {out['stability']['too_short']}"

    def _run_length_warnings(self, out: dict) -> list[str]:
        """Runs too short for their slowest class: the measured time is fewer than
        :data:`~barrier_queues.statistics.MIN_SPAN_EXECUTIONS` times the longest class mean execution time, or
        the warm-up removed most of a class's jobs. Their means are those of a transient."""
        warnings = []
        span = float(np.mean([s.span for s in self.stats]))
        rows = out.get("classes") or [{"tasks": None, "mean_execution": out["mean_execution"], "jobs": out["jobs"]}]
        slow = max(rows, key=lambda r: r["mean_execution"] if math.isfinite(r["mean_execution"] or math.nan)
                   else -1.0)
        longest = slow["mean_execution"]
        if longest is not None and math.isfinite(longest) and longest > 0 and span < MIN_SPAN_EXECUTIONS * longest:
            which = "" if slow["tasks"] is None else f" (the class k = {slow['tasks']})"
            short = (f"the measured part of each run spans {span:.4g} time units, {span / longest:.3g} times the "
                     f"longest mean execution time {longest:.4g}{which}, fewer than {MIN_SPAN_EXECUTIONS}")
            out["stability"]["too_short"] = short
            warnings.append(f"{short}, so the means may be those of the empty start; run more jobs")
        arrived = {(c["tasks"], c["barrier"]): c["arrived"] for c in out["stability"].get("classes", [])}
        for row in out.get("classes", []):
            total = arrived.get((row["tasks"], row["barrier"]), 0)
            if total >= 20 and row["jobs"] < 0.5 * total:
                warnings.append(f"the warm-up removed {1 - row['jobs'] / total:.0%} of the jobs of k = {row['tasks']}"
                                f"{'' if row['barrier'] else ' plain'}: its means rest on the rest; run more jobs")
        return warnings

    def provenance(self) -> dict:
        """What produced these numbers: library and numpy versions, the system, run sizes, seed, warm-up rule."""
        from ._version import __version__

        stats = self.stats
        return {"library": f"barrier-queues {__version__}", "numpy": np.__version__,
                "system": self.system.describe(), "jobs_per_replication": int(stats[0].total_jobs),
                "replications": len(stats), "seed": None if self.seed is None else str(self.seed),
                "warmup": {"rule": stats[0].warmup_rule, "fixed": self.fixed_warmup,
                           "jobs": [int(s.warmup) for s in stats]},
                "ci": "t interval over replications" if len(stats) >= 2 else "batch means (20) of one replication"}

    def utilization(self, column: str = "work") -> float:
        """Measured utilization: the measured jobs' server time (``work``; or ``useful``, ``held``) / (s x the
        time from their first arrival to the last departure), summed over replications.

        Every measured job's server time lies inside that window, so the ratio is at most 1 (it leaves out the
        warm-up jobs' share of the window, a bias of order one sojourn time over the run). NaN with fewer than
        ``MIN_UTILIZATION_JOBS`` = 100 measured jobs: a few jobs give no estimate of a long-run fraction.
        """
        stats = self.stats
        if sum(s.jobs for s in stats) < MIN_UTILIZATION_JOBS:
            return float("nan")
        busy = sum(s.sums[column] for s in stats)
        span = sum(s.busy_span for s in stats)
        return float(busy / (self.system.servers * span)) if span > 0 else float("nan")

    def summary(self, level: float = 0.95) -> dict:
        """Means, quantiles and measured loads with confidence intervals (JSON-ready, NaN for missing).

        Means: t intervals over replications (two or more), else over 20
        batch means of the one replication (with the lag-1 autocorrelation
        of the batch means and a test of their independence). Quantiles: from
        the pooled histograms (within 0.2 % relative); their intervals are
        sectioning intervals (:func:`~barrier_queues.statistics.sectioning_interval`:
        centred on the pooled quantile, spread from the replications'
        quantiles; two or more replications, each with at least
        ``MIN_TAIL_JOBS`` = 50 measured jobs beyond the quantile, else NaN:
        fewer undercover).
        """
        level = check_probability("level", level, open_low=True, open_high=True)
        if level in self._summary_cache:
            return self._summary_cache[level]
        from .load import offered_utilization

        system, stats = self.system, self.stats
        jobs = sum(s.jobs for s in stats)
        out = {"jobs": int(jobs), "replications": len(stats),
               "warmup": {"rule": stats[0].warmup_rule, "jobs": [s.warmup for s in stats],
                          "at_limit": [s.warmup_at_limit for s in stats]},
               "utilization": self.utilization(), "offered_utilization": offered_utilization(system),
               "useful_utilization": self.utilization("useful"),
               **({"utilization_note": f"no measured utilization from fewer than {MIN_UTILIZATION_JOBS} measured "
                                       f"jobs (got {jobs}): a few jobs give no estimate of a long-run fraction"}
                  if jobs < MIN_UTILIZATION_JOBS else {}),
               "mean_completed_tasks": sum(s.sums["completed"] for s in stats) / jobs if jobs else float("nan"),
               "ci": {"level": level}, "quantiles": {}, "quantile_ci": {},
               "quantile_ci_rule": f"sectioning: pooled quantile +- t x spread of the replications' quantiles; "
                                   f"null unless 2 or more replications each have {MIN_TAIL_JOBS} or more "
                                   f"measured jobs beyond the quantile",
               "quantile_accuracy": f"within {ALPHA:.1%} relative (logarithmic histograms); values below "
                                    f"1e-6 of the mean task time count as 0"}
        if system.placement == "sample":
            out["held_share"] = self.utilization("held")
        for name in METRICS:
            out[f"mean_{name}"] = sum(s.sums[name] for s in stats) / jobs if jobs else float("nan")
            if len(stats) >= 2:
                out["ci"][name] = within(t_interval([s.mean(name) for s in stats], level))
            else:
                bm = batch_means_interval(stats[0].block_means[name], 20, level)
                out["ci"][name] = within(bm["interval"])
                out["ci"][f"{name}_batches"] = {k: bm[k] for k in ("batches", "lag1", "pvalue", "independent")}
            out["quantiles"][name] = {q: self.quantile(name, q) for q in QUANTILES}
            out["quantile_ci"][name] = {}
            for q in QUANTILES:
                ci = self.quantile_interval(name, q, level)["interval"]
                out["quantile_ci"][name][q] = ci if ci is not None else [float("nan"), float("nan")]
        out["ci"]["method"] = ("t interval over replications" if len(stats) >= 2 else
                               "t interval over 20 batch means of one replication")
        self._stability(out)
        if stats[0].extra.get("classes"):
            out["classes"] = self._class_summary(level)
            verdicts = {(c["tasks"], c["barrier"]): c["stable"] for c in out["stability"].get("classes", [])}
            for row in out["classes"]:
                row["stable"] = verdicts.get((row["tasks"], row["barrier"]))
        self._extras(out, level)
        if self.precision is not None:
            out["precision"] = dict(self.precision)
            if out["stable"] is not True and out["precision"]["met"]:
                out["precision"]["met"] = False           # an interval of a mean that drifts is no precision
                out["precision"]["reason"] = (
                    "the system is not in a steady state (stable: "
                    f"{'false' if out['stable'] is False else 'cannot tell'}): its means grow with run length, "
                    "so no interval of them is a precision")
        if out["stable"] is False:
            self._withdraw_means(out)
        else:
            self._check_run_length(out)
        total_jobs = sum(s.total_jobs for s in stats)
        kernel = sum(s.kernel_seconds for s in stats)
        out["seconds"] = self.seconds
        out["jobs_per_second"] = total_jobs / self.seconds if self.seconds > 0 else float("nan")
        out["kernel_jobs_per_second"] = total_jobs / kernel if kernel > 0 else float("nan")
        self._summary_cache[level] = out
        return out


# --------------------------------------------------------------------------------------------------
# outside checks and traces

def compare_with_exact(estimates, intervals, exact) -> dict:
    """How simulation estimates with confidence intervals compare with exact values.

    Returns ``inside`` (how many exact values lie in their interval), ``total``
    and ``max_rel_error`` (largest ``|estimate / exact - 1|``). With 95 %
    intervals about one exact value in twenty may fall outside by chance.
    """
    est = np.asarray(estimates, dtype=float)
    ci = np.asarray(list(intervals), dtype=float).reshape(-1, 2)
    ex = np.asarray(exact, dtype=float)
    if not (est.shape == ex.shape == ci.shape[:1]):
        raise ParameterError(f"estimates, intervals and exact must have the same length "
                             f"(got {est.size}, {ci.shape[0]} and {ex.size})")
    inside = (ci[:, 0] <= ex) & (ex <= ci[:, 1])
    return {"inside": int(inside.sum()), "total": int(ex.size),
            "max_rel_error": float(np.max(np.abs(est / ex - 1))) if ex.size else 0.0}


def trace(system: BarrierSystem, jobs: int = 10, seed=None):
    """Per-task and per-job records of a short run, for schedule pictures (Fig. 1).

    Returns ``(tasks, jobs)``: tasks with columns ``job, worker, start, end``
    (end = task end, kill time, or the end of its last phase) and jobs with
    ``arrival, start, departure, tasks, barrier, completed``.
    """
    import pandas as pd

    system = as_system(system)
    if system.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) for a trace (got None)")
    most = min(MAX_TRACE_JOBS, chunk_jobs(system))        # a trace is one chunk of inputs
    jobs = check_int("jobs", jobs, low=1, high=most, high_name=f"{most:,} for this system")
    rep = run_replication(system, jobs, spawn_seeds(seed, 1)[0], trace=True, warmup=0)
    j = rep.jobs
    job_table = pd.DataFrame({"job": np.arange(jobs), "arrival": j["arrival"], "start": j["start"],
                              "departure": j["departure"], "tasks": j["tasks"], "barrier": j["barrier"],
                              "completed": j["completed"]})
    return rep.trace, job_table


__all__ = ["MAX_JOBS", "MAX_KEPT_JOBS", "MAX_TRACE_JOBS", "SimulationResult", "check_run", "compare_with_exact",
           "simulate", "simulate_many", "trace"]
