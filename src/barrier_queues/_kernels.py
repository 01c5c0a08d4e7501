"""Compiled simulation kernel (numba). Private: use :mod:`barrier_queues.simulate`.

The kernel consumes pre-drawn random inputs (arrival times, tasks per job,
barrier flags, task times) one chunk at a time and writes per-job results into
preallocated arrays, keeping the workers' state (a binary min-heap of the
times at which each worker becomes free) between chunks. All randomness is
drawn by the caller with a numpy Generator, so a plain-Python reference fed
the same arrays must give identical results (:mod:`barrier_queues.reference`).

Scheduling rules (MODEL.md section 2; one FIFO queue, no overtaking):

* barrier job: starts at ``t = max(arrival, previous start, tau)`` where
  ``tau`` is the time at which k workers are free (the k-th smallest free
  time); it departs at ``t + X_(l:k)``. A 1-barrier worker is free at
  ``t + min(x_i, X_(l:k))`` (stragglers killed at departure); a 2-barrier
  worker at ``t + X_(l:k)``.
* non-barrier job (hybrid systems): each task in turn takes the earliest free
  worker, starting at ``max(arrival, previous task start, free time)``.
* event-accurate Spark overhead: a barrier job of k > 1 tasks that had to
  wait for workers (``tau > max(arrival, previous start)``) starts at the
  first global offer at or after ``tau``: the next revive-timer tick
  ``phase + n R`` or the next job arrival, whichever comes first. A 1-task
  job starts at ``tau``: the offer of the executor that just freed carries it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _sift_down(key, ids, n, pos):
    k0 = key[pos]
    i0 = ids[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and key[child + 1] < key[child]:
            child += 1
        if key[child] < k0:
            key[pos] = key[child]
            ids[pos] = ids[child]
            pos = child
        else:
            break
    key[pos] = k0
    ids[pos] = i0


@njit(cache=True)
def _sift_up(key, ids, pos):
    k0 = key[pos]
    i0 = ids[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if k0 < key[parent]:
            key[pos] = key[parent]
            ids[pos] = ids[parent]
            pos = parent
        else:
            break
    key[pos] = k0
    ids[pos] = i0


@njit(cache=True)
def next_offer(tau, revive, phase, arrivals, extra, ptr):
    """First global offer at or after ``tau``: a revive tick or a job arrival.

    ``arrivals`` then ``extra`` (the next chunk's arrivals) are searched from
    index ``ptr`` on; returns (offer time, new ptr).
    """
    tick = phase + math.ceil((tau - phase) / revive) * revive
    if tick < tau:
        tick += revive
    n1 = arrivals.size
    total = n1 + extra.size
    p = ptr
    while p < total:
        a = arrivals[p] if p < n1 else extra[p - n1]
        if a >= tau:
            break
        p += 1
    nxt = np.inf
    if p < total:
        nxt = arrivals[p] if p < n1 else extra[p - n1]
    return min(tick, nxt), p


@njit(cache=True)
def run_chunk(arrivals, tasks, barrier, times, offsets, stragglers, two_barrier,
              event_overhead, revive, phase, next_arrivals, heap_key, heap_id, state,
              out_start, out_departure, out_work, out_useful,
              trace_worker, trace_start, trace_end):
    """Simulate one chunk of jobs; see the module docstring for the rules.

    ``stragglers`` = k - l (0 for conventional jobs); ``state[0]`` is the
    start time of the previous job's last task. The trace arrays have length
    ``times.size`` to record per-task worker, start and end, or length 0.
    """
    s = heap_key.size
    tmp_key = np.empty(s)
    tmp_id = np.empty(s, dtype=np.int64)
    sorted_x = np.empty(s)
    last = state[0]
    do_trace = trace_worker.size > 0
    ptr = 0
    for j in range(arrivals.size):
        a = arrivals[j]
        k = tasks[j]
        o = offsets[j]
        ready = a if a > last else last
        work = 0.0
        useful = 0.0
        if barrier[j]:
            n = s
            for i in range(k):            # the k earliest-free workers
                tmp_key[i] = heap_key[0]
                tmp_id[i] = heap_id[0]
                n -= 1
                heap_key[0] = heap_key[n]
                heap_id[0] = heap_id[n]
                _sift_down(heap_key, heap_id, n, 0)
            tau = tmp_key[k - 1]
            t = ready
            if tau > ready:
                t = tau
                if event_overhead and k > 1:   # one freed executor's own offer carries a 1-task job
                    if ptr < j + 1:
                        ptr = j + 1
                    t, ptr = next_offer(tau, revive, phase, arrivals, next_arrivals, ptr)
            l_ = k - stragglers
            if stragglers == 0:
                xl = times[o]
                for i in range(1, k):
                    if times[o + i] > xl:
                        xl = times[o + i]
            else:
                for i in range(k):
                    sorted_x[i] = times[o + i]
                sorted_x[:k].sort()
                xl = sorted_x[l_ - 1]
                for i in range(l_):
                    useful += sorted_x[i]
            for i in range(k):
                x = times[o + i]
                run = x if x < xl else xl
                work += run
                free = t + (xl if two_barrier else run)
                heap_key[n] = free
                heap_id[n] = tmp_id[i]
                _sift_up(heap_key, heap_id, n)
                n += 1
                if do_trace:
                    trace_worker[o + i] = tmp_id[i]
                    trace_start[o + i] = t
                    trace_end[o + i] = t + run
            if stragglers == 0:
                useful = work
            start = t
            departure = t + xl
        else:
            start = ready
            departure = -np.inf
            for i in range(k):            # tasks start one by one, FIFO
                if heap_key[0] > start:
                    start = heap_key[0]
                x = times[o + i]
                end = start + x
                worker = heap_id[0]
                heap_key[0] = end         # replace the root, then restore the heap
                _sift_down(heap_key, heap_id, s, 0)
                work += x
                if end > departure:
                    departure = end
                if do_trace:
                    trace_worker[o + i] = worker
                    trace_start[o + i] = start
                    trace_end[o + i] = end
            useful = work
        last = start
        out_start[j] = start
        out_departure[j] = departure
        out_work[j] = work
        out_useful[j] = useful
    state[0] = last
