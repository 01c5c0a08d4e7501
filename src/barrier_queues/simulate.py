"""Simulation of barrier systems: random inputs, replications and streaming summaries.

:func:`simulate` runs ``replications`` independent runs of a
:class:`~barrier_queues.BarrierSystem` (any system of MODEL.md section 2 and
EXTENSIONS.md: 1 or 2 barriers, (s,k,l), knee and timeout release, hybrid,
heterogeneous k, phases with ideal or Spark ``barrier()``, Spark's overhead
models, the central FIFO queue or batch sampling with late binding).

* **Random inputs** are drawn in Python with numpy Generators
  (:func:`draw_jobs`, :func:`draw_probes`), chunk by chunk (65,536 jobs), in a
  fixed order, from independent streams per replication
  (``SeedSequence(seed).spawn``); the probed workers of batch sampling come
  from a child stream, so a sampled system sees exactly the jobs of the
  central one with the same seed. Same seed, same results, bit for bit,
  whatever the number of processes.
* **The kernels** (:mod:`barrier_queues._kernels`) carry the system's state
  from chunk to chunk; a plain-Python reference (:mod:`barrier_queues.reference`)
  fed the same inputs gives identical per-job results.
* **Statistics stream** (:class:`barrier_queues.statistics.RunAccumulator`):
  memory does not grow with the number of jobs; the warm-up is chosen by
  MSER-5 on the series averaged over the replications (or fixed by the
  caller); quantiles come from
  logarithmic histograms with 0.2 % relative accuracy. Per-job records are
  kept only on request (``keep_jobs``, ``jobs_csv``, :func:`trace`).

Times are in the system's time unit (mean task time ``1/mu``).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._validation import ParameterError, check_choice, check_int, check_probability
from .statistics import (
    ALPHA,
    METRICS,
    MIN_TAIL_JOBS,
    QUANTILES,
    ReplicationStats,
    RunAccumulator,
    RunPartial,
    batch_means,
    batch_means_interval,
    drift,
    finish_replications,
    merge_histograms,
    sectioning_interval,
    t_interval,
)
from .system import BarrierSystem, as_system

#: jobs per chunk of random inputs; fixed so that results do not depend on the machine
CHUNK = 1 << 16
#: the most jobs one replication may have (a guard against typos; streaming needs no more memory)
MAX_JOBS = 10**11
#: the most jobs kept in memory per replication (keep_jobs) or traced
MAX_KEPT_JOBS = 50_000_000
MAX_TRACE_JOBS = 10_000
#: batch sampling keeps every unstarted job; a saturated sampled run keeps them all
MAX_SATURATED_SAMPLING_JOBS = 1_000_000
#: probing costs O(s) per job: batch sampling is simulated up to this many workers
MAX_SAMPLING_SERVERS = 10_000
#: the most task draws a run may need (jobs x replications x E[k] x phases): some hours of work
MAX_DRAWS = 10**11
#: task draws per chunk at most (memory); a chunk holds min(65,536, 2^22 / (k m)) jobs
CHUNK_DRAWS = 1 << 22


def chunk_jobs(system: BarrierSystem) -> int:
    """Jobs per chunk of random inputs: 65,536, fewer for jobs of many draws (a function of the system only,
    so that results do not depend on the machine)."""
    return max(1, min(CHUNK, CHUNK_DRAWS // (system.max_tasks * system.phases)))

_POLICY = {"fixed": 0, "knee": 1, "timeout": 2}        # _kernels_module().FIXED, KNEE, TIMEOUT


def _kernels_module():
    """The compiled kernels (Cython, built at install time), imported on first use."""
    try:
        from . import _kernels
    except ImportError as exc:      # a source tree that was never built
        raise ParameterError("the compiled simulation kernels are not built: install the package "
                             "(make install, or pip install -e . with a C compiler)") from exc
    return _kernels


# --------------------------------------------------------------------------------------------------
# random inputs

def draw_jobs(system: BarrierSystem, n: int, rng: np.random.Generator, start_time: float = 0.0,
              saturated: bool = False) -> dict:
    """Draw the random inputs of ``n`` jobs, in a fixed order.

    Returns arrays ``arrival`` (absolute times from ``start_time``),
    ``tasks``, ``barrier``, ``times`` (``k m`` draws per job, phase-major,
    the paper's overhead added to the first phase) and ``offsets`` (index of
    each job's first draw). ``saturated`` puts every arrival at
    ``start_time`` (an always-backlogged system). Draw order: arrival gaps,
    k (pmf), barrier flags (hybrid), task times, overheads.
    """
    if saturated:
        arrivals = np.full(n, start_time)
    elif system.arrival == "poisson":
        arrivals = start_time + np.cumsum(rng.exponential(1.0 / system.arrival_rate, n))
    else:
        arrivals = start_time + np.arange(1, n + 1) / system.arrival_rate
    if system.tasks_pmf is None:
        tasks = np.full(n, system.tasks, dtype=np.int64)
    else:
        tasks = system.ks[rng.choice(system.ks.size, size=n, p=system.pk)]
    if system.barrier_fraction == 1:
        barrier = np.ones(n, dtype=np.bool_)
    elif system.barrier_fraction == 0:
        barrier = np.zeros(n, dtype=np.bool_)
    else:
        barrier = rng.random(n) < system.barrier_fraction
    m = system.phases
    draws = tasks * m
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(draws[:-1], out=offsets[1:])
    total = int(draws.sum())
    times = np.asarray(system.task_dist.rvs(size=total, random_state=rng), dtype=np.float64)
    if system.overhead == "paper":
        from .overhead import OverheadModel

        # one overhead per task (the system refuses the paper's model with phases)
        times += OverheadModel(system.revive_interval, system.arrival_rate).rvs(total, rng)
    return {"arrival": arrivals, "tasks": tasks, "barrier": barrier, "times": times, "offsets": offsets}


def probe_count(system: BarrierSystem, k) -> np.ndarray:
    """Workers probed by a job of ``k`` tasks: ``min(s, ceil(d k))`` (EXTENSIONS.md section 2)."""
    k = np.asarray(k, dtype=np.int64)
    return np.minimum(system.servers, np.ceil(system.probe_ratio * k - 1e-9).astype(np.int64))


def draw_probes(system: BarrierSystem, tasks: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The workers each job probes: ``min(s, ceil(d k))`` distinct ones, uniformly at random.

    Returns ``(probes, offsets)``: job ``j`` probes ``probes[offsets[j]:offsets[j+1]]``,
    sorted by worker index. Each job's workers are the first ``m`` of a
    uniformly random permutation of the ``s`` workers (argsort of ``s``
    uniform keys), drawn in rows of at most ``2^22 / s`` jobs.
    """
    s = system.servers
    n = tasks.size
    counts = probe_count(system, tasks)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    probes = np.empty(int(offsets[-1]), dtype=np.int64)
    rows = max(1, (1 << 22) // s)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        order = np.argsort(rng.random((b - a, s)), axis=1, kind="stable")
        for m in np.unique(counts[a:b]):
            sel = np.flatnonzero(counts[a:b] == m)
            chosen = np.sort(order[sel, :m], axis=1)
            starts = offsets[a + sel]
            probes[(starts[:, None] + np.arange(m)).ravel()] = chosen.ravel()
    return probes, offsets


def kernel_params(system: BarrierSystem) -> tuple[int, int, np.ndarray]:
    """(policy code, stragglers, float parameters) of a system for the kernels."""
    params = np.array([system.min_fraction or 0.0, system.min_wait or 0.0, system.knee_gain or 0.0,
                       system.timeout if system.timeout is not None else np.inf,
                       1.0 if system.sync == "spark" else 0.0, system.sync_poll or 1.0])
    return _POLICY[system.release], system.stragglers, params


def reference_rule(system: BarrierSystem) -> dict:
    """The system's service rule as keyword arguments of :func:`barrier_queues.reference.service`."""
    rule = {"phases": system.phases, "release": system.release}
    if system.release == "fixed" and system.tasks_pmf is None:
        rule["needed"] = system.needed
    if system.release == "knee":
        rule.update(min_fraction=system.min_fraction, min_wait=system.min_wait, gain=system.knee_gain)
    if system.release == "timeout":
        rule["timeout"] = system.timeout
    if system.phases > 1:
        rule["sync"] = system.sync
        rule["poll"] = system.sync_poll or 1.0
    return rule


# --------------------------------------------------------------------------------------------------
# one replication

JOB_FIELDS = ("arrival", "start", "departure", "work", "useful", "completed", "held", "tasks", "barrier")


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
    started) when kept.
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


def finish_group(reps: list, saturated: bool = False) -> list:
    """Choose the warm-up of a system's replications together and drop their partial data."""
    for rep, stats in zip(reps, finish_replications([r.partial for r in reps], saturated), strict=True):
        rep._stats = stats
        rep.partial = None
    return reps


class _Sink:
    """Receives per-job arrays chunk by chunk: statistics, and kept or written records."""

    def __init__(self, system, jobs, warmup, keep, csv_path, replication):
        self.acc = RunAccumulator(jobs, floor=1e-6 * system.mean_task, warmup=warmup)
        self.keep = {f: [] for f in JOB_FIELDS} if keep else None
        self.csv = None
        self.index = 0
        self.replication = replication
        if csv_path is not None:
            self.csv = open(csv_path, "w")  # noqa: SIM115 (closed in close())
            self.csv.write("replication,job,arrival,start,departure,waiting,sojourn,execution,tasks,barrier,"
                           "work,useful,completed,held\n")

    def add(self, chunk: dict) -> None:
        held = chunk.get("held")
        self.acc.add(chunk["arrival"], chunk["start"], chunk["departure"], chunk["work"], chunk["useful"],
                     chunk["completed"], held)
        n = chunk["arrival"].size
        if self.keep is not None:
            for f in JOB_FIELDS:
                self.keep[f].append(np.asarray(chunk[f]) if f in chunk else np.zeros(n))
        if self.csv is not None:
            a, st, d = chunk["arrival"], chunk["start"], chunk["departure"]
            cols = [np.full(n, self.replication), np.arange(self.index, self.index + n), a, st, d, st - a, d - a,
                    d - st, chunk["tasks"], chunk["barrier"].astype(int), chunk["work"], chunk["useful"],
                    chunk["completed"], held if held is not None else np.zeros(n)]
            np.savetxt(self.csv, np.column_stack(cols), delimiter=",",
                       fmt=["%d", "%d"] + ["%.17g"] * 6 + ["%d", "%d", "%.17g", "%.17g", "%d", "%.17g"])
        self.index += n

    def close(self):
        if self.csv is not None:
            self.csv.close()
        jobs = None
        if self.keep is not None:
            jobs = {f: np.concatenate(v) if v else np.empty(0) for f, v in self.keep.items()}
            jobs["tasks"] = jobs["tasks"].astype(np.int64)
            jobs["barrier"] = jobs["barrier"].astype(bool)
            jobs["completed"] = jobs["completed"].astype(np.int64)
        return self.acc.partial(), jobs


def _generator(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def run_replication(system: BarrierSystem, jobs: int, seed, saturated: bool = False, trace: bool = False,
                    keep_jobs: bool = False, warmup: int | None = None, jobs_csv=None,
                    replication: int = 0) -> Replication:
    """One replication of ``jobs`` jobs from ``seed`` (int, SeedSequence or Generator).

    ``warmup``: jobs dropped at the start (None: MSER-5 at the end).
    ``trace`` (one chunk of jobs at most, see :func:`trace`) adds per-task records; ``keep_jobs``
    per-job arrays; ``jobs_csv`` writes per-job rows to that file as they come.
    """
    if trace and jobs > chunk_jobs(system):
        raise ParameterError(f"jobs must be at most {chunk_jobs(system):,} with trace for this system "
                             f"(got {jobs:,}): a trace is one chunk of inputs")
    ensure_compiled(system.placement)
    t_begin = time.perf_counter()
    rng = _generator(seed)
    sink = _Sink(system, jobs, warmup, keep_jobs or trace, jobs_csv, replication)
    if system.placement == "sample" and saturated and not trace:
        kernel, frame = _run_sampling_saturated(system, jobs, rng, sink)
    elif system.placement == "sample":
        kernel, frame = _run_sampling(system, jobs, rng, saturated, trace, sink)
    else:
        kernel, frame = _run_central(system, jobs, rng, saturated, trace, sink)
    partial, kept = sink.close()
    seconds = time.perf_counter() - t_begin
    partial.seconds, partial.kernel_seconds = seconds, kernel
    return Replication(partial, kept, frame, kernel, seconds, saturated)


def _trace_frame(chunk: dict, tw, ts, te):
    import pandas as pd

    k, o = chunk["tasks"], chunk["offsets"]
    idx = np.concatenate([o[j] + np.arange(k[j]) for j in range(k.size)]) if k.size else np.empty(0, np.int64)
    return pd.DataFrame({"job": np.repeat(np.arange(k.size), k), "worker": tw[idx], "start": ts[idx], "end": te[idx]})


def _run_central(system, jobs, rng, saturated, trace, sink):
    """The central-queue kernel over the chunks of one replication.

    A pipeline of two threads: while the kernel (compiled without the GIL)
    runs chunk i, a helper thread draws chunk i + 2 and adds chunk i - 1's
    results to the statistics. Draws and statistics stay in order (one
    helper), so the results are those of the serial loop, bit for bit.
    """
    from concurrent.futures import ThreadPoolExecutor

    kernels = _kernels_module()
    phase = rng.uniform(0.0, system.revive_interval) if system.overhead == "event" else 0.0
    s = system.servers
    heap_key = np.zeros(s)
    heap_id = np.arange(s, dtype=np.int64)
    state = np.zeros(1)
    policy, stragglers, params = kernel_params(system)
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    kernel = 0.0
    frame = None
    size = chunk_jobs(system)

    def draw(start_time, done):
        return draw_jobs(system, min(size, jobs - done), rng, start_time=start_time, saturated=saturated)

    helper = ThreadPoolExecutor(max_workers=1) if jobs > 2 * size and not trace else None
    pending_add = None
    try:
        chunk = draw(0.0, 0)
        done = 0
        following = draw(chunk["arrival"][-1], chunk["arrival"].size) if chunk["arrival"].size < jobs else None
        while chunk is not None:
            n = chunk["arrival"].size
            after = done + n + (following["arrival"].size if following is not None else 0)
            upcoming = None
            if following is not None and after < jobs:
                args = (following["arrival"][-1], after)
                upcoming = helper.submit(draw, *args) if helper else draw(*args)
            m = chunk["times"].size
            tw, ts, te = ((np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(m)) if trace
                          else (empty_i, empty_f, empty_f))
            out = {"start": np.empty(n), "departure": np.empty(n), "work": np.empty(n), "useful": np.empty(n),
                   "completed": np.empty(n, dtype=np.int64)}
            t0 = time.perf_counter()
            kernels.run_chunk(chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"],
                              system.phases, policy, stragglers, params, system.barriers == 2,
                              system.overhead == "event", system.revive_interval or 1.0, phase,
                              following["arrival"] if following is not None else empty_f, heap_key, heap_id, state,
                              out["start"], out["departure"], out["work"], out["useful"], out["completed"],
                              tw, ts, te)
            kernel += time.perf_counter() - t0
            result = {"arrival": chunk["arrival"], "tasks": chunk["tasks"], "barrier": chunk["barrier"], **out}
            if helper:
                if pending_add is not None:
                    pending_add.result()             # in order, and errors surface here
                pending_add = helper.submit(sink.add, result)
            else:
                sink.add(result)
            if trace:
                frame = _trace_frame(chunk, tw, ts, te)
            done += n
            chunk = following
            following = upcoming.result() if helper and upcoming is not None else upcoming
        if pending_add is not None:
            pending_add.result()
    finally:
        if helper:
            helper.shutdown(wait=True)
    return kernel, frame


class _SamplingState:
    """The batch-sampling kernel's arrays (rings grow by doubling; see ``_kernels_module().run_sampling``)."""

    JOB_ARRAYS = (("jr_id", np.int64, -1), ("jr_arrival", np.float64, 0), ("jr_k", np.int64, 0),
                  ("jr_barrier", np.bool_, False), ("jr_toff", np.int64, 0), ("jr_count", np.int64, 0),
                  ("jr_done", np.bool_, False), ("jr_start", np.float64, 0), ("jr_dep", np.float64, 0),
                  ("jr_work", np.float64, 0), ("jr_useful", np.float64, 0), ("jr_completed", np.int64, 0),
                  ("jr_held", np.float64, 0), ("jr_head", np.int64, -1), ("jr_tail", np.int64, -1))

    def __init__(self, servers: int):
        self.jcap, self.tcap, self.qcap = 1 << 12, 1 << 14, 1 << 4
        for name, dtype, fill in self.JOB_ARRAYS:
            setattr(self, name, np.full(self.jcap, fill, dtype=dtype))
        self.task_ring = np.zeros(self.tcap)
        self.w_state = np.zeros(servers, dtype=np.int64)
        self.w_next = np.full(servers, -1, dtype=np.int64)
        self.w_ready = np.zeros(servers)
        self.q_buf = np.zeros((servers, self.qcap), dtype=np.int64)
        self.q_head = np.zeros(servers, dtype=np.int64)
        self.q_tail = np.zeros(servers, dtype=np.int64)
        self.ev_time = np.zeros(servers)
        self.ev_worker = np.zeros(servers, dtype=np.int64)
        self.istate = np.zeros(6, dtype=np.int64)

    def reserve(self, new_jobs: int, new_draws: int) -> None:
        """Grow the job and task rings so that the pending jobs and ``new_jobs`` fit."""
        first, nxt = int(self.istate[_kernels_module().I_FIRST_PENDING]), int(self.istate[_kernels_module().I_NEXT_JOB])
        need = nxt - first + new_jobs
        if need > self.jcap:
            cap = 1 << math.ceil(math.log2(need))
            live = np.arange(first, nxt)
            for name, dtype, fill in self.JOB_ARRAYS:
                old = getattr(self, name)
                new = np.full(cap, fill, dtype=dtype)
                new[live & (cap - 1)] = old[live & (self.jcap - 1)]
                setattr(self, name, new)
            self.jcap = cap
        tail = int(self.istate[_kernels_module().I_TASK_TAIL])
        head = int(self.jr_toff[first & (self.jcap - 1)]) if nxt > first else tail
        need = tail - head + new_draws
        if need > self.tcap:
            cap = 1 << math.ceil(math.log2(need))
            live = np.arange(head, tail)
            new = np.zeros(cap)
            new[live & (cap - 1)] = self.task_ring[live & (self.tcap - 1)]
            self.task_ring, self.tcap = new, cap

    def grow_queues(self) -> None:
        cap = self.qcap * 2
        new = np.zeros((self.q_buf.shape[0], cap), dtype=np.int64)
        for w in range(self.q_buf.shape[0]):
            live = np.arange(self.q_head[w], self.q_tail[w])
            new[w, live & (cap - 1)] = self.q_buf[w, live & (self.qcap - 1)]
        self.q_buf, self.qcap = new, cap

    def collect(self, lo: int, hi: int) -> dict:
        slots = np.arange(lo, hi) & (self.jcap - 1)
        return {"arrival": self.jr_arrival[slots], "start": self.jr_start[slots], "departure": self.jr_dep[slots],
                "work": self.jr_work[slots], "useful": self.jr_useful[slots],
                "completed": self.jr_completed[slots], "held": self.jr_held[slots], "tasks": self.jr_k[slots],
                "barrier": self.jr_barrier[slots]}


class _Records:
    """A sink that keeps every job's record and every job's probes (for the saturated window)."""

    def __init__(self):
        self.parts, self.probes = [], []

    def add(self, chunk: dict) -> None:
        self.parts.append(chunk)

    def table(self) -> dict:
        return {f: np.concatenate([p[f] for p in self.parts]) for f in self.parts[0]}


def _run_sampling_saturated(system, jobs, rng, sink):
    """A saturated batch-sampling run, measured only while every worker has a backlog.

    Every job arrives at time 0 and leaves its reservations at once, so the
    queues drain unevenly at the end: a worker whose queue ran empty idles
    while jobs remain, which a central queue never does. Worker ``w`` has a
    backlog until the last job that probed it has started (``T_w``), so the
    run is saturated until ``T_end = min_w T_w``. The run simulates twice the
    jobs asked for (again twice as many, up to 16 times, while fewer than
    ``jobs`` start before ``T_end``) and hands the first ``jobs`` starts, in
    start order, to the statistics; the warm-up is then chosen as usual.
    """
    kernel = 0.0
    for factor in (2, 4, 8, 16):
        records = _Records()
        kernel += _run_sampling(system, factor * jobs, rng.spawn(1)[0], True, False, records)[0]
        table = records.table()
        last = np.full(system.servers, -1, dtype=np.int64)      # the last job that probed each worker
        base = 0
        for probes, offsets in records.probes:
            n = offsets.size - 1
            np.maximum.at(last, probes, base + np.repeat(np.arange(n), np.diff(offsets)))
            base += n
        if (last >= 0).all():
            end = table["start"][last].min()
            order = np.argsort(table["start"], kind="stable")
            if np.searchsorted(table["start"][order], end, side="right") >= jobs:
                sink.add({f: v[order[:jobs]] for f, v in table.items()})
                return kernel, None
    raise ParameterError(f"jobs must be larger for a saturated batch-sampling run of {system.servers} workers "
                         f"(got {jobs:,}): even 16 times as many left a worker without reservations before "
                         f"{jobs:,} jobs had started")


def _run_sampling(system, jobs, rng, saturated, trace, sink):
    probe_rng = rng.spawn(1)[0]          # a child stream: the jobs are those of the central system
    st = _SamplingState(system.servers)
    policy, stragglers, params = kernel_params(system)
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    kernel = 0.0
    frame = None
    collected = 0
    base = 0
    size = chunk_jobs(system)
    chunk = draw_jobs(system, min(size, jobs), rng, saturated=saturated)
    while chunk is not None:
        n = chunk["arrival"].size
        following = None
        if base + n < jobs:
            following = draw_jobs(system, min(size, jobs - base - n), rng, start_time=chunk["arrival"][-1],
                                  saturated=saturated)
        probes, probe_offsets = draw_probes(system, chunk["tasks"], probe_rng)
        if isinstance(sink, _Records):
            sink.probes.append((probes, probe_offsets))
        st.reserve(n, chunk["times"].size)
        m = chunk["times"].size
        tw, ts, te = ((np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(m)) if trace else (empty_i, empty_f, empty_f))
        st.istate[_kernels_module().I_CHUNK_POS] = 0
        nxt = following["arrival"][0] if following is not None else np.inf
        while True:
            t0 = time.perf_counter()
            _kernels_module().run_sampling(
                chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"],
                                  probes, probe_offsets, nxt, base, system.phases, policy, stragglers, params,
                                  system.barriers == 2, st.jr_id, st.jr_arrival, st.jr_k, st.jr_barrier, st.jr_toff,
                                  st.jr_count, st.jr_done, st.jr_start, st.jr_dep, st.jr_work, st.jr_useful,
                                  st.jr_completed, st.jr_held, st.jr_head, st.jr_tail, st.task_ring, st.w_state,
                                  st.w_next, st.w_ready, st.q_buf, st.q_head, st.q_tail, st.ev_time, st.ev_worker,
                                  st.istate, tw, ts, te)
            kernel += time.perf_counter() - t0
            if st.istate[_kernels_module().I_STATUS] == _kernels_module().STATUS_QUEUE_FULL:
                st.grow_queues()
                continue
            break
        first = int(st.istate[_kernels_module().I_FIRST_PENDING])
        if first > collected:
            sink.add(st.collect(collected, first))
            collected = first
        if trace:
            frame = _trace_frame(chunk, tw, ts, te)
        base += n
        chunk = following
    if collected < jobs:
        raise RuntimeError(f"batch sampling left {jobs - collected} jobs unstarted after draining (kernel bug)")
    return kernel, frame


_COMPILED: set = set()


def ensure_compiled(placement: str = "central") -> None:
    """Run a placement's kernel once on a tiny system before any fork or timing (a missing build fails here)."""
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
    """Run the kernel on given inputs (one chunk): per-job ``start``, ``departure``, ``work``, ``useful``,
    ``completed``.

    ``inputs`` has the arrays of :func:`draw_jobs` (``arrival`` sorted,
    ``tasks``, ``barrier``, ``times``, ``offsets``); ``phase`` is the revive
    timer's phase for the event overhead; ``probes`` = ``(probes, offsets)``
    for batch sampling. Used to replay measured workloads (e.g. a Spark run's
    own arrivals and task times) through the same scheduler as the simulator.
    """
    ensure_compiled(system.placement)
    n = inputs["arrival"].size
    if n == 0:
        raise ParameterError("inputs must hold at least one job (got none)")
    if np.any(np.diff(inputs["arrival"]) < 0):
        raise ParameterError("inputs arrival times must be sorted (non-decreasing)")
    out = {"start": np.empty(n), "departure": np.empty(n), "work": np.empty(n), "useful": np.empty(n),
           "completed": np.empty(n, dtype=np.int64)}
    policy, stragglers, params = kernel_params(system)
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    arrays = {"arrival": np.ascontiguousarray(inputs["arrival"], dtype=np.float64),
              "tasks": np.ascontiguousarray(inputs["tasks"], dtype=np.int64),
              "barrier": np.ascontiguousarray(inputs["barrier"], dtype=np.bool_),
              "times": np.ascontiguousarray(inputs["times"], dtype=np.float64),
              "offsets": np.ascontiguousarray(inputs["offsets"], dtype=np.int64)}
    if system.placement == "sample":
        sink = _Sink(system, max(n, 2), 0, True, None, 0)
        _run_sampling_on(system, arrays, probes, sink)
        _, kept = sink.close()
        return {k: kept[k] for k in ("start", "departure", "work", "useful", "completed", "held")}
    _kernels_module().run_chunk(
        arrays["arrival"], arrays["tasks"], arrays["barrier"], arrays["times"], arrays["offsets"],
        system.phases, policy, stragglers, params, system.barriers == 2, system.overhead == "event",
        system.revive_interval or 1.0, phase, empty_f, np.zeros(system.servers),
        np.arange(system.servers, dtype=np.int64), np.zeros(1), out["start"], out["departure"],
        out["work"], out["useful"], out["completed"], empty_i, empty_f, empty_f)
    return out


def _run_sampling_on(system, chunk, probes, sink):
    """The sampling kernel on one given chunk (drained)."""
    kernels = _kernels_module()
    st = _SamplingState(system.servers)
    policy, stragglers, params = kernel_params(system)
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    n = chunk["arrival"].size
    st.reserve(n, chunk["times"].size)
    while True:
        kernels.run_sampling(
            chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"], probes[0],
            probes[1], np.inf, 0, system.phases, policy, stragglers, params, system.barriers == 2, st.jr_id,
            st.jr_arrival, st.jr_k, st.jr_barrier, st.jr_toff, st.jr_count, st.jr_done, st.jr_start, st.jr_dep,
            st.jr_work, st.jr_useful, st.jr_completed, st.jr_held, st.jr_head, st.jr_tail, st.task_ring,
            st.w_state, st.w_next, st.w_ready, st.q_buf, st.q_head, st.q_tail, st.ev_time, st.ev_worker,
            st.istate, empty_i, empty_f, empty_f)
        if st.istate[kernels.I_STATUS] == kernels.STATUS_QUEUE_FULL:
            st.grow_queues()
            continue
        break
    sink.add(st.collect(0, n))


# --------------------------------------------------------------------------------------------------
# many replications

def _task(args):
    system, jobs, seed, saturated, warmup, keep, csv_path, index = args
    return run_replication(system, jobs, seed, saturated, keep_jobs=keep, warmup=warmup, jobs_csv=csv_path,
                           replication=index)


def _group_task(group):
    """All replications of one system (a Spark task): run and finished together."""
    return finish_group([_task(t) for t in group], group[0][3])


def _run_many(tasks: list, workers: int | None, progress: bool | None, desc: str,
              group: int = 1) -> list[Replication]:
    """Run replication tasks, in a fork-based process pool when there is more than one.

    Consecutive runs of ``group`` are the replications of one system: their
    warm-up is chosen together as soon as the last of them is in, and their
    partial data is dropped, so memory holds one system's partial data at a
    time. With ``SWEEP_BACKEND=spark`` in the environment each system's
    replications run as one Spark task instead (``SPARK_MASTER``; see
    :mod:`barrier_queues.sweep`): the same results, bit for bit.
    """
    groups = [tasks[i:i + group] for i in range(0, len(tasks), group)]
    backend = os.environ.get("SWEEP_BACKEND")
    if backend and backend != "local" and len(tasks) > 1:
        from .sweep import backend_from_environment, spark_map

        _, master = backend_from_environment()
        return [rep for reps in spark_map(_group_task, groups, master) for rep in reps]
    for placement in {t[0].placement for t in tasks}:
        ensure_compiled(placement)
    workers = check_int("workers", workers, low=1) if workers is not None else (os.cpu_count() or 1)
    workers = min(len(tasks), workers)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc=desc, leave=False)
    results, pending = [], []
    pool = None
    try:
        if workers <= 1:
            iterator = (_task(t) for t in tasks)
        else:
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
            iterator = pool.map(_task, tasks)
        for rep in iterator:
            pending.append(rep)
            if len(pending) == group:
                results += finish_group(pending, tasks[0][3])
                pending = []
            if bar is not None:
                bar.update()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    return results


def _seeds(seed, n: int) -> list[np.random.SeedSequence]:
    if seed is not None and not isinstance(seed, np.random.SeedSequence):
        seed = check_int("seed", seed, low=0, high=2**128 - 1, high_name="2**128 - 1")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root.spawn(n)


def check_run(jobs, replications, warmup, keep_jobs=False, systems=()):
    jobs = check_int("jobs", jobs, low=2, high=MAX_JOBS, high_name=f"{MAX_JOBS:.0e}")
    replications = check_int("replications", replications, low=1, high=100_000, high_name="100,000")
    for system in systems:
        draws = jobs * replications * system.mean_tasks * system.phases
        if draws > MAX_DRAWS:
            raise ParameterError(f"jobs x replications x tasks x phases must be at most {MAX_DRAWS:.0e} task draws "
                                 f"(got {draws:.3g}, some hours of work at least); lower jobs or replications")
        if system.placement == "sample" and system.servers > MAX_SAMPLING_SERVERS:
            raise ParameterError(f"servers must be at most {MAX_SAMPLING_SERVERS:,} with placement = 'sample' (got "
                                 f"{system.servers:,}): each job's probes cost O(servers)")
    if warmup is not None:
        warmup = check_int("warmup", warmup, low=0, high=jobs - 2, high_name=f"jobs - 2 = {jobs - 2}")
    if keep_jobs and jobs > MAX_KEPT_JOBS:
        raise ParameterError(f"jobs must be at most {MAX_KEPT_JOBS:,} per replication with keep_jobs "
                             f"(got {jobs:,}); statistics stream without it")
    return jobs, replications, warmup


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
    from .stability import estimated_limit, known_limit

    lam = system.arrival_rate
    exact = known_limit(system)
    if exact is not None:
        return {"lambda_max": exact[0], "method": exact[1], "lambda_max_ci": None,
                "verdict": None if lam is None else "above" if lam >= exact[0] else "below"}
    estimate = estimated_limit(system)
    if estimate is None:
        return {"lambda_max": None, "method": None, "lambda_max_ci": None, "verdict": None}
    value, method, (lo, hi) = estimate
    margin = MC_LIMIT_MARGIN * (hi - lo) / 2
    verdict = (None if lam is None else "above" if lam >= value + margin else "below" if lam <= value - margin
               else "undecided")
    return {"lambda_max": value, "method": method, "lambda_max_ci": [lo, hi], "verdict": verdict}


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
             allow_unstable: bool = False, keep_jobs: bool = False, jobs_csv=None) -> SimulationResult:
    """Simulate ``replications`` independent runs of ``jobs`` jobs each.

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
        Same seed, same results, bit for bit.
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

    Examples
    --------
    >>> res = simulate(BarrierSystem(servers=16, tasks=4, arrival_rate=2.8), jobs=20_000, seed=1)
    >>> round(res.summary()["utilization"], 1)
    0.7
    """
    system = as_system(system)
    if system.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) to simulate a queue (got None); "
                             "use saturated_throughput for a backlogged system")
    jobs, replications, warmup = check_run(jobs, replications, warmup, keep_jobs, [system])
    if not allow_unstable and (message := stability_error(system)):
        raise ParameterError(message)
    t0 = time.perf_counter()
    parts = _csv_parts(jobs_csv, replications)
    tasks = [(system, jobs, s, False, warmup, keep_jobs, parts[i], i)
             for i, s in enumerate(_seeds(seed, replications))]
    reps = _run_many(tasks, workers if replications > 1 else 1, progress, "replications", group=replications)
    _join_csv(jobs_csv, parts)
    return SimulationResult(system, reps, time.perf_counter() - t0, seed, warmup)


def simulate_many(systems: list, jobs: int = 100_000, replications: int = 1, seed=None,
                  warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                  allow_unstable: bool = False, keep_jobs: bool = False) -> list[SimulationResult]:
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
    t0 = time.perf_counter()
    tasks = [(c, jobs, s, False, warmup, keep_jobs, None, r)
             for c, root in zip(systems, _seeds(seed, len(systems)), strict=True)
             for r, s in enumerate(root.spawn(replications))]
    reps = _run_many(tasks, workers, progress, "simulations", group=replications)
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
        """Per-job ``waiting``, ``sojourn`` or ``execution`` times after the warm-up (needs ``keep_jobs``)."""
        check_choice("metric", name, METRICS)
        reps = self._kept()
        reps = reps if replication is None else [reps[replication]]
        parts = []
        for r in reps:
            w = slice(r.stats.warmup, None)
            a, st, d = r.jobs["arrival"][w], r.jobs["start"][w], r.jobs["departure"][w]
            parts.append(st - a if name == "waiting" else d - a if name == "sojourn" else d - st)
        return np.concatenate(parts)

    def to_frame(self):
        """Per-job table of every replication, warm-up jobs flagged (needs ``keep_jobs``)."""
        import pandas as pd

        frames = []
        for i, r in enumerate(self._kept()):
            j = r.jobs
            n = j["arrival"].size
            frames.append(pd.DataFrame({
                "replication": i, "job": np.arange(n), "warmup": np.arange(n) < r.stats.warmup, **j,
                "waiting": j["start"] - j["arrival"], "sojourn": j["departure"] - j["arrival"],
                "execution": j["departure"] - j["start"]}))
        return pd.concat(frames, ignore_index=True)

    def utilization(self, column: str = "work") -> float:
        """Measured utilization: server time (``work``; or ``useful``, ``held``) / (s x observed time)."""
        busy = sum(s.sums[column] for s in self.stats)
        span = sum(s.span for s in self.stats)
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
                out["ci"][name] = t_interval([s.mean(name) for s in stats], level)
            else:
                bm = batch_means_interval(stats[0].block_means[name], 20, level)
                out["ci"][name] = bm["interval"]
                out["ci"][f"{name}_batches"] = {k: bm[k] for k in ("batches", "lag1", "pvalue", "independent")}
            pooled = merge_histograms([s.histograms[name] for s in stats])
            out["quantiles"][name] = {str(q): pooled.quantile(q) for q in QUANTILES}
            out["quantile_ci"][name] = {str(q): sectioning_interval(out["quantiles"][name][str(q)],
                                                                    [s.quantile(name, q) for s in stats], level)
                                        if min(s.jobs for s in stats) * (1 - q) >= MIN_TAIL_JOBS
                                        else [float("nan"), float("nan")] for q in QUANTILES}
        out["ci"]["method"] = ("t interval over replications" if len(stats) >= 2 else
                               "t interval over 20 batch means of one replication")
        verdict = stability_verdict(system)
        waiting0 = stats[0].block_means["waiting"]
        dr = drift(waiting0, 20)
        if verdict["verdict"] == "above" or dr["drifting"]:
            out["stable"] = False
        elif verdict["verdict"] == "undecided":
            out["stable"] = None
        else:
            out["stable"] = True
        out["stability"] = {"lambda_max": verdict["lambda_max"], "method": verdict["method"],
                            "drift_test": "Kendall tau of 20 batch means of replication 0's waiting times", **dr}
        if verdict["lambda_max_ci"] is not None:
            out["stability"]["lambda_max_ci"] = verdict["lambda_max_ci"]
        if out["stable"] is None:
            out["stability"]["undecided"] = (
                f"the arrival rate lies within {MC_LIMIT_MARGIN:g} half-widths of the 95 % interval of the "
                "Monte Carlo stability limit and the drift test does not flag a growing queue: too close to "
                "the limit to tell (a saturated run, or a longer one, decides)")
        total_jobs = sum(s.total_jobs for s in stats)
        kernel = sum(s.kernel_seconds for s in stats)
        out["seconds"] = self.seconds
        out["jobs_per_second"] = total_jobs / self.seconds if self.seconds > 0 else float("nan")
        out["kernel_jobs_per_second"] = total_jobs / kernel if kernel > 0 else float("nan")
        self._summary_cache[level] = out
        return out


# --------------------------------------------------------------------------------------------------
# saturated runs: the stability limit by simulation

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
        lam = list(1 / spacing)
        work = st.sums["work"] / st.jobs
        rho = [x * work / s for x in lam]
        useful = [x * st.sums["useful"] / st.jobs / s for x in lam]
        held = [x * st.sums["held"] / st.jobs / s for x in lam]
        method = "t interval over 20 batches of one replication"
        batches = batch_means_interval(1 / st.block_means["spacing"], 20, level)
    est = {}
    total_jobs = sum(st.jobs for st in stats)
    pooled_lam = total_jobs / sum(st.sums["spacing"] for st in stats)
    est["lambda_max"] = float(pooled_lam)
    est["lambda_max_ci"] = t_interval(lam, level)
    for key, values, col in (("rho_max", rho, "work"), ("rho_useful", useful, "useful"), ("held_share", held, "held")):
        est[key] = float(pooled_lam * sum(st.sums[col] for st in stats) / total_jobs / s)
        est[f"{key}_ci"] = t_interval(values, level)
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
                         level: float = 0.95) -> dict:
    """Stability limit by simulation: the job start rate of an always-backlogged system.

    Every job arrives at time 0 (with the event-accurate Spark overhead only
    revive ticks then offer executors to a blocked job, as in a real Spark run
    that submits a backlog at once). After the warm-up (MSER-5 on the spacings
    between starts, or ``warmup`` jobs) the start rate ``jobs / sum of
    spacings`` estimates ``lambda_max``; ``rho_max = lambda_max E[work] / s``
    and ``rho_useful`` likewise with the measured useful work. Intervals: t
    over replications, or over 20 batches of one replication.
    """
    return saturated_many([system], jobs, replications, seed, warmup, workers, progress, level)[0]


def saturated_many(systems: list, jobs: int = 200_000, replications: int = 10, seed=None,
                   warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
                   level: float = 0.95) -> list[dict]:
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
        if c.placement == "sample" and jobs > MAX_SATURATED_SAMPLING_JOBS:
            raise ParameterError(f"jobs must be at most {MAX_SATURATED_SAMPLING_JOBS:,} for a saturated run with "
                                 f"placement = 'sample' (got {jobs:,}): every job's reservations are queued at "
                                 "time 0")
    jobs, replications, warmup = check_run(jobs, replications, warmup, systems=systems)
    # every job arrives at time 0 (the event overhead keeps its rate for validation only: no later arrivals)
    cfgs = [c.replace(arrival_rate=None) if c.arrival_rate is not None and c.overhead is None else c
            for c in systems]
    tasks = [(c, jobs, s, True, warmup, False, None, r) for c, root in zip(cfgs, _seeds(seed, len(cfgs)), strict=True)
             for r, s in enumerate(root.spawn(replications))]
    reps = _run_many(tasks, workers, progress, "saturated runs", group=replications)
    return [_saturated_estimate(c, reps[i * replications:(i + 1) * replications], level)
            for i, c in enumerate(cfgs)]


def saturated_curve(servers, tasks, needed=None, barriers=1, task_dist=None, jobs: int = 50_000,
                    replications: int = 10, seed=None, workers: int | None = None,
                    progress: bool | None = None, level: float = 0.95, **fixed):
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
    estimates = saturated_many(grid, jobs, replications, seed, None, workers, progress, level)
    rows = [{"servers": c.servers, "tasks": c.tasks, "needed": c.needed, "barriers": c.barriers, **e}
            for c, e in zip(grid, estimates, strict=True)]
    return pd.DataFrame(rows)


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
    rep = run_replication(system, jobs, _seeds(seed, 1)[0], trace=True, warmup=0)
    j = rep.jobs
    job_table = pd.DataFrame({"job": np.arange(jobs), "arrival": j["arrival"], "start": j["start"],
                              "departure": j["departure"], "tasks": j["tasks"], "barrier": j["barrier"],
                              "completed": j["completed"]})
    return rep.trace, job_table


def __getattr__(name):
    if name == "SimulationConfig":           # the one system description, under its old name
        return BarrierSystem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CHUNK", "JOB_FIELDS", "QUANTILES", "Replication", "SimulationResult", "check_run", "chunk_jobs",
           "compare_with_exact", "draw_jobs", "draw_probes", "ensure_compiled", "finish_group", "kernel_params",
           "probe_count", "reference_rule", "run_inputs", "run_replication", "saturated_curve", "saturated_many",
           "saturated_throughput", "simulate", "simulate_many", "stability_error", "stability_verdict", "trace"]
