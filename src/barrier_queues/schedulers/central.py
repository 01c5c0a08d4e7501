"""The central FIFO queue (Appendix A, section 2): the paper's scheduler.

Jobs start in arrival order. A barrier job of ``k`` tasks starts at
``t = max(arrival, previous start, tau)`` with ``tau`` the time at which
``k`` workers are free (the k-th smallest free time); its workers are free
at ``t + run[i]`` (1 barrier) or ``t + D`` (2 barriers), ``run`` and ``D``
from its service rule (:mod:`barrier_queues.rules`). A non-barrier job's
tasks in turn take the earliest free worker. With the event-accurate Spark
overhead a barrier job of ``k > 1`` tasks that had to wait for workers
starts at the first global offer at or after ``tau`` (revive tick
``phase + n R`` or job arrival).

Kernel part: ``central.pxi`` (``run_chunk``); plain reference:
:func:`simulate_reference` (a heap of ``(free time, worker)``).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from ..inputs import chunk_jobs, draw_jobs
from ..kernels import kernels_module
from ..reference import service, service_args
from ..rules import kernel_params, reference_rule, reference_service
from .base import Scheduler, chunk_pipeline, job_outputs, register, trace_arrays, trace_frame

#: up to this many workers the kernel keeps the free times in an ascending array, above it in a heap: the
#: same outputs (tested); for the k-th earliest free time the array is read where the heap pops k - 1 times,
#: and a new free time moves the smaller values one slot where the heap sifts log2(s) levels on
#: unpredictable branches (benchmarks/free_times_layout.py measures both; its numbers are in the CHANGELOG)
SORTED_FREE_MAX = 64


def _kernel(system, chunk, out, phase, following, heap_key, heap_id, state, tw, ts, te):
    policy, stragglers, params = kernel_params(system)
    kernels_module().run_chunk(
        chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"], system.phases, policy,
        stragglers, np.asarray(params, dtype=np.float64), system.barriers == 2, system.overhead == "event",
        system.revive_interval or 1.0, phase, following, heap_key, heap_id, state, out["start"], out["departure"],
        out["work"], out["useful"], out["completed"], tw, ts, te, system.servers <= SORTED_FREE_MAX)


def run(system, jobs, rng, saturated, trace, sink):
    """The central-queue kernel over the chunks of one replication, drawn, run and added to the statistics
    in a pipeline of three threads (:func:`~barrier_queues.schedulers.base.chunk_pipeline`; one thread with
    a trace)."""
    phase = rng.uniform(0.0, system.revive_interval) if system.overhead == "event" else 0.0
    heap_key, heap_id, state = np.zeros(system.servers), np.arange(system.servers, dtype=np.int64), np.zeros(1)
    empty = np.empty(0)
    size = chunk_jobs(system)
    scratch = {}                     # the draws' reused buffers (one thread draws at a time)
    kernel, frame = 0.0, None

    def draw(start_time, done):
        return draw_jobs(system, min(size, jobs - done), rng, start_time=start_time, saturated=saturated,
                         scratch=scratch)

    def step(chunk, following):
        nonlocal kernel, frame
        tw, ts, te = trace_arrays(trace, chunk["times"].size)
        out = job_outputs(chunk["arrival"].size)
        t0 = time.perf_counter()
        _kernel(system, chunk, out, phase, following["arrival"] if following is not None else empty,
                heap_key, heap_id, state, tw, ts, te)
        kernel += time.perf_counter() - t0
        if trace:
            frame = trace_frame(chunk, tw, ts, te)
        result = {"arrival": chunk["arrival"], "tasks": chunk["tasks"], "barrier": chunk["barrier"], **out}
        if "cls" in chunk:
            result["cls"] = chunk["cls"]
        return result

    chunk_pipeline(draw, step, sink.add, jobs, size, threads=not trace)
    return kernel, frame


def run_inputs(system, inputs: dict, phase: float = 0.0) -> dict:
    """The kernel on given inputs (one chunk, from an empty system): per-job arrays."""
    out = job_outputs(inputs["arrival"].size)
    tw, ts, te = trace_arrays(False, 0)
    _kernel(system, inputs, out, phase, np.empty(0), np.zeros(system.servers),
            np.arange(system.servers, dtype=np.int64), np.zeros(1), tw, ts, te)
    return out


# --------------------------------------------------------------------------------------------------
# the plain-Python reference

def simulate_reference(arrivals, tasks, barrier, times, servers: int, two_barrier: bool = False,
                       event_overhead: bool = False, revive: float = 1.0, phase: float = 0.0,
                       trace: bool = False, service_fn=None, **rule):
    """The central FIFO queue, job by job with a heap of ``(free time, worker)``.

    ``times`` holds the draws of job 0, then job 1, ... (``tasks[j] * phases``
    each). ``rule`` are the keyword arguments of
    :func:`barrier_queues.reference.service` (``needed`` applies to every
    job), or ``service_fn(draws, k)`` replaces it. Returns per-job lists
    ``start`` (of the job's last task), ``departure``, ``work`` (occupation
    of workers by its tasks), ``useful`` and ``completed``; with ``trace``
    also per-task ``worker``, ``start`` and ``end`` (one entry per task, in
    the order of the draws).
    """
    phases = rule.get("phases", 1)
    one_job = service_fn or (lambda draws, k: service(draws, k, **service_args(rule)))
    free = [(0.0, w) for w in range(servers)]
    heapq.heapify(free)
    last, offset, m = 0.0, 0, 0
    out = {"start": [], "departure": [], "work": [], "useful": [], "completed": []}
    tr = {"worker": [], "start": [], "end": []}
    arrivals = [float(a) for a in arrivals]
    for j, a in enumerate(arrivals):
        k = int(tasks[j])
        draws = [float(x) for x in times[offset:offset + k * phases]]
        offset += k * phases
        ready = max(a, last)
        if barrier[j]:
            taken = [heapq.heappop(free) for _ in range(k)]
            tau = taken[-1][0]
            start = ready
            if tau > ready:
                start = tau
                if event_overhead and k > 1:   # one freed executor's own offer carries a 1-task job
                    tick = phase + math.ceil((tau - phase) / revive) * revive
                    if tick < tau:
                        tick += revive
                    m = max(m, j + 1)          # the next arrival at or after tau (tau grows for blocked jobs)
                    while m < len(arrivals) and arrivals[m] < tau:
                        m += 1
                    start = min(tick, arrivals[m]) if m < len(arrivals) else tick
            cut, done, useful, occupied = one_job(draws, k)
            work = 0.0
            for (_, worker), busy in zip(taken, occupied, strict=True):
                work += busy
                heapq.heappush(free, (start + (cut if two_barrier else busy), worker))
                tr["worker"].append(worker)
                tr["start"].append(start)
                tr["end"].append(start + busy)
            departure = start + cut
        else:
            start, departure, work, done = ready, -math.inf, 0.0, k
            for x in draws:
                when, worker = heapq.heappop(free)
                start = max(start, when)
                heapq.heappush(free, (start + x, worker))
                work += x
                departure = max(departure, start + x)
                tr["worker"].append(worker)
                tr["start"].append(start)
                tr["end"].append(start + x)
            useful = work
        last = start
        for key, value in (("start", start), ("departure", departure), ("work", work), ("useful", useful),
                           ("completed", done)):
            out[key].append(value)
    return (out, tr) if trace else out


def reference(system, inputs: dict, phase: float = 0.0, trace: bool = False):
    """:func:`simulate_reference` for a system and its inputs (the arrays of ``draw_jobs``)."""
    return simulate_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                              system.servers, system.barriers == 2, system.overhead == "event",
                              system.revive_interval or 1.0, phase, trace=trace,
                              service_fn=reference_service(system), **reference_rule(system))


SCHEDULER = register(Scheduler(
    "central", "one FIFO queue: jobs start in arrival order, a barrier job when k workers are free (the paper)",
    run=run, run_inputs=run_inputs, reference=reference, kernel_include="schedulers/central.pxi"))

__all__ = ["SCHEDULER", "reference", "run", "run_inputs", "simulate_reference"]
