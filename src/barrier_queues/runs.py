"""One replication of a system, and many of them on a backend.

:func:`run_replication` draws a replication's random inputs
(:mod:`barrier_queues.inputs`), runs the system's scheduler
(:mod:`barrier_queues.schedulers`) chunk by chunk and streams per-job
results into the statistics (:class:`barrier_queues.statistics.RunAccumulator`),
keeping per-job records only on request. :func:`run_replications` runs many
on a backend (:mod:`barrier_queues.backends`) and chooses each system's
warm-up over its replications together.

Times are in the system's time unit (mean task time ``1/mu``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import clocks
from ._validation import ParameterError, check_int
from .backends import Backend, pool_map, spark_map
from .inputs import as_kernel_inputs, chunk_jobs, generator
from .schedulers import of as scheduler_of
from .statistics import MIN_SATURATED_JOBS, ReplicationStats, RunAccumulator, RunPartial, finish_replications
from .system import BarrierSystem

#: per-job record fields (``start``: the start of the job's last task)
JOB_FIELDS = ("arrival", "start", "departure", "work", "useful", "completed", "held", "tasks", "barrier", "attempts",
              "aborted")
#: per-job record fields of moldable jobs (:mod:`barrier_queues.schedulers.moldable`: the workers it took)
MOLDABLE_FIELDS = ("workers",)
#: per-job record fields with gang clocks (:mod:`barrier_queues.clocks`; a lost job's ``start`` and
#: ``departure``: when it left, its ``work``: the k r it would have held)
CLOCK_FIELDS = ("lost", "requeues", "backoff")


@dataclass
class Replication:
    """One replication: its streaming statistics and, on request, per-job records and a trace.

    ``partial``: the streamed data before the warm-up is chosen; ``stats``:
    the statistics after it (chosen for all replications of a system together
    by :func:`~barrier_queues.statistics.finish_replications`; for a lone
    replication on first use). ``jobs``: dict of per-job arrays
    (:data:`JOB_FIELDS`; ``start`` is the start of the job's last task,
    ``work`` the time its tasks occupied workers, ``useful`` the work of tasks
    that completed, ``held`` the worker-time spent holding for it before it
    started; with failures, ``attempts`` and ``aborted``, and ``start`` the
    first attempt's) when kept.
    """

    partial: RunPartial | None = None
    jobs: dict | None = None
    trace: object = None
    kernel_seconds: float = 0.0
    seconds: float = 0.0
    saturated: bool = False
    _stats: ReplicationStats | None = None

    @property
    def stats(self) -> ReplicationStats:
        if self._stats is None:
            self._stats = finish_replications([self.partial], self.saturated)[0]
            self.partial = None
        return self._stats

    def __getattr__(self, name):          # rep.start, rep.departure, ... when jobs were kept
        jobs = self.__dict__.get("jobs")
        if jobs is not None and name in jobs:
            return jobs[name]
        raise AttributeError(name)


def class_labels(system) -> list[tuple[int, bool]]:
    """The job classes ``(k, barrier)`` reported apart, by class index: every k of barrier jobs, then every k
    of non-barrier jobs (a job's index: the position of its k, plus the number of k if it is not a barrier
    job). One class (a single k of one kind) gives an empty list: nothing to report apart."""
    if system.workload is not None:
        return [(c.tasks, c.barrier) for c in system.workload] if len(system.workload) > 1 else []
    ks = [int(k) for k in system.ks]
    if len(ks) == 1 and system.barrier_fraction in (0.0, 1.0):
        return []
    return [(k, True) for k in ks] + [(k, False) for k in ks]


def finish_group(reps: list, saturated: bool = False) -> list:
    """Choose the warm-up of a system's replications together and drop their partial data."""
    for rep, stats in zip(reps, finish_replications([r.partial for r in reps], saturated), strict=True):
        rep._stats = stats
        rep.partial = None
    return reps


class Sink:
    """Receives per-job arrays chunk by chunk: statistics, and kept or written records."""

    CSV_HEADER = ("replication,job,arrival,start,departure,waiting,sojourn,execution,tasks,barrier,work,useful,"
                  "completed,held\n")
    CSV_FORMAT = ["%d", "%d"] + ["%.17g"] * 6 + ["%d", "%d", "%.17g", "%.17g", "%d", "%.17g"]

    def __init__(self, system, jobs, warmup, keep, csv_path, replication, measure_aborted=False):
        """(With failures, ``failures`` counts every job and ``marks`` its running sums, see
        :meth:`_count_failures`.)"""
        self.ks, self.classes = system.ks, len(class_labels(system))
        self.acc = RunAccumulator(jobs, floor=1e-6 * system.mean_task, warmup=warmup, classes=self.classes)
        self.clock = clocks.Tally(jobs, self.classes) if clocks.enabled(system) else None
        self.fields = (JOB_FIELDS + (CLOCK_FIELDS if self.clock is not None else ())
                       + (MOLDABLE_FIELDS if system.moldable is not None else ()))
        self.workers = [] if system.moldable is not None else None      # moldable jobs: the workers each took
        self.keep = {f: [] for f in self.fields} if keep else None
        self.csv = None
        self.index = 0
        self.replication = replication
        self.failures = ({"jobs": 0, "aborted": 0, "attempts": 0, "work": 0.0, "completed_work": 0.0,
                          "useful": 0.0, "sojourn": 0.0, "aborted_sojourn": 0.0}
                         if system.failure_rate is not None else None)
        self.marks: dict = {"sojourn": [], "aborted_sojourn": [], "aborted": []}   # see _count_failures
        self.mark_every = max(100, -(-int(jobs) // 100_000))     # at most 100,000 marks
        self.measure_aborted = measure_aborted      # saturated runs: every departure counts towards the limit
        if csv_path is not None:
            self.csv = open(csv_path, "w")  # noqa: SIM115 (closed in close())
            extra = (",attempts,aborted" if self.failures is not None else "") + (
                ",lost,requeues,backoff" if self.clock is not None else "") + (
                ",workers" if self.workers is not None else "")
            self.csv.write(self.CSV_HEADER[:-1] + extra + "\n")

    def cuts(self, first: int, n: int, every: int) -> list:
        """Places ``0 < p < n`` in the next ``n`` jobs (the first of them job ``first`` of those added) where they
        may be added in pieces with the statistics of one piece: where a segment of the measured jobs starts
        (block sums and per-class sums are taken per segment piece; the rest is counts and running values),
        about every ``every`` jobs. None with failures or clocks (aborted and lost jobs are left out before they
        are measured)."""
        if self.failures is not None or self.clock is not None:
            return []
        step = max(1, every // self.acc.segment) * self.acc.segment
        lo = first - self.acc.skip                      # the measured index of the first job (< 0: in the warm-up)
        start = (max(lo, 0) // step + 1) * step
        return list(range(start - lo, n, step))

    def add(self, chunk: dict) -> None:
        if self.csv is not None:
            self._write_csv(chunk)
        if self.keep is not None:
            n = chunk["arrival"].size
            for f in self.fields:
                default = np.ones(n, dtype=np.int64) if f == "attempts" else np.zeros(n)
                # (copies: a scheduler may write into its buffers again once the next chunk's results are added)
                self.keep[f].append(np.array(chunk[f]) if f in chunk else default)
        if self.workers is not None:
            self.workers.append(np.array(chunk["workers"], dtype=np.int64))
        if "aborted" in chunk:              # failures: aborted jobs are counted apart, the rest measured
            self._count_failures(chunk)
        classes = None
        if self.classes > 1 and "cls" in chunk:
            classes = chunk["cls"]
        elif self.classes > 1:
            classes = np.searchsorted(self.ks, chunk["tasks"]) + np.where(chunk["barrier"], 0, self.ks.size)
        if self.clock is not None:          # clocks: what they did, counted apart; lost jobs are not measured
            self.clock.add(classes, chunk["lost"], chunk["work"], chunk["requeues"], chunk["backoff"],
                           chunk.get("held"))
        drop = chunk["aborted"] if "aborted" in chunk and not self.measure_aborted else None
        if self.clock is not None:
            drop = chunk["lost"]
        if drop is not None and drop.any():
            ok = ~drop
            size = ok.size
            chunk = {key: v[ok] if isinstance(v, np.ndarray) and v.shape[:1] == (size,) else v
                     for key, v in chunk.items()}
            classes = classes[ok] if classes is not None else None
        held = chunk.get("held")
        self.acc.add(chunk["arrival"], chunk["start"], chunk["departure"], chunk["work"], chunk["useful"],
                     chunk["completed"], held, classes)

    def _write_csv(self, chunk: dict) -> None:
        n = chunk["arrival"].size
        held = chunk.get("held")
        a, st, d = chunk["arrival"], chunk["start"], chunk["departure"]
        cols = [np.full(n, self.replication), np.arange(self.index, self.index + n), a, st, d, st - a, d - a,
                d - st, chunk["tasks"], chunk["barrier"].astype(int), chunk["work"], chunk["useful"],
                chunk["completed"], held if held is not None else np.zeros(n)]
        fmt = self.CSV_FORMAT
        if self.failures is not None:
            cols += [chunk["attempts"], chunk["aborted"].astype(int)]
            fmt = fmt + ["%d", "%d"]
        if self.clock is not None:
            cols += [chunk["lost"].astype(int), chunk["requeues"], chunk["backoff"]]
            fmt = fmt + ["%d", "%d", "%.17g"]
        if self.workers is not None:
            cols.append(chunk["workers"])
            fmt = fmt + ["%d"]
        np.savetxt(self.csv, np.column_stack(cols), delimiter=",", fmt=fmt)
        self.index += n

    def _count_failures(self, chunk: dict) -> None:
        """Every job, aborted or not: attempts, aborts and the work done (they need no warm-up: a job's attempts
        do not depend on the queue, see :mod:`barrier_queues.failures`)."""
        f = self.failures
        aborted, sojourn = chunk["aborted"], chunk["departure"] - chunk["arrival"]   # an aborted job: until its abort
        # the running sums after every mark_every-th submitted job, so that the sojourn of every submitted job can
        # be taken after the measured jobs' warm-up (known only at the end; see SimulationResult._failure_summary)
        every = self.mark_every
        at = np.arange(every - 1 - f["jobs"] % every, sojourn.size, every)
        if at.size:
            lost = np.where(aborted, sojourn, 0.0)
            self.marks["sojourn"].append(f["sojourn"] + np.cumsum(sojourn)[at])
            self.marks["aborted_sojourn"].append(f["aborted_sojourn"] + np.cumsum(lost)[at])
            self.marks["aborted"].append(f["aborted"] + np.cumsum(aborted)[at])
        f["sojourn"] += float(sojourn.sum())
        f["aborted_sojourn"] += float(sojourn[aborted].sum())
        f["jobs"] += chunk["arrival"].size
        f["aborted"] += int(aborted.sum())
        f["attempts"] += int(chunk["attempts"].sum())
        f["work"] += float(chunk["work"].sum())
        f["completed_work"] += float(chunk["work"][~chunk["aborted"]].sum())
        f["useful"] += float(chunk["useful"].sum())

    def close(self):
        if self.csv is not None:
            self.csv.close()
        jobs = None
        if self.keep is not None:
            jobs = {f: np.concatenate(v) if v else np.empty(0) for f, v in self.keep.items()}
            jobs["tasks"] = jobs["tasks"].astype(np.int64)
            jobs["barrier"] = jobs["barrier"].astype(bool)
            jobs["completed"] = jobs["completed"].astype(np.int64)
            jobs["attempts"] = jobs["attempts"].astype(np.int64)
            jobs["aborted"] = jobs["aborted"].astype(bool)
            if self.workers is not None:
                jobs["workers"] = jobs["workers"].astype(np.int64)
            if self.clock is not None:
                jobs["lost"] = jobs["lost"].astype(bool)
                jobs["requeues"] = jobs["requeues"].astype(np.int64)
        partial = self.acc.partial()
        if self.failures is not None:
            self.failures["marks"] = {"every": self.mark_every, **{k: np.concatenate(v) if v else np.empty(0)
                                                             for k, v in self.marks.items()}}
        partial.failures = self.failures
        partial.clocks = self.clock.state() if self.clock is not None else None
        partial.workers = np.concatenate(self.workers) if self.workers else None
        return partial, jobs


def run_replication(system: BarrierSystem, jobs: int, seed, saturated: bool = False, trace: bool = False,
                    keep_jobs: bool = False, warmup: int | None = None, jobs_csv=None,
                    replication: int = 0) -> Replication:
    """One replication of ``jobs`` jobs from ``seed`` (int, SeedSequence or Generator).

    ``warmup``: jobs dropped at the start (None: MSER-5 at the end).
    ``trace`` (one chunk of jobs at most, see :func:`~barrier_queues.trace`) adds per-task records;
    ``keep_jobs`` per-job arrays; ``jobs_csv`` writes per-job rows to that file as they come.
    """
    if trace and jobs > chunk_jobs(system):
        raise ParameterError(f"jobs must be at most {chunk_jobs(system):,} with trace for this system "
                             f"(got {jobs:,}): a trace is one chunk of inputs")
    ensure_compiled(system.placement)
    t_begin = time.perf_counter()
    sink = Sink(system, jobs, warmup, keep_jobs or trace, jobs_csv, replication, measure_aborted=saturated)
    kernel, frame = scheduler_of(system).run(system, jobs, generator(seed), saturated, trace, sink)
    partial, kept = sink.close()
    seconds = time.perf_counter() - t_begin
    partial.seconds, partial.kernel_seconds = seconds, kernel
    return Replication(partial, kept, frame, kernel, seconds, saturated)


_COMPILED: set = set()


def ensure_compiled(placement: str = "central") -> None:
    """Run a scheduler's kernel once on a tiny system before any fork or timing (a missing build fails here)."""
    if placement in _COMPILED:
        return
    _COMPILED.add(placement)          # run_replication below must not come back here
    try:
        system = BarrierSystem(servers=2, tasks=1, arrival_rate=1.0, placement=placement)
        run_replication(system, 16, np.random.default_rng(0), warmup=0)
    except Exception:
        _COMPILED.discard(placement)
        raise


def run_inputs(system: BarrierSystem, inputs: dict, phase: float = 0.0, probes=None) -> dict:
    """Run the system's kernel on given inputs (one chunk): per-job ``start``, ``departure``, ``work``,
    ``useful``, ``completed`` (and ``held`` for batch sampling).

    ``inputs`` has the arrays of :func:`~barrier_queues.inputs.draw_jobs`
    (``arrival`` sorted, ``tasks``, ``barrier``, ``times``, ``offsets``);
    ``phase`` is the revive timer's phase for the event overhead; ``probes`` =
    ``(probes, offsets)`` for batch sampling. Used to replay measured
    workloads (e.g. a Spark run's own arrivals and task times) through the
    same scheduler as the simulator.
    """
    ensure_compiled(system.placement)
    if inputs["arrival"].size == 0:
        raise ParameterError("inputs must hold at least one job (got none)")
    if np.any(np.diff(inputs["arrival"]) < 0):
        raise ParameterError("inputs arrival times must be sorted (non-decreasing)")
    arrays = as_kernel_inputs(inputs)
    if probes is not None:
        arrays["probes"] = probes
    return scheduler_of(system).run_inputs(system, arrays, phase)


# --------------------------------------------------------------------------------------------------
# many replications

@dataclass(frozen=True)
class Task:
    """One replication to run: its system, size, stream and outputs."""

    system: BarrierSystem
    jobs: int
    seed: object
    saturated: bool = False
    warmup: int | None = None
    keep: bool = False
    csv_path: object = None
    index: int = 0


def _run_task(task: Task) -> Replication:
    return run_replication(task.system, task.jobs, task.seed, task.saturated, keep_jobs=task.keep,
                           warmup=task.warmup, jobs_csv=task.csv_path, replication=task.index)


def _run_group(group: list) -> list:
    """All replications of one system (a Spark task): run and finished together."""
    return finish_group([_run_task(t) for t in group], group[0].saturated)


def run_replications(tasks: list[Task], backend: Backend, workers: int | None = None, progress: bool | None = None,
                     desc: str = "", group: int = 1) -> list[Replication]:
    """Run replication tasks on ``backend``: in order, one system's ``group`` consecutive replications
    finished together (their warm-up chosen together as soon as the last is in, their partial data dropped,
    so memory holds one system's partial data at a time). Same results, bit for bit, on every backend."""
    groups = [tasks[i:i + group] for i in range(0, len(tasks), group)]
    if backend.name == "spark" and len(tasks) > 1:
        return [rep for reps in spark_map(_run_group, groups, backend.master) for rep in reps]
    for placement in {t.system.placement for t in tasks}:
        ensure_compiled(placement)
    results, pending = [], []
    for rep in pool_map(_run_task, tasks, workers, progress, desc):
        pending.append(rep)
        if len(pending) == group:
            results += finish_group(pending, tasks[0].saturated)
            pending = []
    return results


#: the most jobs one replication may have (a guard against typos; streaming needs no more memory)
MAX_JOBS = 10**11
#: the most jobs kept in memory per replication (keep_jobs) or traced
MAX_KEPT_JOBS = 50_000_000
MAX_TRACE_JOBS = 10_000
#: the most task draws a run may need (jobs x replications x E[k] x phases): minutes of work at the kernels'
#: speed (CHANGELOG); a larger study is several runs or a sweep
MAX_DRAWS = 5 * 10**9
#: a run of more task draws than this says so on the command line before it starts (it takes a while)
NOTICE_DRAWS = 2 * 10**8


def run_draws(system, jobs: int, replications: int) -> float:
    """The task draws a run needs: jobs x replications x E[k] x phases (what :data:`MAX_DRAWS` bounds)."""
    return jobs * replications * system.mean_tasks * system.phases


def check_run(jobs, replications, warmup, keep_jobs=False, systems=(), saturated: bool = False):
    """Run sizes checked before any work (jobs, replications, warm-up, total draws, each scheduler's guards)."""
    jobs = check_int("jobs", jobs, low=2, high=MAX_JOBS, high_name=f"{MAX_JOBS:.0e}")
    replications = check_int("replications", replications, low=1, high=100_000, high_name="100,000")
    if saturated and jobs < MIN_SATURATED_JOBS:
        raise ParameterError(f"jobs must be at least {MIN_SATURATED_JOBS} per replication for a saturated run (got "
                             f"{jobs:,}): the start rate over fewer starts is no estimate of the stability limit")
    for system in systems:
        draws = run_draws(system, jobs, replications)
        if draws > MAX_DRAWS:
            raise ParameterError(f"jobs x replications x tasks x phases must be at most {MAX_DRAWS:.0e} task draws "
                                 f"(got {draws:.3g}): lower jobs or replications, or split the study into runs")
        scheduler_of(system).guard(system, jobs, saturated)
    if warmup is not None:
        warmup = check_int("warmup", warmup, low=0, high=jobs - 2, high_name=f"jobs - 2 = {jobs - 2}")
    if keep_jobs and jobs > MAX_KEPT_JOBS:
        raise ParameterError(f"jobs must be at most {MAX_KEPT_JOBS:,} per replication with keep_jobs "
                             f"(got {jobs:,}); statistics stream without it")
    return jobs, replications, warmup



__all__ = ["JOB_FIELDS", "MAX_DRAWS", "MAX_JOBS", "MAX_KEPT_JOBS", "MAX_TRACE_JOBS", "MOLDABLE_FIELDS", "NOTICE_DRAWS",
           "Replication", "Sink", "Task", "check_run", "class_labels", "ensure_compiled", "finish_group", "run_draws",
           "run_inputs", "run_replication", "run_replications"]
