"""Compiled simulation kernels (numba). Private: use :mod:`barrier_queues.simulate`.

The kernels consume pre-drawn random inputs (arrival times, tasks per job,
barrier flags, task times and, for batch sampling, the probed workers) one
chunk at a time and keep the system's state in arrays between chunks. All
randomness is drawn by the caller with numpy Generators, so the plain-Python
reference (:mod:`barrier_queues.reference`), fed the same arrays, must give
identical results, bit for bit.

**One job's service** (:func:`job_service`, shared by both kernels; times
relative to the job's start ``S``). A job of ``k`` tasks and ``m`` phases
has ``k m`` draws stored phase-major (``times[o + p k + i]`` is task ``i``'s
phase ``p``). It returns the departure ``D``, the tasks completed ``L``,
the useful work and, per task, ``run[i]``: how long task ``i`` occupies its
worker.

* ``m = 1``, fixed release, ``l = k``: ``D = max x_i``, ``run = x``.
* ``m = 1``, fixed ``l < k``: ``D = x_(l)`` (stragglers killed at ``D``).
* ``m = 1``, timeout ``T``: ``D = min(x_(k), T)``; ``L`` tasks have ``x <= D``.
* ``m = 1``, knee (EXTENSIONS.md section 1): on the sorted times, after
  completion 1 ``arr = g_1, dev = g_1/2``; after completion ``i >= 2``
  ``dev <- 3/4 dev + 1/4 |arr - g_i|`` then ``arr <- (1-a) arr + a g_i``
  (``a`` = ``knee_gain``, 1/8); if ``g_{i+1} > tau_i = arr + 4 dev`` a knee
  is detected at ``t_(i) + tau_i`` and counts if ``i >= ceil(f k - 1e-12)``
  and ``t_(i) + tau_i >= w``; the first counted knee is ``D``, ``L = i``;
  else ``D = t_(k)``.
* In all four ``run[i] = min(x_i, D)`` and the useful work is the sum of the
  ``L`` smallest times, in increasing order.
* ``m > 1`` (EXTENSIONS.md section 3): phase 1 of every task ends at
  ``e_i = x_i0``; at each ``barrier()`` ``T = max e_i`` and task ``i`` resumes
  at ``T`` (ideal) or ``e_i + P (floor((T - e_i) / P) + 1)`` (Spark's
  polling, period ``P``), then ``e_i += x_ip``. ``D = max e_i``,
  ``run = e``, ``L = k``; the useful work is the sum of all draws in storage
  order.

**Central FIFO queue** (:func:`run_chunk`; MODEL.md section 2): a barrier job
starts at ``t = max(arrival, previous start, tau)`` with ``tau`` the time at
which k workers are free (the k-th smallest free time); its workers are free
at ``t + run[i]`` (1 barrier) or ``t + D`` (2 barriers). A non-barrier job's
tasks in turn take the earliest free worker. With the event-accurate Spark
overhead a barrier job of k > 1 tasks that had to wait for workers starts at
the first global offer at or after ``tau`` (revive tick ``phase + n R`` or
job arrival); a 1-task job starts at ``tau``.

**Batch sampling with late binding** (:func:`run_sampling`; EXTENSIONS.md
section 2): every worker has a FIFO queue of reservations; an arriving job
appends one to each of its probed workers. An idle worker takes the head of
its queue: a reservation of a started (or, non-barrier, fully handed-out)
job is discarded; otherwise the worker becomes ready for that job: a
non-barrier job hands it a task at once, a barrier job makes it hold until k
workers are ready, then all k tasks start (task ``i`` on the ``i``-th worker
to become ready). Events at one instant: worker frees (in worker order)
before arrivals; arriving jobs' idle probed workers look in worker order.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

FIXED, KNEE, TIMEOUT = 0, 1, 2
#: jobs of at most this many tasks are sorted by insertion (same order, hence the same sums, as a full sort)
INSERTION_MAX = 32
IDLE, BUSY, HOLDING = 0, 1, 2


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
def knee_release(t, k, min_fraction, min_wait, gain):
    """Knee-detector release on sorted completion times ``t[:k]``: returns (D, L)."""
    if k == 1:
        return t[0], 1
    i_min = math.ceil(min_fraction * k - 1e-12)
    arr = t[0]
    dev = t[0] / 2.0
    for i in range(1, k):                 # i tasks have completed
        if i >= 2:
            g = t[i - 1] - t[i - 2]
            dev = 0.75 * dev + 0.25 * abs(arr - g)
            arr = (1.0 - gain) * arr + gain * g
        tau = arr + 4.0 * dev
        if t[i] - t[i - 1] > tau:
            when = t[i - 1] + tau
            if i >= i_min and when >= min_wait:
                return when, i
    return t[k - 1], k


@njit(cache=True)
def job_service(times, o, k, m, policy, stragglers, min_fraction, min_wait, gain, timeout,
                spark_sync, poll, run, scratch):
    """One job's departure ``D``, tasks completed ``L`` and useful work; fills ``run[:k]``.

    See the module docstring for the rules; ``scratch`` has room for k values.
    """
    if m > 1:
        for i in range(k):
            run[i] = times[o + i]
        for p in range(1, m):
            barrier = run[0]
            for i in range(1, k):
                if run[i] > barrier:
                    barrier = run[i]
            for i in range(k):
                if spark_sync:
                    a = run[i]
                    resume = a + poll * (math.floor((barrier - a) / poll) + 1)
                else:
                    resume = barrier
                run[i] = resume + times[o + p * k + i]
        d = run[0]
        for i in range(1, k):
            if run[i] > d:
                d = run[i]
        useful = 0.0
        for j in range(k * m):
            useful += times[o + j]
        return d, k, useful
    if policy == FIXED and stragglers == 0:
        d = times[o]
        useful = times[o]
        run[0] = times[o]
        for i in range(1, k):
            x = times[o + i]
            run[i] = x
            useful += x
            if x > d:
                d = x
        return d, k, useful
    if k <= INSERTION_MAX:                # small k: insertion sort beats numba's general sort by about 2x
        for i in range(k):
            x = times[o + i]
            j = i
            while j > 0 and scratch[j - 1] > x:
                scratch[j] = scratch[j - 1]
                j -= 1
            scratch[j] = x
    else:
        for i in range(k):
            scratch[i] = times[o + i]
        scratch[:k].sort()
    if policy == FIXED:
        completed = k - stragglers
        d = scratch[completed - 1]
    elif policy == TIMEOUT:
        if scratch[k - 1] <= timeout:
            d = scratch[k - 1]
            completed = k
        else:
            d = timeout
            completed = 0
            while completed < k and scratch[completed] <= timeout:
                completed += 1
    else:
        d, completed = knee_release(scratch, k, min_fraction, min_wait, gain)
    useful = 0.0
    for i in range(completed):
        useful += scratch[i]
    for i in range(k):
        x = times[o + i]
        run[i] = x if x < d else d
    return d, completed, useful


@njit(cache=True, nogil=True)
def run_chunk(arrivals, tasks, barrier, times, offsets, phases, policy, stragglers, params,
              two_barrier, event_overhead, revive, phase, next_arrivals, heap_key, heap_id, state,
              out_start, out_departure, out_work, out_useful, out_completed,
              trace_worker, trace_start, trace_end):
    """Simulate one chunk of jobs under the central FIFO queue (module docstring).

    ``params`` = (min_fraction, min_wait, knee_gain, timeout, spark_sync, poll);
    ``state[0]`` is the start of the previous job's last task. The trace
    arrays have length ``times.size`` (per draw; the first ``k`` of a job's
    draws hold its tasks) or 0.
    """
    s = heap_key.size
    kmax = 1
    for j in range(tasks.size):
        if tasks[j] > kmax:
            kmax = tasks[j]
    tmp_id = np.empty(kmax, dtype=np.int64)
    run = np.empty(kmax)
    scratch = np.empty(kmax)
    min_fraction, min_wait, gain, timeout = params[0], params[1], params[2], params[3]
    spark_sync = params[4] > 0.5
    poll = params[5]
    last = state[0]
    do_trace = trace_worker.size > 0
    ptr = 0
    for j in range(arrivals.size):
        a = arrivals[j]
        k = tasks[j]
        o = offsets[j]
        ready = a if a > last else last
        work = 0.0
        if barrier[j]:
            n = s
            for i in range(k - 1):        # the k - 1 earliest-free workers leave the heap ...
                tmp_id[i] = heap_id[0]
                n -= 1
                heap_key[0] = heap_key[n]
                heap_id[0] = heap_id[n]
                _sift_down(heap_key, heap_id, n, 0)
            tau = heap_key[0]             # ... the k-th stays at the root: its new free time replaces it below
            tmp_id[k - 1] = heap_id[0]
            t = ready
            if tau > ready:
                t = tau
                if event_overhead and k > 1:   # one freed executor's own offer carries a 1-task job
                    if ptr < j + 1:
                        ptr = j + 1
                    t, ptr = next_offer(tau, revive, phase, arrivals, next_arrivals, ptr)
            d, completed, useful = job_service(times, o, k, phases, policy, stragglers, min_fraction, min_wait,
                                               gain, timeout, spark_sync, poll, run, scratch)
            for i in range(k):
                work += run[i]
                free = t + (d if two_barrier else run[i])
                if i == 0:                # new free times are >= tau: replace the root and sift it down
                    heap_key[0] = free
                    heap_id[0] = tmp_id[k - 1]
                    _sift_down(heap_key, heap_id, n, 0)
                else:
                    heap_key[n] = free
                    heap_id[n] = tmp_id[i - 1]
                    _sift_up(heap_key, heap_id, n)
                    n += 1
                worker = tmp_id[k - 1] if i == 0 else tmp_id[i - 1]
                if do_trace:
                    trace_worker[o + i] = worker
                    trace_start[o + i] = t
                    trace_end[o + i] = t + run[i]
            start = t
            departure = t + d
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
            completed = k
        last = start
        out_start[j] = start
        out_departure[j] = departure
        out_work[j] = work
        out_useful[j] = useful
        out_completed[j] = completed
    state[0] = last


# ---------------------------------------------------------------------------------------------
# batch sampling with late binding

# istate slots
I_NEXT_JOB, I_FIRST_PENDING, I_TASK_TAIL, I_HEAP_N, I_CHUNK_POS, I_STATUS = 0, 1, 2, 3, 4, 5
STATUS_DONE, STATUS_NEED_INPUT, STATUS_QUEUE_FULL = 0, 1, 2


@njit(cache=True)
def _ev_less(t1, w1, t2, w2):
    return t1 < t2 or (t1 == t2 and w1 < w2)


@njit(cache=True)
def _ev_push(ev_time, ev_worker, n, t, w):
    pos = n
    while pos > 0:
        parent = (pos - 1) >> 1
        if _ev_less(t, w, ev_time[parent], ev_worker[parent]):
            ev_time[pos] = ev_time[parent]
            ev_worker[pos] = ev_worker[parent]
            pos = parent
        else:
            break
    ev_time[pos] = t
    ev_worker[pos] = w
    return n + 1


@njit(cache=True)
def _ev_pop(ev_time, ev_worker, n):
    n -= 1
    t0 = ev_time[n]
    w0 = ev_worker[n]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and _ev_less(ev_time[child + 1], ev_worker[child + 1], ev_time[child], ev_worker[child]):
            child += 1
        if _ev_less(ev_time[child], ev_worker[child], t0, w0):
            ev_time[pos] = ev_time[child]
            ev_worker[pos] = ev_worker[child]
            pos = child
        else:
            break
    if n > 0:
        ev_time[pos] = t0
        ev_worker[pos] = w0
    return n


@njit(cache=True, nogil=True)
def run_sampling(arrivals, tasks, barrier, times, offsets, probes, probe_offsets, next_first_arrival, base,
                 phases, policy, stragglers, params, two_barrier,
                 jr_id, jr_arrival, jr_k, jr_barrier, jr_toff, jr_count, jr_done, jr_start, jr_dep,
                 jr_work, jr_useful, jr_completed, jr_held, jr_head, jr_tail, task_ring,
                 w_state, w_next, w_ready, q_buf, q_head, q_tail, ev_time, ev_worker, istate,
                 trace_worker, trace_start, trace_end):
    """Advance a batch-sampling system through one chunk of arrivals (module docstring).

    Jobs have global ids ``base + j``; the job ring (``jr_*``, capacity a
    power of two) holds every job that arrived and whose results were not
    yet collected, the task ring their draws. Each call processes arrivals
    from ``istate[I_CHUNK_POS]`` on and every worker-free event up to
    ``next_first_arrival`` (the next chunk's first arrival; ``inf`` drains
    the system), then returns with ``istate[I_STATUS]``:
    ``STATUS_NEED_INPUT`` (chunk done), ``STATUS_DONE`` (drained) or
    ``STATUS_QUEUE_FULL`` (a reservation queue is full: grow ``q_buf`` and
    call again; nothing was lost). ``istate[I_FIRST_PENDING]`` is the first
    job not yet started: every job before it has final results in the ring.
    """
    jmask = jr_id.size - 1
    tmask = task_ring.size - 1
    qcap = q_buf.shape[1]
    qmask = qcap - 1
    kmax = 1
    for j in range(tasks.size):
        if tasks[j] * phases > kmax:
            kmax = tasks[j] * phases
    for g in range(istate[I_FIRST_PENDING], istate[I_NEXT_JOB]):
        kk = jr_k[g & jmask] * phases
        if kk > kmax:
            kmax = kk
    run = np.empty(kmax)
    scratch = np.empty(kmax)
    draws = np.empty(kmax)
    min_fraction, min_wait, gain, timeout = params[0], params[1], params[2], params[3]
    spark_sync = params[4] > 0.5
    poll = params[5]
    do_trace = trace_worker.size > 0
    n_ev = istate[I_HEAP_N]
    pos = istate[I_CHUNK_POS]
    n = arrivals.size
    while True:
        next_arrival = arrivals[pos] if pos < n else next_first_arrival
        if n_ev > 0 and ev_time[0] <= next_arrival:
            # a worker frees (completions before arrivals at one instant; ties by worker index)
            now = ev_time[0]
            w = ev_worker[0]
            n_ev = _ev_pop(ev_time, ev_worker, n_ev)
            w_state[w] = IDLE
            n_ev = _look(w, now, w_state, w_next, w_ready, q_buf, q_head, q_tail, qmask, jmask, tmask,
                         jr_id, jr_k, jr_barrier, jr_toff, jr_count, jr_done, jr_start, jr_dep, jr_work,
                         jr_useful, jr_completed, jr_held, jr_head, jr_tail, task_ring, ev_time, ev_worker, n_ev,
                         phases, policy, stragglers, min_fraction, min_wait, gain, timeout, spark_sync, poll,
                         two_barrier, run, scratch, draws, do_trace, trace_worker, trace_start, trace_end,
                         base, offsets)
        elif pos < n:
            now = arrivals[pos]
            k = tasks[pos]
            po, pe = probe_offsets[pos], probe_offsets[pos + 1]
            full = False
            for q in range(po, pe):
                if q_tail[probes[q]] - q_head[probes[q]] >= qcap:
                    full = True
            if full:
                istate[I_STATUS] = STATUS_QUEUE_FULL
                break
            g = base + pos
            slot = g & jmask
            jr_id[slot] = g
            jr_arrival[slot] = now
            jr_k[slot] = k
            jr_barrier[slot] = barrier[pos]
            tail = istate[I_TASK_TAIL]
            jr_toff[slot] = tail
            for i in range(k * phases):
                task_ring[(tail + i) & tmask] = times[offsets[pos] + i]
            istate[I_TASK_TAIL] = tail + k * phases
            jr_count[slot] = 0
            jr_done[slot] = False
            jr_head[slot] = -1
            jr_tail[slot] = -1
            jr_held[slot] = 0.0
            jr_work[slot] = 0.0
            jr_useful[slot] = 0.0
            jr_dep[slot] = -np.inf
            for q in range(po, pe):
                w = probes[q]
                q_buf[w, q_tail[w] & qmask] = g
                q_tail[w] += 1
            istate[I_NEXT_JOB] = g + 1
            pos += 1
            for q in range(po, pe):            # idle probed workers look, in increasing worker index
                w = probes[q]
                if w_state[w] == IDLE:
                    n_ev = _look(w, now, w_state, w_next, w_ready, q_buf, q_head, q_tail, qmask, jmask, tmask,
                                 jr_id, jr_k, jr_barrier, jr_toff, jr_count, jr_done, jr_start, jr_dep, jr_work,
                                 jr_useful, jr_completed, jr_held, jr_head, jr_tail, task_ring, ev_time, ev_worker,
                                 n_ev, phases, policy, stragglers, min_fraction, min_wait, gain, timeout,
                                 spark_sync, poll, two_barrier, run, scratch, draws, do_trace, trace_worker,
                                 trace_start, trace_end, base, offsets)
        else:
            istate[I_STATUS] = STATUS_DONE if next_first_arrival == np.inf else STATUS_NEED_INPUT
            break
        g = istate[I_FIRST_PENDING]
        while g < istate[I_NEXT_JOB] and jr_id[g & jmask] == g and jr_done[g & jmask]:
            g += 1
        istate[I_FIRST_PENDING] = g
    istate[I_HEAP_N] = n_ev
    istate[I_CHUNK_POS] = pos


@njit(cache=True)
def _look(w, now, w_state, w_next, w_ready, q_buf, q_head, q_tail, qmask, jmask, tmask,
          jr_id, jr_k, jr_barrier, jr_toff, jr_count, jr_done, jr_start, jr_dep, jr_work,
          jr_useful, jr_completed, jr_held, jr_head, jr_tail, task_ring, ev_time, ev_worker, n_ev,
          phases, policy, stragglers, min_fraction, min_wait, gain, timeout, spark_sync, poll,
          two_barrier, run, scratch, draws, do_trace, trace_worker, trace_start, trace_end, base, offsets):
    """Idle worker ``w`` takes reservations from its queue's head (late binding); returns the heap size."""
    while q_head[w] < q_tail[w]:
        g = q_buf[w, q_head[w] & qmask]
        q_head[w] += 1
        slot = g & jmask
        if jr_id[slot] != g or jr_done[slot]:
            continue                       # the job started (or handed out every task): cancelled
        k = jr_k[slot]
        toff = jr_toff[slot]
        if jr_barrier[slot]:
            w_state[w] = HOLDING
            w_ready[w] = now
            w_next[w] = -1
            if jr_tail[slot] < 0:
                jr_head[slot] = w
            else:
                w_next[jr_tail[slot]] = w
            jr_tail[slot] = w
            jr_count[slot] += 1
            if jr_count[slot] == k:        # k ready workers: all tasks start now
                for i in range(k * phases):
                    draws[i] = task_ring[(toff + i) & tmask]
                d, completed, useful = job_service(draws, 0, k, phases, policy, stragglers, min_fraction,
                                                   min_wait, gain, timeout, spark_sync, poll, run, scratch)
                held = 0.0
                work = 0.0
                v = jr_head[slot]
                for i in range(k):
                    held += now - w_ready[v]
                    work += run[i]
                    w_state[v] = BUSY
                    n_ev = _ev_push(ev_time, ev_worker, n_ev, now + (d if two_barrier else run[i]), v)
                    if do_trace:
                        t = offsets[g - base] + i
                        trace_worker[t] = v
                        trace_start[t] = now
                        trace_end[t] = now + run[i]
                    v = w_next[v]
                jr_start[slot] = now
                jr_dep[slot] = now + d
                jr_work[slot] = work
                jr_useful[slot] = useful
                jr_completed[slot] = completed
                jr_held[slot] = held
                jr_done[slot] = True
            return n_ev
        # non-barrier job: one task for this worker, at once
        i = jr_count[slot]
        x = task_ring[(toff + i) & tmask]
        w_state[w] = BUSY
        n_ev = _ev_push(ev_time, ev_worker, n_ev, now + x, w)
        if do_trace:
            t = offsets[g - base] + i
            trace_worker[t] = w
            trace_start[t] = now
            trace_end[t] = now + x
        jr_work[slot] += x
        jr_useful[slot] += x
        if now + x > jr_dep[slot]:
            jr_dep[slot] = now + x
        jr_count[slot] = i + 1
        if i + 1 == k:
            jr_start[slot] = now
            jr_completed[slot] = k
            jr_done[slot] = True
        return n_ev
    return n_ev


