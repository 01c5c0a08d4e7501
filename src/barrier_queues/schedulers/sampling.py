"""Batch sampling with late binding (Appendix B, section 2; Sparrow, seed 003).

No central queue: every worker has a FIFO queue of reservations; an
arriving job of ``k`` tasks appends one to each of ``min(s, ceil(d k))``
probed workers (``d``: the probe ratio). An idle worker takes the head of its
queue: a reservation of a started (or, non-barrier, fully handed-out) job is
discarded; otherwise the worker becomes ready for that job: a non-barrier job
hands it a task at once, a barrier job makes it hold until ``k`` workers are
ready, then all ``k`` tasks start. Events at one instant: worker frees (in
worker order) before arrivals; arriving jobs' idle probed workers look in
worker order.

Kernel part: ``sampling.pxi`` (``run_sampling``); plain reference:
:func:`simulate_sampling_reference` (deques and a heap of events).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque

import numpy as np

from .._validation import ParameterError, check_positive
from ..inputs import chunk_jobs, draw_jobs, draw_probes
from ..kernels import kernels_module
from ..reference import service, service_args
from ..rules import kernel_params, reference_rule, reference_service
from .base import Scheduler, register, trace_arrays, trace_frame

#: Sparrow's probe ratio (seed 003)
DEFAULT_PROBE_RATIO = 2.0
#: batch sampling keeps every unstarted job; a saturated sampled run keeps them all
MAX_SATURATED_SAMPLING_JOBS = 1_000_000
#: probing costs O(s) per job: batch sampling is simulated up to this many workers
MAX_SAMPLING_SERVERS = 10_000


class _SamplingState:
    """The batch-sampling kernel's arrays (rings grow by doubling; see ``kernels_module().run_sampling``)."""

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
        first, nxt = int(self.istate[kernels_module().I_FIRST_PENDING]), int(self.istate[kernels_module().I_NEXT_JOB])
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
        tail = int(self.istate[kernels_module().I_TASK_TAIL])
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
    params = np.asarray(params, dtype=np.float64)
    kernel = 0.0
    frame = None
    collected = 0
    base = 0
    size = chunk_jobs(system)
    scratch = {}                          # the draws' reused buffers (see draw_jobs)
    chunk = draw_jobs(system, min(size, jobs), rng, saturated=saturated, scratch=scratch)
    while chunk is not None:
        n = chunk["arrival"].size
        following = None
        if base + n < jobs:
            following = draw_jobs(system, min(size, jobs - base - n), rng, start_time=chunk["arrival"][-1],
                                  saturated=saturated, scratch=scratch)
        probes, probe_offsets = draw_probes(system, chunk["tasks"], probe_rng)
        if isinstance(sink, _Records):
            sink.probes.append((probes, probe_offsets))
        st.reserve(n, chunk["times"].size)
        tw, ts, te = trace_arrays(trace, chunk["times"].size)
        st.istate[kernels_module().I_CHUNK_POS] = 0
        nxt = following["arrival"][0] if following is not None else np.inf
        while True:
            t0 = time.perf_counter()
            kernels_module().run_sampling(
                chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"],
                                  probes, probe_offsets, nxt, base, system.phases, policy, stragglers, params,
                                  system.barriers == 2, st.jr_id, st.jr_arrival, st.jr_k, st.jr_barrier, st.jr_toff,
                                  st.jr_count, st.jr_done, st.jr_start, st.jr_dep, st.jr_work, st.jr_useful,
                                  st.jr_completed, st.jr_held, st.jr_head, st.jr_tail, st.task_ring, st.w_state,
                                  st.w_next, st.w_ready, st.q_buf, st.q_head, st.q_tail, st.ev_time, st.ev_worker,
                                  st.istate, tw, ts, te)
            kernel += time.perf_counter() - t0
            if st.istate[kernels_module().I_STATUS] == kernels_module().STATUS_QUEUE_FULL:
                st.grow_queues()
                continue
            break
        first = int(st.istate[kernels_module().I_FIRST_PENDING])
        if first > collected:
            sink.add(st.collect(collected, first))
            collected = first
        if trace:
            frame = trace_frame(chunk, tw, ts, te)
        base += n
        chunk = following
    if collected < jobs:
        raise RuntimeError(f"batch sampling left {jobs - collected} jobs unstarted after draining (kernel bug)")
    return kernel, frame


def run_inputs(system, inputs: dict, phase: float = 0.0) -> dict:
    """The sampling kernel on given inputs (one chunk, drained), with ``inputs["probes"]`` = ``(probes, offsets)``:
    per-job arrays, ``held`` included."""
    kernels = kernels_module()
    if "probes" not in inputs:
        raise ParameterError("inputs must hold the probed workers ('probes': (probes, offsets)) for "
                             "placement = 'sample'")
    probes = inputs["probes"]
    st = _SamplingState(system.servers)
    policy, stragglers, params = kernel_params(system)
    params = np.asarray(params, dtype=np.float64)
    tw, ts, te = trace_arrays(False, 0)
    n = inputs["arrival"].size
    st.reserve(n, inputs["times"].size)
    while True:
        kernels.run_sampling(
            inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], inputs["offsets"], probes[0],
            probes[1], np.inf, 0, system.phases, policy, stragglers, params, system.barriers == 2, st.jr_id,
            st.jr_arrival, st.jr_k, st.jr_barrier, st.jr_toff, st.jr_count, st.jr_done, st.jr_start, st.jr_dep,
            st.jr_work, st.jr_useful, st.jr_completed, st.jr_held, st.jr_head, st.jr_tail, st.task_ring,
            st.w_state, st.w_next, st.w_ready, st.q_buf, st.q_head, st.q_tail, st.ev_time, st.ev_worker,
            st.istate, tw, ts, te)
        if st.istate[kernels.I_STATUS] == kernels.STATUS_QUEUE_FULL:
            st.grow_queues()
            continue
        break
    out = st.collect(0, n)
    return {k: np.array(out[k]) for k in ("start", "departure", "work", "useful", "completed", "held")}


def run(system, jobs, rng, saturated, trace, sink):
    """One replication: chunk by chunk, or, saturated, measured while every worker has a backlog."""
    if saturated and not trace:
        return _run_sampling_saturated(system, jobs, rng, sink)
    return _run_sampling(system, jobs, rng, saturated, trace, sink)

# --------------------------------------------------------------------------------------------------
# the plain-Python reference

def simulate_sampling_reference(arrivals, tasks, barrier, times, probes, servers: int, two_barrier: bool = False,
                                trace: bool = False, service_fn=None, **rule):
    """Batch sampling with late binding (Appendix B, section 2), event by event.

    ``probes[j]`` lists the workers job ``j`` probes. Returns the lists of
    :func:`simulate_reference` plus ``held`` (worker-time spent ready and
    holding for the job before it started) per job.
    """
    phases = rule.get("phases", 1)
    one_job = service_fn or (lambda draws, k: service(draws, k, **service_args(rule)))
    n = len(arrivals)
    offsets, total = [], 0
    for k in tasks:
        offsets.append(total)
        total += int(k) * phases
    queues = [deque() for _ in range(servers)]
    state = ["idle"] * servers
    ready_since = [0.0] * servers
    holders = [[] for _ in range(n)]       # workers holding for each job, in the order they became ready
    handed = [0] * n
    done = [False] * n
    res = {"start": [0.0] * n, "departure": [-math.inf] * n, "work": [0.0] * n, "useful": [0.0] * n,
           "completed": [0] * n, "held": [0.0] * n}
    tr = {"worker": [0] * total, "start": [0.0] * total, "end": [0.0] * total}
    events: list[tuple[float, int]] = []  # (time a worker frees, worker)

    def look(w: int, now: float) -> None:
        while queues[w]:
            j = queues[w].popleft()
            if done[j]:
                continue                   # a cancelled reservation
            k = int(tasks[j])
            draws = [float(x) for x in times[offsets[j]:offsets[j] + k * phases]]
            if barrier[j]:
                state[w] = "holding"
                ready_since[w] = now
                holders[j].append(w)
                if len(holders[j]) == k:
                    cut, completed, useful, occupied = one_job(draws, k)
                    held, work = 0.0, 0.0
                    for i, v in enumerate(holders[j]):
                        held += now - ready_since[v]
                        work += occupied[i]
                        state[v] = "busy"
                        heapq.heappush(events, (now + (cut if two_barrier else occupied[i]), v))
                        tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i] = v, now
                        tr["end"][offsets[j] + i] = now + occupied[i]
                    res["start"][j], res["departure"][j] = now, now + cut
                    res["work"][j], res["useful"][j] = work, useful
                    res["completed"][j], res["held"][j] = completed, held
                    done[j] = True
                return
            i = handed[j]
            x = draws[i]
            state[w] = "busy"
            heapq.heappush(events, (now + x, w))
            tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i], tr["end"][offsets[j] + i] = w, now, now + x
            res["work"][j] += x
            res["useful"][j] += x
            res["departure"][j] = max(res["departure"][j], now + x)
            handed[j] = i + 1
            if handed[j] == k:
                res["start"][j], res["completed"][j], done[j] = now, k, True
            return

    j = 0
    while j < n or events:
        if events and (j >= n or events[0][0] <= float(arrivals[j])):
            now, w = heapq.heappop(events)
            state[w] = "idle"
            look(w, now)
        else:
            now = float(arrivals[j])
            for w in probes[j]:
                queues[w].append(j)
            for w in sorted(probes[j]):
                if state[w] == "idle":
                    look(w, now)
            j += 1
    return (res, tr) if trace else res


def reference(system, inputs: dict, phase: float = 0.0, trace: bool = False):
    """:func:`simulate_sampling_reference` for a system and its inputs (``probes``: ``(probes, offsets)``)."""
    probes, offsets = inputs["probes"]
    per_job = [list(probes[offsets[j]:offsets[j + 1]]) for j in range(offsets.size - 1)]
    return simulate_sampling_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                                       per_job, system.servers, system.barriers == 2, trace=trace,
                                       service_fn=reference_service(system), **reference_rule(system))


def _validate(system, set_) -> None:
    d = DEFAULT_PROBE_RATIO if system.probe_ratio is None else system.probe_ratio
    d = check_positive("probe_ratio", d)
    if d < 1:
        raise ParameterError(f"probe_ratio must be a number >= 1 (got {d!r}): a job probes at least k workers")
    set_("probe_ratio", float(min(d, system.servers)))      # d k >= s probes every worker (Appendix B, section 2)
    if system.overhead is not None:
        raise ParameterError(f"overhead must be None with placement = 'sample' (got {system.overhead!r}): "
                             "Spark's revive timer belongs to its central scheduler")


def _guard(system, jobs: int, saturated: bool) -> None:
    if system.servers > MAX_SAMPLING_SERVERS:
        raise ParameterError(f"servers must be at most {MAX_SAMPLING_SERVERS:,} with placement = 'sample' (got "
                             f"{system.servers:,}): each job's probes cost O(servers)")
    if saturated and jobs > MAX_SATURATED_SAMPLING_JOBS:
        raise ParameterError(f"jobs must be at most {MAX_SATURATED_SAMPLING_JOBS:,} for a saturated run with "
                             f"placement = 'sample' (got {jobs:,}): every job's reservations are queued at "
                             "time 0")


def _draw_extra(system, tasks, rng) -> dict:
    return {"probes": draw_probes(system, tasks, rng)}


SCHEDULER = register(Scheduler(
    "sample", "batch sampling with late binding: reservations on min(s, ceil(d k)) probed workers (Sparrow)",
    run=run, run_inputs=run_inputs, reference=reference, params=("probe_ratio",), validate=_validate,
    draw_extra=_draw_extra, guard=_guard, kernel_include="schedulers/sampling.pxi"))

__all__ = ["DEFAULT_PROBE_RATIO", "SCHEDULER", "reference", "run", "run_inputs", "simulate_sampling_reference"]
